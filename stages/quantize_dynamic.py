"""quantize_dynamic: INT8 weights, activations quantized on the fly (no calibration data needed)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from ortflow.api import StageContext, StageError, StageResult, json_value, settings_of
from ortflow.api import onnx as onnx_model
from ortflow.api.ports import metrics_out, model_in, model_out, samples_in
from ortflow.stages.quantization import (
    float_retry,
    isa,
    op_table,
    ort_failures,
    quantized_graph,
    sanity,
)
from ortflow.stages.quantization.isa import REDUCE_RANGE_PARAM
from ortflow.stages.quantization.ort_quantizer import DynamicSettings, OrtQuantizer
from ortflow.stages.quantization.sanity_metrics import SanityMetrics

# Op types ORT can quantize dynamically but that then run slower than in fp32 on CPUs: ConvInteger has no fast
# kernel (NudeNet's YOLOv8n: 152 ms against 56 ms fp32 on this project's AVX2 machine).
SLOW_WHEN_DYNAMIC = frozenset({"Conv"})


class QuantizeDynamic(OrtQuantizer):
    type = "quantize_dynamic"
    # 3: reduce_range auto; 4: the sanity check; 5: Conv left float unless asked for; 6: auto: no 7-bit uint8;
    # 7: the sanity numbers in the run record, not metrics.json; 8: reduce_range auto decided from the saturation
    # emulation when the stage has real samples; 9: DynamicQuantizeLSTM counted as quantized (an LSTM-only model
    # was refused, "quantized nothing", and 8 may have cached that failure), and the emulation reads the nodes
    # op_table keeps float under `op_types_to_quantize: auto` as excluded (the settings op_table resolved)
    version = "9"
    description = (
        "Dynamic quantization with onnxruntime.quantization.quantize_dynamic: MatMul/Gemm (and the fused "
        "Attention op) get INT8 weights; activations are quantized at run time. Works on fused graphs. Where "
        "ORT's quantizer fails on a node, or writes a model ORT cannot load, that node is kept float and the "
        "quantizer run again (at most 8 times; the summary and metrics name them)."
    )
    inputs = (model_in("an fp32 model, fused or not"), samples_in())
    outputs = (model_out("the quantized model"), metrics_out("quantized op counts and sizes"))
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "weight_type": {
                "enum": ["QInt8", "QUInt8"],
                "default": "QInt8",
                "description": "weights; without VNNI, QUInt8 (u8 x u8) never saturates but runs slower "
                "than QInt8 with 7-bit weights (reduce_range)",
            },
            "per_channel": {
                "type": "boolean",
                "default": False,
                "description": "one scale per output channel (on MiniLM: cosine 0.976 -> 0.997 at the same speed)",
            },
            "reduce_range": REDUCE_RANGE_PARAM,
            "op_types_to_quantize": {
                **op_table.OP_TYPES_PARAM,
                "description": "e.g. [MatMul, Attention] (default: every type ORT supports but Conv, "
                "whose dynamic ConvInteger runs slower than fp32 on CPUs: 2.7x on "
                "NudeNet's YOLOv8n here; name Conv to quantize it anyway); auto: the default, less the op "
                "types and shapes stages/quantization/int8_op_table.json measured slower in INT8 on the "
                "target's kernel family (measured with static QDQ kernels)",
            },
            "nodes_to_exclude": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "node names to keep in float",
            },
            "extra_options": {
                "type": "object",
                "default": {},
                "description": "ORT's extra_options, e.g. {MatMulConstBOnly: true}",
            },
            **sanity.SANITY_PARAMS,
        },
    }

    def run(self, ctx: StageContext) -> StageResult:
        from onnxruntime.quantization.registry import IntegerOpsRegistry

        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)  # ORT writes beside it
        onnx_model.load_for_ort(source)
        graph = onnx_model.load_graph(source)
        resolved, rule = op_table.rule(dict(ctx.params), ctx.env, graph, "quantize_dynamic")
        settings = settings_of(DynamicSettings, resolved)
        quantized_graph.check_excluded_nodes(graph, list(settings.nodes_to_exclude))
        large = onnx_model.needs_external_data(onnx_model.total_size(source))
        target = onnx_model.output_file(ctx.output_path("model"), large)
        counts = onnx_model.op_counts(source)
        op_types, left = _op_types(settings, counts, set(IntegerOpsRegistry))
        # activations: uint8; uint8 weights never saturate (u8 x u8 is widened first), so auto leaves them 8-bit
        what = isa.Quantized(source, op_types, settings.nodes_to_exclude, isa.samples(ctx, source))
        reduce_range, why = isa.dynamic_reduce_range(settings, ctx.env, what)
        written = _Writer(ctx.scratch, source, target, settings, op_types, reduce_range, large)
        kept = written.write(onnx_model.load_graph(source).graph)
        reordered = written.reordered
        quantized = quantized_graph.quantized_ops(target)
        if not quantized["by_op_type"]:
            raise _nothing_quantized(source, op_types, left)
        by_op_type = dict(sorted(quantized["by_op_type"].items()))
        before, after = onnx_model.total_size(source), onnx_model.total_size(target)
        metrics = {
            "quantized_by_op_type": by_op_type,
            "quantized_nodes": quantized_graph.quantized_node_names(
                source, target, set(IntegerOpsRegistry)
            ),
            "nodes_kept_float": sorted({*settings.nodes_to_exclude, *(k.node for k in kept)}),
            **({"kept_float_after_ort_failures": [k.as_dict() for k in kept]} if kept else {}),
            **({"op_types_auto": rule.metrics()} if rule else {}),
            "reduce_range": reduce_range,
            "bytes_before": before,
            "bytes_after": after,
            **({"nodes_reordered_after_ort": True} if reordered else {}),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        measured: dict[str, SanityMetrics] = {}  # sanity's numbers, for the run record's metrics
        checked = sanity.verify_quantized(ctx, settings, source, target, measured)
        ratio = after / before
        ops = ", ".join(f"{op} {n}" for op, n in sorted(quantized["by_op_type"].items()))
        notes = (_with_left_float(why, left), rule and rule.summary(), float_retry.summary(kept))
        why = "; ".join(p for p in notes if p)
        summary = (
            f"dynamic {settings.weight_type}: {ops}; size x{ratio:.2f}"
            + (f"; {why}" if why else "")
            + f"; {checked}"
        )
        return StageResult(
            summary=summary,
            metrics={
                "quantized": json_value(by_op_type),
                "size_ratio": round(ratio, 3),
                "reduce_range": reduce_range,
                **{name: json_value(found) for name, found in measured.items()},
            },
        )


def _op_types(
    settings: DynamicSettings, counts: dict[str, int], supported: set[str]
) -> tuple[list[str], list[str]]:
    """The op types to quantize (those asked for; by default every type ORT `supported` but the ones slow when
    dynamic), and the ones of this model that the default leaves float."""
    op_types = settings.op_types() or sorted(supported - SLOW_WHEN_DYNAMIC)
    left = sorted(op for op in SLOW_WHEN_DYNAMIC if op in counts and op not in op_types)
    return op_types, left


class _Writer:
    """One quantizer run a call, for float_retry: ORT's quantize_dynamic from `source` to `target` with the
    nodes given kept float, the result repaired (IR version, node order) and loaded once."""

    def __init__(
        self,
        scratch: Path,
        source: Path,
        target: Path,
        settings: DynamicSettings,
        op_types: list[str],
        reduce_range: bool,
        large: bool,
    ):
        self.scratch, self.source, self.target = scratch, source, target
        self.settings = settings
        self.op_types, self.reduce_range, self.large = op_types, reduce_range, large
        self.reordered = False

    def write(self, graph: Any) -> list[float_retry.KeptFloat]:
        """Quantize, retrying with the nodes ORT fails on kept float; the nodes so kept."""
        try:
            return float_retry.quantize_with_retries(
                self.attempt, graph, list(self.settings.nodes_to_exclude)
            )
        except (
            Exception
        ) as exc:  # ORT's quantizer or loader, after the retries: one line, what to do
            raise ort_failures.after_retries("quantize_dynamic", exc) from exc

    def attempt(self, excluded: list[str]) -> None:
        model, names = self.source, excluded
        retried = [n for n in excluded if n not in self.settings.nodes_to_exclude]
        if (
            retried and not self.large
        ):  # a Gemm float_retry keeps float needs ORT's rewrite done first
            rewritten = self.scratch / "float_gemms" / self.source.name
            rewritten.parent.mkdir(exist_ok=True)
            extra = float_retry.float_gemms(self.source, retried, rewritten)
            model, names = (rewritten, [*excluded, *extra]) if extra else (model, names)
        _quantize(
            model,
            self.target,
            replace(self.settings, nodes_to_exclude=tuple(names)),
            self.op_types,
            self.reduce_range,
            self.large,
        )
        onnx_model.cap_ir_version(self.target)
        # ORT's quantizers can leave a graph with If/Loop subgraphs out of order (onnx.checker refuses it).
        self.reordered = onnx_model.resort_if_needed(self.target)
        onnx_model.check(self.target)


def _quantize(
    source: Path,
    target: Path,
    settings: DynamicSettings,
    op_types: list[str],
    reduce_range: bool,
    large: bool,
) -> None:
    """ORT's quantize_dynamic from `source` to `target` (its failures go to float_retry as they are)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Without a default type, weights whose dtype ORT cannot infer on a transformer-fused graph fail with
    # "Unable to find data type for weight_name".
    extra = {"DefaultTensorType": onnx.TensorProto.FLOAT, **settings.extra_options}
    quantize_dynamic(
        str(source),
        str(target),
        op_types_to_quantize=op_types,
        per_channel=settings.per_channel,
        reduce_range=reduce_range,
        weight_type=getattr(QuantType, settings.weight_type),
        nodes_to_exclude=list(settings.nodes_to_exclude) or None,
        use_external_data_format=large,
        extra_options=extra,
    )


def _nothing_quantized(source: Path, op_types: list[str], left: list[str]) -> StageError:
    """The error for a model in which ORT quantized no node: why, and whether the default left Conv float."""
    why_not = quantized_graph.nothing_quantized(source, op_types)
    if left:
        why_not += (
            f" ({', '.join(left)} is left float by default: dynamic ConvInteger runs slower than fp32 "
            "on CPUs; quantize_static is the fast path for convolutions, or name it to try anyway)"
        )
    return StageError(f"quantize_dynamic quantized nothing: {why_not}")


def _with_left_float(why: str, left: list[str]) -> str:
    """The summary's reason for reduce_range, followed by the op types left float by default (if any)."""
    floated = (
        f"{', '.join(left)} left float (slower than fp32 when quantized dynamically; "
        "name it in op_types_to_quantize to try)"
        if left
        else ""
    )
    return "; ".join(part for part in (why, floated) if part)
