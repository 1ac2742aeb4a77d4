"""quantize_static: INT8 (or 16-bit) static quantization from a calibration table, QDQ or QOperator."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ortflow.api import (
    ArtifactKind,
    Params,
    Port,
    StageContext,
    StageError,
    StageResult,
    json_value,
    settings_of,
)
from ortflow.api import onnx as onnx_model
from ortflow.api.ports import metrics_out, model_in, model_out, samples_in
from ortflow.stages.quantization import (
    calibration_table,
    float_retry,
    isa,
    op_table,
    ort_failures,
    pre_processing,
    quantized_graph,
    sanity,
    static_model,
    traps,
)
from ortflow.stages.quantization.isa import REDUCE_RANGE_PARAM
from ortflow.stages.quantization.ort_quantizer import (
    EXTRA_OPTIONS,
    QUANT_TYPES,
    OrtQuantizer,
    StaticMetrics,
    StaticSettings,
)
from ortflow.stages.quantization.sanity_metrics import SanityMetrics


class QuantizeStatic(OrtQuantizer):
    type = "quantize_static"
    # 3: reduce_range auto; 4: the sanity check; 5: the sanity numbers in the run record, not metrics.json;
    # 6: pre_process auto (the default), and a table calibrated on the other graph (pre-processed or not) refused;
    # 7: reduce_range auto decided from the saturation emulation (on the pre-processed graph, its real samples);
    # 8: the emulation measures the op types op_table resolved `op_types_to_quantize: auto` to (7 gave it
    # ["auto"], which matched no op, so a saturating target fell back to the rule of thumb)
    version = "8"
    libraries = ("onnxruntime", "onnx", "numpy")
    description = (
        "Static quantization with onnxruntime.quantization.quantize_static, reading the ranges from a "
        "calibrate stage's table (no re-calibration). Reports the quantized op counts, and fails when no "
        "activation got quantized (e.g. a fused transformer graph whose Attention ops ORT leaves in float), "
        "since such a model is weight-only and usually slower than fp32. Where ORT's quantizer fails on a node, "
        "or writes a model ORT cannot load, that node is kept float and the quantizer run again (at most 8 "
        "times; the summary and metrics name them)."
    )
    inputs = (
        model_in("the fp32 model (the one the table was calibrated on)"),
        Port("calibration", ArtifactKind.CALIBRATION_TABLE, "a calibrate stage's table"),
        samples_in(),
    )
    outputs = (
        model_out("the quantized model"),
        metrics_out("quantized op counts, sizes, excluded nodes"),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "format": {
                "enum": ["QDQ", "QOperator"],
                "default": "QDQ",
                "description": "QDQ (ORT's recommendation) or QOperator",
            },
            "activation_type": {
                "enum": [*QUANT_TYPES],
                "default": "QUInt8",
                "description": "activations; unsigned 8-bit is several times faster on x86 VNNI CPUs",
            },
            "weight_type": {"enum": [*QUANT_TYPES], "default": "QInt8", "description": "weights"},
            "per_channel": {
                "type": "boolean",
                "default": False,
                "description": "one scale per output channel of each weight",
            },
            "reduce_range": REDUCE_RANGE_PARAM,
            "op_types_to_quantize": op_table.OP_TYPES_PARAM,
            "nodes_to_exclude": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "node names to keep in float",
            },
            "keep_float_op_types": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "keep every node of these types in float, e.g. [Softmax, LayerNormalization]",
            },
            "keep_float_first": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "keep the first N quantizable nodes (in graph order) in float",
            },
            "keep_float_last": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "keep the last N quantizable nodes in float",
            },
            "pre_process": pre_processing.PRE_PROCESS_PARAM,
            "allow_weight_only": {
                "type": "boolean",
                "default": False,
                "description": "accept a result in which no activation was quantized",
            },
            "extra_options": {
                "type": "object",
                "propertyNames": {"enum": [*EXTRA_OPTIONS]},
                "default": {},
                "description": "ORT's extra_options, e.g. {ActivationSymmetric: true}",
            },
            **traps.TRAP_PARAMS,
            **sanity.SANITY_PARAMS,
        },
    }

    def check(self, params: Params) -> list[str]:
        read = settings_of(StaticSettings, params)  # validated against the schema first
        form, activation_type, weight_type = read.format, read.activation_type, read.weight_type
        problems = []
        if read.extra_options.get("SmoothQuant"):
            problems.append(
                "SmoothQuant re-calibrates inside quantize_static, which takes a calibrate stage's table;"
                " it is not supported here yet"
            )
        if form == "QOperator" and "16" in activation_type + weight_type:
            problems.append("16-bit types need format QDQ")
        if activation_type == "QInt8" and weight_type == "QUInt8":
            problems.append(
                "ORT does not support int8 activations with uint8 weights — use QInt8 weights"
            )
        return problems

    def run(self, ctx: StageContext) -> StageResult:
        early = settings_of(StaticSettings, op_table.without_auto(dict(ctx.params)))  # auto: all
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)  # ORT writes beside it
        onnx_model.load_for_ort(source)
        prepared = pre_processing.prepare(source, ctx.scratch, early.pre_process)
        table_path = ctx.scratch / "calibration.json"
        table, masks = self._read_table(ctx.path("calibration"), table_path, prepared)
        chosen = static_model.prepare(
            prepared.model,
            static_model.FloatChoice.of(early),
            set(table.data),
            set(masks),
            prepared.model.parent / "prepared.onnx",
        )
        model = chosen.path
        graph = onnx_model.load_graph(model)
        resolved, rule = op_table.rule(dict(ctx.params), ctx.env, graph, "quantize_static")
        settings = settings_of(StaticSettings, resolved)
        found = _find_traps(model, table, settings)
        excluded = sorted(set(chosen.kept_float) | found.nodes() | set(settings.nodes_to_exclude))
        what = isa.Quantized(model, settings.op_types(), excluded, isa.samples(ctx, model))
        reduce_range, why = isa.static_reduce_range(
            settings, ctx.env, what, traps.table_ranges(table)
        )
        settings = replace(settings, reduce_range=reduce_range)
        target, reordered, kept = self._write(
            model, ctx.output_path("model"), settings, (table, table_path), excluded
        )
        excluded = sorted({*excluded, *(k.node for k in kept)})
        part = _quantized_metrics(settings, (model, target), excluded)
        before, after = onnx_model.total_size(source), onnx_model.total_size(target)
        metrics = {
            **part,
            "mask_nodes_kept_float": chosen.around_masks,
            "traps_kept_float": found.metrics(),
            **({"kept_float_after_ort_failures": [k.as_dict() for k in kept]} if kept else {}),
            "opset_upgraded_from": chosen.opset_upgraded_from,
            **({"op_types_auto": rule.metrics()} if rule else {}),
            **prepared.metrics(),
            "bytes_before": before,
            "bytes_after": after,
            **({"nodes_reordered_after_ort": True} if reordered else {}),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        measured: dict[str, SanityMetrics] = {}  # sanity's numbers, for the run record's metrics
        checked = sanity.verify_quantized(ctx, settings, model, target, measured)
        ratio = after / before
        notes = [why, rule.summary() if rule else "", _traps_text(found) if found.nodes() else ""]
        notes = [n for n in [*notes, float_retry.summary(kept), checked, prepared.summary()] if n]
        return StageResult(
            summary=_headline(settings, part["quantized_by_op_type"], ratio)
            + "".join(f"; {n}" for n in notes),
            metrics={
                "quantized": json_value(part["quantized_by_op_type"]),
                "size_ratio": round(ratio, 3),
                "reduce_range": reduce_range,
                **{name: json_value(found) for name, found in measured.items()},
                **prepared.metrics(),
            },
        )

    # -- the steps of run, in order ------------------------------------------------------------------

    @staticmethod
    def _read_table(
        given: Path, private: Path, prepared: pre_processing.Prepared
    ) -> tuple[Any, list[str]]:
        """Copy the calibrate stage's table to `private` (ORT may rewrite its cache file) and read it:
        (ORT's TensorsData, the mask tensors calibrate left out of it). A table calibrated on the other
        graph than `prepared` (pre-processed or not) is refused."""
        from onnxruntime.quantization.calibrate import load_tensors_data

        private.write_bytes(given.read_bytes())
        try:
            found = load_tensors_data(private), calibration_table.mask_tensors(private)
        except Exception as exc:
            raise StageError(f"{given.name} is not a calibration table: {exc}") from exc
        pre_processing.check_same_graph(calibration_table.pre_processed(private), prepared)
        return found

    @classmethod
    def _write(
        cls,
        model: Path,
        output: Path,
        settings: StaticSettings,
        calibration: tuple[Any, Path],
        excluded: list[str],
    ) -> tuple[Path, bool, list[float_retry.KeptFloat]]:
        """ORT's quantize_static, the result repaired and loaded once; where ORT fails or writes a model it
        cannot load, again with the node it names kept float (float_retry). (file, re-sorted, kept float)"""
        written: list[
            tuple[Path, bool]
        ] = []  # each attempt that ORT got through: (file, re-sorted)

        def attempt(floated: list[str]) -> None:
            target = cls._quantize(model, output, settings, *calibration, floated)
            written.append((target, _repair(target)))  # _repair loads it in ORT

        graph = onnx_model.load_graph(model).graph
        try:
            kept = float_retry.quantize_with_retries(attempt, graph, excluded)
        except (
            Exception
        ) as exc:  # ORT's quantizer or loader, after the retries: one line, what to do
            raise ort_failures.after_retries("quantize_static", exc) from exc
        target, reordered = written[-1]
        return target, reordered, kept

    @staticmethod
    def _quantize(
        model: Path,
        output: Path,
        settings: StaticSettings,
        table: Any,
        table_path: Path,
        excluded: list[str],
    ) -> Path:
        """Run ORT's quantize_static with the table's ranges (no calibration data reader: nothing is
        re-calibrated). Returns the quantized model's file (a folder's file for a model over 2 GB)."""
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
        from onnxruntime.quantization.calibrate import CalibrationMethod

        large = onnx_model.needs_external_data(onnx_model.total_size(model))
        target = onnx_model.output_file(output, large)
        # ORT's quantizer: its failures go to float_retry (in run) as they are
        quantize_static(
            str(model),
            str(target),
            calibration_data_reader=None,
            quant_format=QuantFormat.QDQ if settings.format == "QDQ" else QuantFormat.QOperator,
            op_types_to_quantize=settings.op_types() or None,
            per_channel=settings.per_channel,
            reduce_range=settings.reduce_range,
            activation_type=getattr(QuantType, settings.activation_type),
            weight_type=getattr(QuantType, settings.weight_type),
            nodes_to_exclude=excluded or None,
            use_external_data_format=large,
            calibrate_method=getattr(
                CalibrationMethod, table.calibration_method.name, CalibrationMethod.MinMax
            ),
            extra_options=dict(settings.extra_options),
            calibration_cache_path=str(table_path),
        )
        return target


def _repair(target: Path) -> bool:
    """Make ORT's output a model onnx.checker accepts: its IR version capped, its nodes re-sorted where
    ORT's quantizers left a graph with If/Loop subgraphs out of order. Whether they were re-sorted."""
    onnx_model.cap_ir_version(target)
    reordered = onnx_model.resort_if_needed(target)
    onnx_model.check(target)
    return reordered


