"""quantization_debug: where a quantized model loses accuracy, node by node, against its float model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ortflow.api import ArtifactKind, Port, SettingsStage, StageContext, StageResult
from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import localization, pre_processing, sanity, static_model


@dataclass(frozen=True)
class DebugSettings:
    """QuantizationDebug's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    samples: int = 4
    top: int = 20
    pre_process: bool | str = False  # "auto", True or False
    min_cosine: float = 0.5


class QuantizationDebug(SettingsStage[DebugSettings]):
    type = "quantization_debug"
    version = "2"  # 2: pre_process (rank the nodes of the graph the quantizer was given)
    description = (
        "Run a float model and its quantized version on the same samples, compare every activation both have "
        "(ORT's qdq_loss_debug building blocks) and rank the float model's nodes by how much the SQNR drops "
        "across each: the nodes to keep in float first. Also judges every output as the quantize stages' "
        "sanity check does. The node names are the ones nodes_to_exclude takes when `reference` is the graph "
        "the quantizer was given: give `pre_process` quantize_static's value, so the reference is pre-processed "
        "(and its unnamed nodes named) as quantize_static does before its quantizer sees it (ORT's "
        "pre-processing rewrites a graph: a HardSwish becomes HardSigmoid and Mul)."
    )
    inputs = (
        Port("reference", ArtifactKind.ONNX_MODEL, "the float model that was quantized"),
        Port("model", ArtifactKind.ONNX_MODEL, "the quantized model (QDQ, QOperator or dynamic)"),
        Port("data", ArtifactKind.DATASET, "samples to run both on"),
    )
    outputs = (
        Port(
            "report",
            ArtifactKind.METRICS,
            "nodes ranked by SQNR drop, outputs judged",
            filename="debug.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 4,
                "description": "samples to run (every activation of each is kept in memory)",
            },
            "top": {
                "type": "integer",
                "minimum": 1,
                "default": 20,
                "description": "nodes listed in the report",
            },
            "pre_process": {
                "enum": ["auto", True, False],
                "default": False,
                "description": "pre-process the reference as quantize_static does (its `pre_process`: "
                "auto, true) before comparing; false (the default, and for quantize_dynamic, which never "
                "pre-processes): compare the reference as given",
            },
            "min_cosine": {
                "type": "number",
                "minimum": -1,
                "maximum": 1,
                "default": 0.5,
                "description": "the agreement below which an output is called collapsed",
            },
        },
    }

    settings = DebugSettings

    def facts(self, settings: DebugSettings) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "numpy", "isa")  # integer kernels differ by instruction set

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.settings(DebugSettings)
        reference = _as_quantized(
            onnx_model.private_model(ctx.path("reference"), ctx.scratch / "reference"),
            params.pre_process,
        )
        quantized = onnx_model.private_model(ctx.path("model"), ctx.scratch / "quantized")
        feeds, _ = sanity.feeds_for(ctx, reference, params.samples)
        ranked = localization.rank_nodes(reference, quantized, feeds)
        outputs = sanity.check_outputs(
            reference, quantized, feeds, params.min_cosine, synthetic=False
        )
        report = {
            "samples": len(feeds),
            "nodes": [e.as_dict() for e in ranked[: params.top]],
            "nodes_compared": len(ranked),
            "outputs": outputs.metrics()["outputs"],
        }
        ctx.output_path("report").write_text(json.dumps(report, indent=2), encoding="utf-8")
        failures = outputs.failures
        summary = f"where error enters: {localization.culprits_text(ranked)}"
        summary += f"; collapsed: {'; '.join(failures[:2])}" if failures else ""
        worst = {f"sqnr_drop_db_{i + 1}": round(e.jump_db, 2) for i, e in enumerate(ranked[:3])}
        return StageResult(
            summary=summary, metrics={"culprits": [e.node for e in ranked[:5]], **worst}
        )


def _as_quantized(reference: Path, setting: bool | str) -> Path:
    """The graph quantize_static hands ORT's quantizer for `pre_process: setting`: pre-processed (auto: unless
    ORT cannot follow the model, as there) and its unnamed nodes named, so the ranking names its nodes."""
    if setting is False:
        return reference
    prepared = pre_processing.prepare(reference, reference.parent, setting).model
    model = onnx_model.load_graph(prepared, external_data=True)
    return (
        onnx_model.save(model, prepared.parent / "named.onnx")
        if static_model.name_nodes(model)
        else prepared
    )
