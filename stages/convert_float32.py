"""convert_float32: a float16 model (or float16 islands inside a float model) in float32, for CPUs, where ORT has
few float16 kernels and its quantizer cannot quantize float16 tensors; checked against the original."""

from __future__ import annotations

import json
from dataclasses import dataclass
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
from ortflow.stages.graphs.float32 import to_float32
from ortflow.stages.graphs.random_feeds import random_feeds

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True)
class Float32Settings:
    """ConvertFloat32's parameters (its params_schema, read typed)."""

    keep_io_types: bool = True
    samples: int = 16
    atol: float = 1e-2
    rtol: float = 1e-2


class ConvertFloat32(SettingsStage[Float32Settings]):
    type = "convert_float32"
    version = "1"
    description = (
        "Convert a float16 model, or the float16 parts of a float model (a converter's Cast to float16 before an "
        "LSTM), to float32: initializers, Constant tensors, Cast(to=float16) and the other ops told to produce "
        "float16, declared value types, and If/Loop/Scan bodies. For CPUs, where ORT has few float16 kernels, and "
        "as the source of INT8 (ORT's quantizer writes QuantizeLinear on float16 tensors that ORT cannot load). "
        "keep_io_types keeps float16 inputs and outputs float16 (a Cast at the boundary). Refuses a model with no "
        "float16 in it. Checked: outputs within atol + rtol*|original| of the original's on the data's feeds "
        "(random feeds without data)."
    )
    inputs = (
        model_in("a model with float16 weights or compute"),
        samples_in("samples: the feeds of the check against the original"),
    )
    outputs = (model_out("the float32 model"), metrics_out("what was converted, and the check"))
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "keep_io_types": {
                "type": "boolean",
                "default": True,
                "description": "keep float16 inputs and outputs float16 (data made for the original feeds it)",
            },
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 16,
                "description": "feeds of the check",
            },
            "atol": {
                "type": "number",
                "minimum": 0,
                "default": 1e-2,
                "description": "the check's absolute tolerance (float16 keeps about 3 digits)",
            },
            "rtol": {
                "type": "number",
                "minimum": 0,
                "default": 1e-2,
                "description": "the check's relative tolerance",
            },
        },
    }

    settings = Float32Settings

    def facts(self, settings: Float32Settings) -> tuple[str, ...]:
        return ("onnxruntime", "onnx")

    def run(self, ctx: StageContext) -> StageResult:

        params = ctx.settings(Float32Settings)
        source = onnx_model.model_file(ctx.path("model"))
        model = onnx_model.load_graph(source, external_data=True)  # not a model: said so, by name
        counts = to_float32(model, params.keep_io_types)
        if counts.total == 0:
            raise StageError(
                f"convert_float32: {source.name} holds no float16 tensor, cast or value — nothing to convert; "
                "leave the stage out for this model"
            )
        target = onnx_model.save(model, ctx.output_path("model"))
        onnx_model.check(target)
        inputs = model_inputs(source)
        if ctx.has("data"):
            feeds = list(ctx.dataset("data").feeds(inputs, limit=params.samples))
            data = ctx.dataset("data").source()
        else:
            feeds, data = (
                _random_feeds(inputs, params.samples),
                DataSource(DataProvenance.RANDOM, "random"),
            )
        worst = compare(source, target, feeds, params.atol, params.rtol)
        tolerance = f"atol {params.atol:g} + rtol {params.rtol:g}"
        converted = {
            "weights": counts.weights,
            "casts": counts.casts,
            "values": counts.values,
            "float16_boundary": counts.boundary,
        }
        metrics = {
            "converted": converted,
            "check": {
                "feeds": len(feeds),
                "max_abs": worst,
                "tolerance": tolerance,
                "data": data.provenance.value,
            },
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        summary = (
            f"float32: {counts.weights} float16 weights, {counts.casts} casts to float16 and {counts.values} "
            f"declared types converted"
            + (f" ({', '.join(counts.boundary)} kept float16)" if counts.boundary else "")
            + f"; outputs within {tolerance} of the original's on {len(feeds)} feeds (max |diff| "
            f"{worst:.2g}, {data.label()})"
        )
        return StageResult(
            summary=summary,
            metrics={"weights": counts.weights, "casts": counts.casts, "max_abs": worst},
            data_source=data,
        )


def compare(source: Path, target: Path, feeds: list[Feed], atol: float, rtol: float) -> float:
    """The largest |difference| between both models' outputs; a StageError naming the output and the feed where
    one is beyond atol + rtol*|original| (a conversion that changed what the model computes)."""
    import numpy as np

    reference, converted = onnx_model.load_for_ort(source), onnx_model.load_for_ort(target)
    names = [o.name for o in reference.get_outputs()]
    worst = 0.0
    for index, feed in enumerate(feeds):
        for name, a, b in zip(names, reference.run(names, feed), converted.run(names, feed)):
            if (
                a.shape != b.shape
            ):  # checked first: the difference of two shapes may not even broadcast
                raise StageError(
                    f"convert_float32: output '{name}' of the float32 model has shape {list(b.shape)} where the "
                    f"original's has {list(a.shape)} on feed {index} — the conversion changed what the model "
                    "computes: keep the original (and report the model: this is a convert_float32 bug)"
                )
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
            if np.any(diff > atol + rtol * np.abs(a)):
                raise StageError(
                    f"convert_float32: output '{name}' of the float32 model differs from the original's on feed "
                    f"{index} (max |diff| {float(diff.max(initial=0.0)):.3g}; tolerance atol {atol:g} + rtol "
                    f"{rtol:g}) — the original's float16 rounding mattered here: raise atol/rtol if the task "
                    "metric holds, or keep the original"
                )
    return worst


def _random_feeds(inputs: list[ModelInput], count: int) -> list[Feed]:
    """Free dims taken as 1."""
    shapes = {
        item.name: (tuple(d if isinstance(d, int) and d > 0 else 1 for d in item.shape), item.dtype)
        for item in inputs
    }
    return random_feeds(shapes, count)
