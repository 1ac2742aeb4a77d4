"""convert_float16: fp16 weights and compute for GPU providers, with fp32 inputs and outputs kept if asked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ortflow.api import (
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
    model_inputs,
)
from ortflow.api import onnx as onnx_model
from ortflow.api.ports import metrics_out, model_in, model_out, samples_in
from ortflow.stages.quantization.fp16_range import out_of_range


@dataclass(frozen=True)
class Float16Settings:
    """ConvertFloat16's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    keep_io_types: bool = True
    op_block_list: tuple[str, ...] = ()
    node_block_list: tuple[str, ...] = ()
    samples: int = 8
    headroom: float = 2


class ConvertFloat16(SettingsStage[Float16Settings]):
    type = "convert_float16"
    version = "3"  # 2: nodes sorted keeping their order where valid; 3: the overflow block list from `data`
    description = (
        "Convert a float32 model to float16 with onnxruntime.transformers.float16 (for CUDA/TensorRT; on CPUs "
        "fp16 is usually slower). keep_io_types keeps the model's inputs and outputs float32. Given `data`, it runs "
        "the float32 model on a few samples first and keeps in float32 every node whose values float16 cannot hold."
    )
    inputs = (
        model_in("a float32 model"),
        samples_in("samples to find the nodes whose values overflow float16"),
    )
    outputs = (model_out("the float16 model"), metrics_out("sizes and ops kept in float32"))
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "keep_io_types": {
                "type": "boolean",
                "default": True,
                "description": "keep float32 inputs and outputs",
            },
            "op_block_list": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "op types to keep in float32 (added to ORT's default list)",
            },
            "node_block_list": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "node names to keep in float32",
            },
            "samples": {
                "type": "integer",
                "minimum": 1,
                "default": 8,
                "description": "with `data`: samples to run",
            },
            "headroom": {
                "type": "number",
                "minimum": 1,
                "default": 2,
                "description": "with `data`: keep nodes whose values pass 65504 / headroom (values elsewhere may be larger)",
            },
        },
    }

    settings = Float16Settings

    def facts(self, settings: Float16Settings) -> tuple[str, ...]:
        return ("onnxruntime", "onnx")

    def run(self, ctx: StageContext) -> StageResult:
        from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

        params = self.read(ctx)
        # a private copy: onnx refuses external data in a file with other hard links (the store links its files into out/)
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)
        onnx_model.load_for_ort(source)
        model = _with_shapes(source)
        overflowing: dict[str, float] = {}
        if ctx.has("data"):
            feeds = list(ctx.dataset("data").feeds(model_inputs(source), limit=params.samples))
            overflowing = out_of_range(source, feeds, params.headroom)
        try:
            converted = convert_float_to_float16(
                model,
                keep_io_types=params.keep_io_types,
                op_block_list=sorted(set(DEFAULT_OP_BLOCK_LIST) | set(params.op_block_list)),
                node_block_list=sorted(set(params.node_block_list) | set(overflowing)) or None,
                disable_shape_infer=True,  # done by _with_shapes, which works past 2 GB
            )
        except Exception as exc:
            raise StageError(f"float16 conversion failed: {type(exc).__name__}: {exc}") from exc
        del model  # the converter rewrote it in place: `converted` is the one reference left
        onnx_model.sort_graph(
            converted.graph
        )  # the converter appends its input Casts after their consumers
        if onnx_model.held_bytes(converted) > onnx_model.HELD_BYTES_TO_MOVE:
            # the converter rewrote the weights in place: the message still holds the float32 bytes (weights_out)
            staged = onnx_model.written_out(converted, ctx.scratch / "float16")
            del converted
            converted = onnx_model.load_graph(staged, external_data=True)
        target = onnx_model.save(converted, ctx.output_path("model"))
        del (
            converted
        )  # the check's session needs the room (ORT may fold float32 copies of float16 weights)
        onnx_model.check(target)
        before, after = onnx_model.total_size(source), onnx_model.total_size(target)
        metrics = {
            "bytes_before": before,
            "bytes_after": after,
            "keep_io_types": params.keep_io_types,
            "kept_float32_for_range": overflowing,
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        ratio = after / before
        kept = (
            f"; {len(overflowing)} nodes kept float32 (values up to {max(overflowing.values()):.3g})"
            if overflowing
            else ""
        )
        return StageResult(
            summary=f"float16: size x{ratio:.2f}{kept}",
            metrics={"size_ratio": round(ratio, 3), "kept_float32_for_range": len(overflowing)},
        )


def _with_shapes(source: Any) -> Any:
    """The model with ONNX's shape inference applied, as the converter would apply it, then its weights: the
    converter's own inference serializes the whole model, which fails past protobuf's 2 GB ("Failed to
    serialize proto"); run on the graph alone (weights named, not loaded) it gives the same shapes."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_model

    model = onnx.shape_inference.infer_shapes(onnx_model.load_graph(source))
    load_external_data_for_model(model, str(source.parent))
    return model
