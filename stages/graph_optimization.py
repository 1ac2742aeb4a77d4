"""graph_optimization: let ONNX Runtime optimize the graph and save the result (`optimized_model_filepath`)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ortflow.api import (
    ArtifactKind,
    Json,
    Port,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    providers,
)
from ortflow.api import onnx as onnx_model
from ortflow.api.providers import uses_cuda

LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "all": "ORT_ENABLE_ALL",
}
# ORT's documentation: a model saved after layout optimizations (the 'layout' and 'all' levels) may use
# kernels and layouts chosen for this machine's CPU instruction set, so it is only valid where it was made.
MACHINE_SPECIFIC_LEVELS = ("layout", "all")


@dataclass(frozen=True)
class GraphOptimizationSettings:
    """GraphOptimization's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    level: str = "extended"  # a key of LEVELS
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    free_dimension_overrides: Mapping[str, int] = field(default_factory=dict)
    disabled_optimizers: tuple[str, ...] = ()


class GraphOptimization(SettingsStage[GraphOptimizationSettings]):
    type = "graph_optimization"
    version = "2"  # 2: metrics.json no longer holds timings
    description = (
        "Optimize a model with ONNX Runtime's graph optimizer (constant folding, redundant-node removal, "
        "fusions, layout) and save the optimized graph. Levels 'layout' and 'all' produce a model tied to "
        "this machine's CPU: the cache key includes the CPU, and the metrics say it is not portable."
    )
    inputs = (Port("model", ArtifactKind.ONNX_MODEL, "the ONNX model to optimize"),)
    outputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the optimized model", filename="model.onnx"),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "node counts by op type before and after, and sizes",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "level": {
                "enum": list(LEVELS),
                "default": "extended",
                "description": "ORT graph optimization level: disabled, basic, extended, layout or all",
            },
            "providers": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "default": ["CPUExecutionProvider"],
                "description": "execution providers the graph is optimized for (their kernels decide the fusions)",
            },
            "free_dimension_overrides": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 1},
                "default": {},
                "description": "fix symbolic dimensions by name (e.g. {batch: 1}) so shape-dependent passes apply",
            },
            "disabled_optimizers": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "names of ORT optimizers to skip (e.g. ['AttentionFusion'])",
            },
        },
    }

    settings = GraphOptimizationSettings

    def facts(self, settings: GraphOptimizationSettings) -> tuple[str, ...]:
        facts: tuple[str, ...] = ("onnxruntime", "onnx")
        if settings.level in MACHINE_SPECIFIC_LEVELS:
            facts += ("cpu",)
        if settings.providers != ("CPUExecutionProvider",):
            facts += ("providers",)
        if uses_cuda(
            list(settings.providers)
        ):  # the CUDA provider's build decides its fusions and kernels
            facts += ("cuda_provider",)
        return facts

    def run(self, ctx: StageContext) -> StageResult:
        source = onnx_model.model_file(ctx.path("model"))
        large = onnx_model.needs_external_data(onnx_model.total_size(source))
        # A model under 2 GB read with external data: ORT writes the weights to a data file in scratch (a reference
        # to the input's data file otherwise), and the model is gathered into one file afterwards.
        gather = not large and onnx_model.has_external_data(source)
        target = (
            ctx.scratch / "optimized" / "model.onnx"
            if gather
            else onnx_model.output_file(ctx.output_path("model"), large)
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        params = ctx.settings(GraphOptimizationSettings)
        options = _session_options(params, target, weights_beside=large or gather)
        providers.resolve(list(params.providers)).require("optimizing for these providers")
        started = time.perf_counter()
        session = onnx_model.load_for_ort(
            source,
            options,
            list(params.providers),
            disabled_optimizers=list(params.disabled_optimizers) or None,
        )
        seconds = time.perf_counter() - started
        used = session.get_providers()
        del session
        if not target.exists():
            raise StageError(f"ONNX Runtime did not write the optimized model to {target}")
        if gather:
            target = onnx_model.gathered(target, ctx.output_path("model"))
        onnx_model.check(target, used)
        metrics = _metrics(params, used, source, target)
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        note = "" if metrics["portable"] else " (tied to this CPU)"
        summary = (
            f"{params.level}: nodes {metrics['nodes_before']} -> {metrics['nodes_after']}{note}"
        )
        kept = {k: metrics[k] for k in ("nodes_before", "nodes_after", "portable")}
        return StageResult(summary=summary, metrics={**kept, "optimize_seconds": round(seconds, 3)})


def _session_options(params: GraphOptimizationSettings, target: Path, weights_beside: bool) -> Any:
    """ORT session options that make loading the model save it, optimized, to `target` (the weights in a data
    file beside it when `weights_beside`)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[params.level])
    options.optimized_model_filepath = str(target)
    if weights_beside:
        onnx_model.write_initializers_beside(options, target)
    options.log_severity_level = (
        3  # ORT warns that layout-optimized models are machine-specific; the metrics say so
    )
    for name, value in params.free_dimension_overrides.items():
        options.add_free_dimension_override_by_name(name, value)
    return options


def _metrics(
    params: GraphOptimizationSettings, used: list[str], source: Path, target: Path
) -> dict[str, Json]:
    """metrics.json: node counts by op type and sizes, before and after."""
    before, after = onnx_model.op_counts(source), onnx_model.op_counts(target)
    return {
        "level": params.level,
        "providers": [*used],
        "portable": params.level not in MACHINE_SPECIFIC_LEVELS,
        "nodes_before": sum(before.values()),
        "nodes_after": sum(after.values()),
        "op_types_before": {op: n for op, n in sorted(before.items())},
        "op_types_after": {op: n for op, n in sorted(after.items())},
        "bytes_before": onnx_model.total_size(source),
        "bytes_after": onnx_model.total_size(target),
    }  # no timings in the file: the same inputs must give the same bytes
