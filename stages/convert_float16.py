"""convert_float16: fp16 weights and compute for GPU providers, with fp32 inputs and outputs kept if asked."""

from __future__ import annotations

import json
from typing import Any

from ortflow.engine.errors import StageError
from ortflow.engine.ort import graph_order, onnx_model
from ortflow.engine.stage import ArtifactKind, Port, Stage, StageContext, StageResult


class ConvertFloat16(Stage):
    type = "convert_float16"
    version = "2"  # 2: nodes sorted keeping their order where valid (subgraphs' outer reads counted)
    description = (
        "Convert a float32 model to float16 with onnxruntime.transformers.float16 (for CUDA/TensorRT; on CPUs "
        "fp16 is usually slower). keep_io_types keeps the model's inputs and outputs float32."
    )
    inputs = (Port("model", ArtifactKind.ONNX_MODEL, "a float32 model"),)
    outputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the float16 model", filename="model.onnx"),
        Port("metrics", ArtifactKind.METRICS, "sizes and ops kept in float32", filename="metrics.json"),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "keep_io_types": {"type": "boolean", "default": True, "description": "keep float32 inputs and outputs"},
            "op_block_list": {"type": "array", "items": {"type": "string"}, "default": [],
                              "description": "op types to keep in float32 (added to ORT's default list)"},
            "node_block_list": {"type": "array", "items": {"type": "string"}, "default": [],
                                "description": "node names to keep in float32"},
        },
    }

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        return ("onnxruntime", "onnx")

    def run(self, ctx: StageContext) -> StageResult:
        from onnxruntime.transformers.float16 import DEFAULT_OP_BLOCK_LIST, convert_float_to_float16

        params = ctx.params
        source = onnx_model.model_file(ctx.inputs["model"])
        onnx_model.load_for_ort(source)
        model = onnx_model.load_graph(source, external_data=True)
        try:
            converted = convert_float_to_float16(
                model, keep_io_types=params["keep_io_types"],
                op_block_list=sorted(set(DEFAULT_OP_BLOCK_LIST) | set(params["op_block_list"])),
                node_block_list=params["node_block_list"] or None,
            )
        except Exception as exc:
            raise StageError(f"float16 conversion failed: {type(exc).__name__}: {exc}") from exc
        graph_order.sort_graph(converted.graph)  # the converter appends its input Casts after their consumers
        target = onnx_model.save(converted, ctx.output_path("model"))
        onnx_model.check(target)
        metrics = {"bytes_before": onnx_model.total_size(source), "bytes_after": onnx_model.total_size(target),
                   "keep_io_types": params["keep_io_types"]}
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        ratio = metrics["bytes_after"] / metrics["bytes_before"]
        return StageResult(summary=f"float16: size x{ratio:.2f}", metrics={"size_ratio": round(ratio, 3)})
