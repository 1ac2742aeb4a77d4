"""quantize_weights: weight-only INT4/INT8 through ORT's MatMulNBits (block-wise scales, activations stay float)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from ortflow.api import (
    ArtifactKind,
    Json,
    Params,
    Port,
    Stage,
    StageContext,
    StageError,
    StageResult,
    json_value,
    settings_of,
)
from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import ort_failures, quantized_graph, sanity, weight_sensitivity
from ortflow.stages.quantization.sanity_metrics import SanityMetrics


class Algorithm(str, Enum):
    """ORT's weight-only quantizers that run without PyTorch (HQQ, GPTQ with a data loader and AWQ need it)."""

    DEFAULT = "default"  # ORT's own block-wise round-to-nearest, any bit width it supports
    RTN = "rtn"  # round-to-nearest from ORT's bundled neural-compressor code (4-bit)
    K_QUANT = "k_quant"  # k-quant scales, from the same code (4-bit)


@dataclass(frozen=True)
class WeightsSettings:
    """QuantizeWeights' parameters (its params_schema; tests/unit/test_stages_typed.py holds the two together).
    Not declared as Stage.settings yet: the sanity check's advice still reads per_channel from ctx.params."""

    algorithm: str = Algorithm.DEFAULT.value  # an Algorithm's value
    bits: int = 4  # 4 or 8
    block_size: int = 32
    symmetric: bool = True
    accuracy_level: int = 0
    op_types_to_quantize: tuple[str, ...] = ("MatMul",)
    nodes_to_exclude: tuple[str, ...] = ()
    layers_at_8_bits: int = 0
    sanity_check: bool = True
    sanity_samples: int = 8
    sanity_min_cosine: float = 0.5


