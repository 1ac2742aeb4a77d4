"""export: a PyTorch model (a local Hugging Face folder, or a function in a Python file) to ONNX, verified
against PyTorch's own outputs on the example inputs."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ortflow.api import (
    ArtifactKind,
    GateFailed,
    Port,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    counted,
)
from ortflow.api import onnx as onnx_model
from ortflow.stages.sources.torch_export import (
    Exportable,
    from_function,
    from_hf_folder,
    missing_torch,
)


class Exporter(enum.Enum):
    DYNAMO = "dynamo"  # torch.onnx's default since PyTorch 2.9: torch.export, then onnxscript
    TORCHSCRIPT = "torchscript"  # the tracing exporter, for models torch.export cannot capture


@dataclass(frozen=True)
class ExportSettings:
    """Export's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    exporter: str = "dynamo"  # an Exporter's value
    fallback: bool = True
    opset: int = 18
    tolerance: float = 1e-3
    outputs: tuple[str, ...] = ("last_hidden_state",)
    texts: tuple[str, ...] = (
        "ortflow exports this sentence.",
        "A second, longer sentence, so that the batch needs padding.",
    )
    function: str = "model"
    input_names: tuple[str, ...] = ()
    output_names: tuple[str, ...] = ()
    dynamic_axes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


class Export(SettingsStage[ExportSettings]):
    type = "export"
    # 2: Hugging Face folders load with eager attention (fusable into Attention); 3: no source paths in the model
    version = "3"
    description = (
        "Export a PyTorch model to ONNX: a local Hugging Face model folder (config.json, safetensors, tokenizer; "
        "no hub; loaded with eager attention, which transformer_fusion fuses) or a Python file whose `function` "
        "returns (model, example inputs). Named dynamic axes, the opset "
        "and the exporter (torch.onnx's dynamo exporter, TorchScript as fallback) are parameters. The exported "
        "model is run in ONNX Runtime on the example inputs and compared with PyTorch's outputs: above "
        "`tolerance` (max abs error) the stage fails. The exporters' per-node stack traces (paths of this "
        "machine's files) are taken out, so the model's bytes do not depend on where it was exported. "
        'Needs `pip install "ortflow[torch]"`.'
    )
    inputs = (
        Port(
            "source",
            ArtifactKind.FILE,
            "a Hugging Face model folder, or a .py file defining `function`",
        ),
    )
    outputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the exported model", filename="model.onnx"),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "exporter, opset, inputs, outputs, dynamic axes and the max abs error "
            "against PyTorch per output",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "exporter": {
                "enum": [e.value for e in Exporter],
                "default": "dynamo",
                "description": "dynamo (torch.export + onnxscript) or torchscript (tracing)",
            },
            "fallback": {
                "type": "boolean",
                "default": True,
                "description": "when the dynamo exporter fails, try the TorchScript one (the metrics say which made the model)",
            },
            "opset": {
                "type": "integer",
                "minimum": 13,
                "maximum": 23,
                "default": 18,
                "description": "ONNX opset",
            },
            "tolerance": {
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 1e-3,
                "description": "largest max abs error against PyTorch's outputs on the examples",
            },
            "outputs": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "default": ["last_hidden_state"],
                "description": "Hugging Face folder: the model output's fields to export, e.g. [last_hidden_state, pooler_output]",
            },
            "texts": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 2,
                "default": [
                    "ortflow exports this sentence.",
                    "A second, longer sentence, so that the batch needs padding.",
                ],
                "description": "Hugging Face folder: the example batch (two or more, so batch and sequence stay dynamic)",
            },
            "function": {
                "type": "string",
                "default": "model",
                "description": "Python file: the function returning (model, example inputs: a dict of named tensors or a tuple)",
            },
            "input_names": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Python file: input names (default: the example dict's keys, else input_0, ...)",
            },
            "output_names": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Python file: output names (default: output, or output_0, ...)",
            },
            "dynamic_axes": {
                "type": "object",
                "default": {},
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                },
                "description": "Python file: per input or output, {axis: name}, e.g. {x: {0: batch, 2: height}}; "
                "default: axis 0 of each is 'batch'",
            },
        },
    }

    settings = ExportSettings

    def problems(self, settings: ExportSettings) -> list[str]:
        missing = missing_torch()
        return [missing] if missing else []

    def facts(self, settings: ExportSettings) -> tuple[str, ...]:
        return ("torch", "transformers", "onnxscript", "onnx", "onnxruntime")

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.settings(ExportSettings)
        source = ctx.path("source")
        if source.is_dir():
            exportable = from_hf_folder(source, list(params.texts), list(params.outputs))
        elif source.suffix == ".py":
            exportable = from_function(
                source,
                params.function,
                list(params.input_names),
                list(params.output_names),
                {name: dict(axes) for name, axes in params.dynamic_axes.items()},
            )
        else:
            raise StageError(
                f"{source.name}: give a Hugging Face model folder or a .py file defining `{params.function}`"
            )
        target = ctx.output_path("model")
        used, fallback_reason = self._export(exportable, target, params, ctx)
        _without_source_paths(target)
        onnx_model.cap_ir_version(target)
        onnx_model.check(target)
        errors = _max_abs_errors(exportable, target)
        metrics = {
            "exporter": used.value,
            "fallback_reason": fallback_reason,
            "opset": params.opset,
            "inputs": exportable.input_names,
            "outputs": exportable.output_names,
            "dynamic_axes": {
                k: {str(a): n for a, n in v.items()} for k, v in exportable.dynamic_axes.items()
            },
            "max_abs_error": errors,
            "tolerance": params.tolerance,
            "ops": dict(sorted(onnx_model.op_counts(target).items())),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        worst = max(errors.values())
        summary = (
            f"{used.value} exporter, opset {params.opset}: {counted(len(exportable.input_names), 'input')}, "
            f"outputs {', '.join(exportable.output_names)}; max abs error vs PyTorch {worst:.2e}"
        )
        if worst > params.tolerance:
            raise GateFailed(
                f"the exported model differs from PyTorch: max abs error {worst:.3g} > tolerance {params.tolerance} "
                f"({', '.join(f'{k} {v:.3g}' for k, v in errors.items())}) — try exporter: "
                f"{'torchscript' if used == Exporter.DYNAMO else 'dynamo'}, another opset, or raise `tolerance`"
            )
        return StageResult(
            summary=summary, metrics={"max_abs_error": worst, "exporter": used.value}
        )

    @staticmethod
    def _export(
        exportable: Exportable, target: Path, params: ExportSettings, ctx: StageContext
    ) -> tuple[Exporter, str | None]:
        chosen = Exporter(params.exporter)
        try:
            _torch_export(exportable, target, params.opset, chosen)
        except Exception as exc:  # noqa: BLE001 - boundary: user code (the model's forward under torch.export); fall back or say why
            if chosen != Exporter.DYNAMO or not params.fallback:
                raise StageError(
                    f"torch.onnx.export ({chosen.value}) failed: {type(exc).__name__}: {str(exc)[:400]}"
                ) from exc
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            ctx.log(
                f"{ctx.stage_name}: the dynamo exporter failed ({reason}); trying the TorchScript exporter"
            )
        else:
            return chosen, None
        target.unlink(missing_ok=True)
        _torch_export(exportable, target, params.opset, Exporter.TORCHSCRIPT)
        return Exporter.TORCHSCRIPT, reason


def _dynamic_shapes(exportable: Exportable) -> tuple[dict[int, Any] | None, ...] | None:
    """The inputs' named dynamic axes as torch.export Dims (one Dim per name, shared across inputs), which the
    dynamo exporter takes in place of `dynamic_axes`; None when a name is no Python identifier (Dim needs one)."""
    import torch

    names = {name for axes in exportable.dynamic_axes.values() for name in axes.values()}
    if not all(name.isidentifier() for name in names):
        return None
    dims = {name: torch.export.Dim(name) for name in sorted(names)}
    return tuple(
        {axis: dims[name] for axis, name in exportable.dynamic_axes.get(n, {}).items()} or None
        for n in exportable.input_names
    )


def _torch_export(exportable: Exportable, target: Path, opset: int, exporter: Exporter) -> None:
    import torch

    # with the dynamo exporter, named dimensions where it can (names carry through to the outputs' axes),
    # else the axes by position (None is each argument's default: as if not given)
    shapes = _dynamic_shapes(exportable) if exporter == Exporter.DYNAMO else None
    with torch.no_grad():
        torch.onnx.export(
            exportable.module,
            exportable.examples,
            str(target),
            input_names=exportable.input_names,
            output_names=exportable.output_names,
            opset_version=opset,
            dynamo=exporter == Exporter.DYNAMO,
            external_data=False,
            dynamic_axes=exportable.dynamic_axes if shapes is None else None,
            dynamic_shapes=shapes,
        )
    if not target.is_file():
        raise StageError(f"torch.onnx.export ({exporter.value}) wrote no model to {target.name}")


# Where each node came from, as the exporters write it: a Python stack trace naming the files of the model's
# code, of transformers and of this package, so the same model exported from another checkout, virtual
# environment or machine had other bytes (and another digest in the lock). ORT never reads either.
_STACK_TRACE = "pkg.torch.onnx.stack_trace"  # the dynamo exporter's, per node


def _without_source_paths(target: Path) -> None:
    """The exported model without the per-node stack traces (dynamo's metadata, TorchScript's doc strings),
    so that its bytes depend on the model and the library versions, not on where they are installed."""
    import onnx

    model = onnx.load_model(str(target))
    graphs = [model.graph, *(f for f in model.functions)]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            node.doc_string = ""
            kept = [p for p in node.metadata_props if p.key != _STACK_TRACE]
            del node.metadata_props[:]
            node.metadata_props.extend(kept)
            graphs.extend(
                sub
                for a in node.attribute
                for sub in [*([a.g] if a.HasField("g") else []), *a.graphs]
            )
    onnx.save_model(model, str(target))


def _max_abs_errors(exportable: Exportable, model: Path) -> dict[str, float]:
    """ONNX Runtime's outputs against PyTorch's on the example inputs, per output."""
    import numpy as np
    import onnxruntime as ort
    import torch

    with torch.no_grad():
        expected = exportable.module(*exportable.examples)
    expected = expected if isinstance(expected, (tuple, list)) else (expected,)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    feeds = {
        n: t.numpy() for n, t in zip(exportable.input_names, exportable.examples) if n in wanted
    }
    got = session.run(exportable.output_names, feeds)
    return {
        name: float(np.max(np.abs(g - e.numpy()))) if g.size else 0.0
        for name, g, e in zip(exportable.output_names, got, expected)
    }
