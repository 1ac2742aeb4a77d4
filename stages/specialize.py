"""specialize: the model for the shapes and values it is deployed with. Fixing dims and freezing inputs to
constants lets a well-kept folder (onnxscript's optimizer, on onnx-ir) remove the shape arithmetic, and the `If`s
whose condition became constant, so the graph a quantizer or a CUDA graph sees is the network alone."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ortflow.api import (
    DataProvenance,
    DataSource,
    Feed,
    ModelInput,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    model_inputs,
)
from ortflow.api import onnx as onnx_model
from ortflow.api.ports import metrics_out, model_in, model_out, samples_in
from ortflow.stages.graphs.random_feeds import random_feeds
from ortflow.stages.graphs.specialization import (
    GraphCounts,
    Specialization,
    SpecializeSettings,
    apply,
    fold,
    plan,
)

if TYPE_CHECKING:
    from pathlib import Path


class Specialize(SettingsStage[SpecializeSettings]):
    type = "specialize"
    # 2: recurrent ops' all-zero initial states left out (ONNX's default), with the nodes that built them;
    # HardSwish/HardSigmoid Clip chains fused into those ops
    # 3: batch norms and scalar Mul/Add around convolutions folded into their weights; a bidirectional op's
    # directions joined by one Transpose and Reshape
    version = "3"
    description = (
        "Specialize a model for fixed shapes and input values: fix dims (by name, or an input's whole shape), "
        "freeze inputs to constants (removed from the inputs; values from params or from the data, e.g. a VAD's "
        "sample rate), then fold constants, shape arithmetic and Ifs whose condition became constant with "
        "onnxscript's optimizer. Checked: outputs equal the original's on the data's feeds (random feeds without "
        "data) within atol + rtol*|reference|. The model records its frozen inputs, so data made for the original feeds "
        "it (each frozen value checked, then left out). An LSTM/GRU/RNN's initial state that is all zeros (exporters build "
        "it from the batch dim on every call) is left out, ONNX's default, with the nodes that built it; HardSwish and "
        "HardSigmoid written as Clip chains (x * Clip(x + 3, 0, 6) / 6, as Paddle exports them) become those ops, "
        "the opset raised to 14 where it is older; batch norms and scalar scales and shifts after a convolution (or "
        "before an unpadded 1x1 one) are folded into its weights; a bidirectional LSTM/GRU/RNN's directions sliced "
        "apart and concatenated (tf2onnx's Keras Bidirectional) become one Transpose and Reshape."
    )
    inputs = (
        model_in("the model to specialize"),
        samples_in(
            "samples: the values and shapes taken from the data, and the feeds of the equality check"
        ),
    )
    outputs = (
        model_out("the specialized model"),
        metrics_out("what was fixed, frozen and removed, and the equality check"),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "dims": {
                "type": "object",
                "additionalProperties": {"type": "integer", "minimum": 1},
                "default": {},
                "description": "symbolic dims fixed by name, e.g. {batch_size: 1, sequence_length: 128}",
            },
            "shapes": {
                "type": "object",
                "additionalProperties": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1},
                },
                "default": {},
                "description": "inputs' whole shapes, e.g. {input: [1, 576]} (for dims without names)",
            },
            "freeze": {
                "type": "object",
                "additionalProperties": {"type": ["number", "array"]},
                "default": {},
                "description": "inputs frozen to constants (removed from the inputs), e.g. {sr: 16000}",
            },
            "freeze_from_data": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "inputs frozen to the one value the data gives them (an error if it gives several)",
            },
            "shapes_from_data": {
                "type": "boolean",
                "default": False,
                "description": "fix every input not named in `shapes` to the shape of the data's first sample",
            },
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 16,
                "description": "feeds of the equality check",
            },
            "atol": {
                "type": "number",
                "minimum": 0,
                "default": 1e-4,
                "description": "the check's absolute tolerance",
            },
            "rtol": {
                "type": "number",
                "minimum": 0,
                "default": 1e-3,
                "description": "the check's relative tolerance",
            },
        },
    }

    settings = SpecializeSettings

    def problems(self, settings: SpecializeSettings) -> list[str]:
        both = sorted(set(settings.freeze) & set(settings.freeze_from_data))
        return (
            [f"specialize: {', '.join(both)} named in both freeze and freeze_from_data — keep one"]
            if both
            else []
        )

    def facts(self, settings: SpecializeSettings) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "onnxscript")

    def run(self, ctx: StageContext) -> StageResult:
        import onnx

        params = ctx.settings(SpecializeSettings)
        source = onnx_model.model_file(ctx.path("model"))
        inputs = model_inputs(source)
        feeds = (
            list(ctx.dataset("data").feeds(inputs, limit=params.samples)) if ctx.has("data") else []
        )
        if not feeds and (params.freeze_from_data or params.shapes_from_data):
            raise StageError(
                "specialize: freeze_from_data and shapes_from_data read the data — give the stage `data:`"
            )
        spec = plan(params, inputs, feeds)
        model = onnx.load(str(source))
        before = GraphCounts.of(model)
        apply(model, spec, inputs)
        model = fold(model)
        after = GraphCounts.of(model)
        target = onnx_model.save(model, ctx.output_path("model"))
        onnx_model.check(target)
        checked, data = _check_feeds(ctx, spec, inputs, feeds, params.samples)
        worst = compare(source, target, spec, checked, params.atol, params.rtol)
        tolerance = f"atol {params.atol:g} + rtol {params.rtol:g}"
        metrics = {  # no paths: the same inputs give the same bytes wherever the project lies
            "specialization": spec.to_json(),
            "before": before.__dict__,
            "after": after.__dict__,
            "check": {
                "feeds": len(checked),
                "max_abs": worst,
                "tolerance": tolerance,
                "data": data.provenance.value,
            },
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        summary = (
            f"{spec.describe()}; nodes {before.nodes} -> {after.nodes} (If {before.ifs} -> {after.ifs}, shape "
            f"ops {before.shape_nodes} -> {after.shape_nodes}); outputs equal within {tolerance} on {len(checked)} "
            f"feeds (max |diff| {worst:.2g}, {data.label()})"
        )
        kept = {
            "nodes_before": before.nodes,
            "nodes_after": after.nodes,
            "ifs_removed": before.ifs - after.ifs,
        }
        return StageResult(summary=summary, metrics={**kept, "max_abs": worst}, data_source=data)


def compare(
    source: Path, target: Path, spec: Specialization, feeds: list[Feed], atol: float, rtol: float
) -> float:
    """The largest |difference| between the outputs of both models; a StageError naming the output and the
    sample when one is beyond atol + rtol*|reference| (a fold that changed what the model computes)."""
    import numpy as np

    reference, specialized = onnx_model.load_for_ort(source), onnx_model.load_for_ort(target)
    names = [o.name for o in reference.get_outputs()]
    worst = 0.0
    for index, feed in enumerate(feeds):
        full = {**feed, **spec.frozen}
        wanted = reference.run(names, full)
        got = specialized.run(names, {k: v for k, v in feed.items() if k not in spec.frozen})
        for name, a, b in zip(names, wanted, got):
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
            if a.shape != b.shape or np.any(diff > atol + rtol * np.abs(a)):
                raise StageError(
                    f"specialize: output '{name}' of the specialized model differs from the original's on feed {index} "
                    f"(max |diff| {float(diff.max(initial=0.0)):.3g}, shapes {list(a.shape)} vs {list(b.shape)}; tolerance "
                    f"atol {atol:g} + rtol {rtol:g}) — a fold changed what the model computes: freeze fewer inputs, or "
                    "report the model to onnxscript's optimizer"
                )
    return worst


def _check_feeds(
    ctx: StageContext,
    spec: Specialization,
    inputs: list[ModelInput],
    feeds: list[Feed],
    samples: int,
) -> tuple[list[Feed], DataSource]:
    """The feeds of the equality check: the data's samples in the fixed shapes, or `samples` random feeds in
    them."""
    if feeds:
        fitting = [f for f in feeds if all(f[n].shape == s for n, s in spec.shapes.items())]
        if not fitting:
            raise StageError(
                "specialize: no sample of the data has the fixed shapes — fix the shapes the data has (shapes_from_data: true)"
            )
        return fitting, ctx.dataset("data").source()
    return _random_feeds(spec, inputs, samples), DataSource(DataProvenance.RANDOM, "random")


def _random_feeds(spec: Specialization, inputs: list[ModelInput], count: int) -> list[Feed]:
    shapes: dict[str, tuple[tuple[int, ...], str]] = {}
    for item in inputs:
        if item.name in spec.frozen:
            continue
        wanted: tuple[int | None, ...] = spec.shapes.get(item.name) or tuple(
            d if isinstance(d, int) and d > 0 else spec.dims.get(d) if isinstance(d, str) else None
            for d in item.shape
        )
        shape = tuple(d for d in wanted if isinstance(d, int))
        if len(shape) < len(wanted):
            raise StageError(
                f"specialize: input '{item.name}' ({item.describe()}) keeps a free dim — fix it (dims or shapes), or give `data:`"
            )
        shapes[item.name] = (shape, item.dtype)
    return random_feeds(shapes, count)