def _check_quantized(
    model: Path, by_op_type: Mapping[str, int], activations: int, settings: StaticSettings
) -> None:
    """Refuse a result with nothing quantized, or (unless allowed) with weights only: neither is faster than fp32."""
    if not by_op_type:
        asked = settings.op_types() or sorted(_registry(settings.format))
        raise StageError(
            f"quantize_static quantized nothing: {quantized_graph.nothing_quantized(model, asked)}"
        )
    if not activations and not settings.allow_weight_only:
        raise StageError(
            "no activation was quantized: the result is weight-only, and usually slower than fp32 "
            f"(quantized inputs by op type: {dict(by_op_type) or 'none'}). On a transformer-fused "
            "graph ORT leaves Attention and the fused LayerNorms in float: quantize the unfused model instead, "
            "or set allow_weight_only: true"
        )


def _find_traps(model: Path, table: Any, settings: StaticSettings) -> traps.Traps:
    """The nodes that quantize badly with the table's ranges (none looked for unless avoid_traps)."""
    if not settings.avoid_traps:
        return traps.Traps()
    return traps.find_traps(
        list(onnx_model.load_graph(model).graph.node),
        traps.table_ranges(table),
        settings.mixed_range_ratio,
    )


def _quantized_metrics(
    settings: StaticSettings, models: tuple[Path, Path], excluded: list[str]
) -> StaticMetrics:
    """metrics.json's first part: the settings, and what ORT quantized and kept in float (`models`: the
    float model, the quantized one); a result with nothing quantized, or weights only, refused first."""
    model, target = models
    quantized = quantized_graph.quantized_ops(target)
    activations = quantized["activations"]
    _check_quantized(model, quantized["by_op_type"], activations, settings)
    counts = onnx_model.op_counts(target)
    quantized_ops = dict(sorted(quantized["by_op_type"].items()))
    return {
        "format": settings.format,
        "activation_type": settings.activation_type,
        "weight_type": settings.weight_type,
        "per_channel": settings.per_channel,
        "reduce_range": settings.reduce_range,
        "quantized_by_op_type": quantized_ops,
        "quantized_activations": activations,
        "QuantizeLinear": counts.get("QuantizeLinear", 0),
        "DequantizeLinear": counts.get("DequantizeLinear", 0),
        "nodes_kept_float": excluded,
        "quantized_nodes": quantized_graph.quantized_node_names(
            model, target, _registry(settings.format)
        ),
    }


def _headline(settings: StaticSettings, by_op_type: Mapping[str, int], ratio: float) -> str:
    """The summary's first part: format, types, the quantized op counts and the size ratio."""
    ops = ", ".join(f"{op} {n}" for op, n in by_op_type.items())
    return (
        f"{settings.format} {settings.activation_type}/{settings.weight_type}: {ops}; "
        f"size x{ratio:.2f}"
    )


def _traps_text(found: traps.Traps) -> str:
    parts = [
        f"Concat {name} (ranges x{ratio:.0f} apart)"
        for name, ratio in sorted(found.mixed_concats.items())[:2]
    ]
    kinds = sorted({label.split(" at ")[0] for label in found.decomposed})
    parts += [
        f"{sum(1 for k in found.decomposed if k.startswith(kind))} {kind} as primitive ops"
        for kind in kinds
    ]
    return "kept in float: " + ", ".join(parts)


def _registry(quant_format: str) -> set[str]:
    """The op types ORT's static quantizer handles in this format."""
    from onnxruntime.quantization.registry import QDQRegistry, QLinearOpsRegistry

    return set(QDQRegistry if quant_format == "QDQ" else QLinearOpsRegistry)