class QuantizeWeights(Stage):
    type = "quantize_weights"
    version = "3"  # 2: layers_at_8_bits; 3: the sanity numbers in the run record, not metrics.json
    description = (
        "Weight-only quantization with ORT's MatMulNBits: MatMul weights (and Gather tables, for embeddings) stored "
        "in 4 or 8 bits with one scale per block of `block_size` values; activations stay float. Shrinks a model "
        "about 4-7x; it pays in speed where weights dominate (decoding one token at a time, large matrices), "
        "less on batched encoders. Checked like the other quantize stages before it is called a success."
    )
    inputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "an fp32 model"),
        Port(
            "data",
            ArtifactKind.DATASET,
            "a few samples for the sanity check (default: the data upstream inputs were made "
            "from, else random feeds)",
            optional=True,
        ),
    )
    outputs = (
        Port(
            "model",
            ArtifactKind.ONNX_MODEL,
            "the weight-only quantized model",
            filename="model.onnx",
        ),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "quantized op counts and sizes",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "algorithm": {
                "enum": [a.value for a in Algorithm],
                "default": Algorithm.DEFAULT.value,
                "description": "default: ORT's block-wise round-to-nearest; rtn, k_quant: ORT's bundled "
                "neural-compressor algorithms (4-bit)",
            },
            "bits": {
                "enum": [4, 8],
                "default": 4,
                "description": "bits per weight (algorithm default only; rtn and k_quant: 4)",
            },
            "block_size": {
                "enum": [16, 32, 64, 128, 256],
                "default": 32,
                "description": "weights per scale",
            },
            "symmetric": {
                "type": "boolean",
                "default": True,
                "description": "no zero points (default) or asymmetric blocks",
            },
            "accuracy_level": {
                "enum": [0, 1, 2, 3, 4],
                "default": 0,
                "description": "MatMulNBits' compute type: 0 unset (as the weights), 1 fp32, 2 fp16, 3 bf16, "
                "4 int8 (activations quantized per block at run time: fastest on CPUs)",
            },
            "op_types_to_quantize": {
                "type": "array",
                "items": {"enum": ["MatMul", "Gather"]},
                "minItems": 1,
                "uniqueItems": True,
                "default": ["MatMul"],
                "description": "MatMul weights, and Gather for embedding tables (algorithm default)",
            },
            "nodes_to_exclude": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "node names to keep in float",
            },
            "layers_at_8_bits": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "with bits 4: this many MatMuls, those whose 4-bit error is largest (on their "
                "outputs over the `data` samples, else on their weights), quantized to 8 bits",
            },
            **sanity.SANITY_PARAMS,
        },
    }

    def check(self, params: Params) -> list[str]:
        read = settings_of(WeightsSettings, params)
        problems = []
        if read.algorithm != Algorithm.DEFAULT.value and read.bits != 4:
            problems.append(
                f"algorithm {read.algorithm} quantizes to 4 bits: set bits: 4, or algorithm: default"
            )
        if read.layers_at_8_bits and read.bits != 4:
            problems.append(
                "layers_at_8_bits raises some MatMuls from 4 to 8 bits: set bits: 4, or layers_at_8_bits: 0"
            )
        if read.algorithm != Algorithm.DEFAULT.value and read.op_types_to_quantize != ("MatMul",):
            problems.append(
                f"algorithm {read.algorithm} quantizes MatMul weights only: use algorithm: default for Gather"
            )
        return problems

    def env_facts(self, params: Params) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "numpy")

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.settings(WeightsSettings)
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)
        onnx_model.load_for_ort(source)
        graph = onnx_model.load_graph(source)
        quantized_graph.check_excluded_nodes(graph, list(params.nodes_to_exclude))
        ranking = _sensitivity(ctx, params, source, graph) if params.layers_at_8_bits else []
        eight_bit = sorted(node for node, _ in ranking[: params.layers_at_8_bits])
        target = _quantized(source, ctx.output_path("model"), params, eight_bit)
        counts = onnx_model.op_counts(target)
        if not any("MatMulNBits" in op or "GatherBlockQuantized" in op for op in counts):
            why_not = quantized_graph.nothing_quantized(source, list(params.op_types_to_quantize))
            raise StageError(f"quantize_weights quantized nothing: {why_not}")
        quantized_ops: dict[str, Json] = {
            op: n for op, n in sorted(counts.items()) if "NBits" in op or "BlockQuantized" in op
        }
        before, after = onnx_model.total_size(source), onnx_model.total_size(target)
        metrics = {
            "algorithm": params.algorithm,
            "bits": params.bits,
            "block_size": params.block_size,
            "quantized_by_op_type": quantized_ops,
            "nodes_kept_float": sorted(params.nodes_to_exclude),
            "nodes_at_8_bits": eight_bit,
            "error_at_4_bits": dict(
                ranking
            ),  # the ranking layers_at_8_bits took its layers from, largest first
            "bytes_before": before,
            "bytes_after": after,
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        measured: dict[
            str, SanityMetrics
        ] = {}  # sanity's measurements, for the run record's metrics
        checked = sanity.verify_quantized(ctx, params, source, target, measured)
        ratio = after / before
        ops = ", ".join(
            f"{op.removeprefix('com.microsoft.')} {n}" for op, n in quantized_ops.items()
        )
        mixed = f" ({len(eight_bit)} MatMuls at 8 bits)" if eight_bit else ""
        summary = (
            f"{params.bits}-bit {params.algorithm}{mixed}, blocks of {params.block_size}: {ops}; "
            f"size x{ratio:.2f}; {checked}"
        )
        return StageResult(
            summary=summary,
            metrics={
                "quantized": quantized_ops,
                "size_ratio": round(ratio, 3),
                **{name: json_value(found) for name, found in measured.items()},
            },
        )


def _sensitivity(
    ctx: StageContext, params: WeightsSettings, source: Any, graph: Any
) -> list[tuple[str, float]]:
    """The MatMuls this stage quantizes, by their 4-bit error, largest first (on the `data` samples' inputs to
    each layer when given, else on the weights alone)."""
    layers = weight_sensitivity.quantizable_matmuls(graph, params.nodes_to_exclude)
    feeds = sanity.feeds_for(ctx, source, params.sanity_samples)[0] if ctx.has("data") else None
    return weight_sensitivity.ranked(source, layers, feeds, 4, params.block_size, params.symmetric)


def _quantized(source: Any, target: Any, params: WeightsSettings, eight_bit: list[str]) -> Any:
    """ORT's MatMulNBits quantizer on `source` (first `eight_bit` at 8 bits, alone, then the rest at `bits`: a
    quantized node is a MatMulNBits, which the second pass leaves alone), written to `target` and checked."""
    import onnx

    model = onnx.load(str(source))
    if eight_bit:
        others = [n.name for n in model.graph.node if n.name not in set(eight_bit)]
        model = _nbits_pass(
            model,
            replace(
                params,
                algorithm=Algorithm.DEFAULT.value,
                bits=8,
                nodes_to_exclude=tuple(sorted(set(params.nodes_to_exclude) | set(others))),
            ),
        )
    model = _nbits_pass(model, params)
    if any(n.domain == "com.microsoft" for n in model.graph.node) and "com.microsoft" not in {
        o.domain for o in model.opset_import
    }:
        model.opset_import.append(
            onnx.helper.make_opsetid("com.microsoft", 1)
        )  # the rtn/k_quant path leaves it out
    written = onnx_model.save(model, target)
    onnx_model.resort_if_needed(written)
    onnx_model.check(written)
    return written


def _nbits_pass(model: Any, params: WeightsSettings) -> Any:
    """One run of ORT's MatMulNBits quantizer over `model` (a ModelProto), with `params`' settings."""
    from onnxruntime.quantization import matmul_nbits_quantizer as nbits
    from onnxruntime.quantization.quant_utils import QuantFormat

    op_types = params.op_types_to_quantize
    algorithm = Algorithm(params.algorithm)
    if algorithm is Algorithm.DEFAULT:
        config: Any = nbits.DefaultWeightOnlyQuantConfig(
            block_size=params.block_size,
            is_symmetric=params.symmetric,
            accuracy_level=params.accuracy_level or None,
            quant_format=QuantFormat.QOperator,
            op_types_to_quantize=op_types,
            bits=params.bits,
        )
    elif algorithm is Algorithm.RTN:
        config = nbits.RTNWeightOnlyQuantConfig(op_types_to_quantize=op_types)
    else:
        config = nbits.KQuantWeightOnlyQuantConfig(op_types_to_quantize=op_types)
    try:
        quantizer = nbits.MatMulNBitsQuantizer(
            model,
            bits=params.bits,
            block_size=params.block_size,
            is_symmetric=params.symmetric,
            accuracy_level=params.accuracy_level or None,
            nodes_to_exclude=list(params.nodes_to_exclude),
            algo_config=config,
        )
        quantizer.process()
    except Exception as exc:  # ORT's quantizer: its failures become one line with what to do
        raise ort_failures.quantizer_failed("quantize_weights", exc) from exc
    return quantizer.model.model if hasattr(quantizer.model, "model") else quantizer.model
