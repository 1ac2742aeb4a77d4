"""quantize_static: INT8 (or 16-bit) static quantization from a calibration table, QDQ or QOperator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ortflow.api import ArtifactKind, Params, Port, Stage, StageContext, StageError, StageResult
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

QUANT_TYPES = ["QInt8", "QUInt8", "QInt16", "QUInt16"]
# onnxruntime.quantization's extra_options for static quantization (quantize_static's docstring, ORT 1.31).
EXTRA_OPTIONS = [
    "ActivationRestrictedAsymmetric",
    "ActivationSymmetric",
    "AddQDQPairToWeight",
    "DedicatedQDQPair",
    "EnableSubgraph",
    "ForceQuantizeNoInputCheck",
    "MatMulConstBOnly",
    "MinimumRealRange",
    "OpTypesToExcludeOutputQuantization",
    "QDQDisableWeightAdjustForInt32Bias",
    "QDQKeepRemovableActivations",
    "QDQOpTypePerChannelSupportToAxis",
    "SmoothQuant",
    "SmoothQuantAlpha",
    "SmoothQuantFolding",
    "TensorQuantOverrides",
    "UseQDQContribOps",
    "WeightSymmetric",
]


class QuantizeStatic(Stage):
    type = "quantize_static"
    # 3: reduce_range auto; 4: the sanity check; 5: the sanity numbers in the run record, not metrics.json;
    # 6: pre_process auto (the default), and a table calibrated on the other graph (pre-processed or not) refused;
    # 7: reduce_range auto decided from the saturation emulation (on the pre-processed graph, its real samples)
    version = "7"
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
        # validated against the schema first: three strings, and a mapping of ORT's extra options
        form, activation_type, weight_type = (
            str(params[k]) for k in ("format", "activation_type", "weight_type")
        )
        extra = params["extra_options"]
        problems = []
        if isinstance(extra, Mapping) and extra.get("SmoothQuant"):
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

    def env_facts(self, params: Params) -> tuple[str, ...]:
        plain = dict(params)  # isa and op_table read the parameters by key
        needs = (("target_isa",) if isa.needs_isa(plain) else ()) + op_table.env_facts(plain)
        return ("onnxruntime", "onnx", "numpy") + tuple(dict.fromkeys(needs))

    def run(self, ctx: StageContext) -> StageResult:
        asked = dict(ctx.params)
        params = op_table.without_auto(asked)
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)  # ORT writes beside it
        onnx_model.load_for_ort(source)
        prepared = pre_processing.prepare(source, ctx.scratch, params["pre_process"])
        # a private copy: ORT may rewrite its cache file
        table_path = ctx.scratch / "calibration.json"
        table, masks = self._read_table(ctx.path("calibration"), table_path)
        pre_processing.check_same_graph(calibration_table.pre_processed(table_path), prepared)
        chosen = static_model.prepare(
            prepared.model,
            params,
            set(table.data),
            set(masks),
            prepared.model.parent / "prepared.onnx",
        )
        model = chosen.path
        params, rule = op_table.rule(
            asked, ctx.env, onnx_model.load_graph(model), "quantize_static"
        )
        found = _find_traps(model, table, params)
        excluded = sorted(set(chosen.kept_float) | found.nodes() | set(params["nodes_to_exclude"]))
        reduce_range, why = isa.static_reduce_range(ctx, model, traps.table_ranges(table), excluded)
        params["reduce_range"] = reduce_range
        target, reordered, kept = self._write(
            model, ctx.output_path("model"), params, (table, table_path), excluded
        )
        excluded = sorted({*excluded, *(k.node for k in kept)})
        quantized = quantized_graph.quantized_ops(target)
        _check_quantized(model, quantized, params)
        metrics = {
            **_quantized_metrics(params, model, target, quantized, excluded),
            "mask_nodes_kept_float": chosen.around_masks,
            "traps_kept_float": found.metrics(),
            **({"kept_float_after_ort_failures": [k.as_dict() for k in kept]} if kept else {}),
            "opset_upgraded_from": chosen.opset_upgraded_from,
            **({"op_types_auto": rule.metrics()} if rule else {}),
            **prepared.metrics(),
            "bytes_before": onnx_model.total_size(source),
            "bytes_after": onnx_model.total_size(target),
            **({"nodes_reordered_after_ort": True} if reordered else {}),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        measured: dict[str, Any] = {}
        checked = sanity.verify_quantized(ctx, model, target, measured)
        ratio = metrics["bytes_after"] / metrics["bytes_before"]
        notes = [why, rule.summary() if rule else "", _traps_text(found) if found.nodes() else ""]
        notes.append(float_retry.summary(kept))
        notes = [n for n in [*notes, checked, prepared.summary()] if n]
        return StageResult(
            summary=_headline(params, metrics) + "".join(f"; {note}" for note in notes),
            metrics={
                "quantized": metrics["quantized_by_op_type"],
                "size_ratio": round(ratio, 3),
                "reduce_range": reduce_range,
                **measured,
                **prepared.metrics(),
            },
        )

    # -- the steps of run, in order ------------------------------------------------------------------

    @staticmethod
    def _read_table(given: Path, private: Path) -> tuple[Any, list[str]]:
        """Copy the calibrate stage's table to `private` (ORT may rewrite its cache file) and read it:
        (ORT's TensorsData, the mask tensors calibrate left out of it)."""
        from onnxruntime.quantization.calibrate import load_tensors_data

        private.write_bytes(given.read_bytes())
        try:
            return load_tensors_data(private), calibration_table.mask_tensors(private)
        except Exception as exc:
            raise StageError(f"{given.name} is not a calibration table: {exc}") from exc

    @classmethod
    def _write(
        cls,
        model: Path,
        output: Path,
        params: dict[str, Any],
        calibration: tuple[Any, Path],
        excluded: list[str],
    ) -> tuple[Path, bool, list[float_retry.KeptFloat]]:
        """ORT's quantize_static, the result repaired and loaded once; where ORT fails or writes a model it
        cannot load, again with the node it names kept float (float_retry). (file, re-sorted, kept float)"""
        written: dict[str, Any] = {}

        def attempt(floated: list[str]) -> None:
            target = cls._quantize(model, output, params, *calibration, floated)
            written.update(target=target, reordered=_repair(target))  # _repair loads it in ORT

        graph = onnx_model.load_graph(model).graph
        try:
            kept = float_retry.quantize_with_retries(attempt, graph, excluded)
        except (
            Exception
        ) as exc:  # ORT's quantizer or loader, after the retries: one line, what to do
            raise ort_failures.after_retries("quantize_static", exc) from exc
        return written["target"], written["reordered"], kept

    @staticmethod
    def _quantize(
        model: Path,
        output: Path,
        params: dict[str, Any],
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
            quant_format=QuantFormat.QDQ if params["format"] == "QDQ" else QuantFormat.QOperator,
            op_types_to_quantize=params["op_types_to_quantize"] or None,
            per_channel=params["per_channel"],
            reduce_range=params["reduce_range"],
            activation_type=getattr(QuantType, params["activation_type"]),
            weight_type=getattr(QuantType, params["weight_type"]),
            nodes_to_exclude=excluded or None,
            use_external_data_format=large,
            calibrate_method=getattr(
                CalibrationMethod, table.calibration_method.name, CalibrationMethod.MinMax
            ),
            extra_options=dict(params["extra_options"]),
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


def _check_quantized(model: Path, quantized: dict[str, Any], params: dict[str, Any]) -> None:
    """Refuse a result with nothing quantized, or (unless allowed) with weights only: neither is faster than fp32."""
    if not quantized["by_op_type"]:
        asked = params["op_types_to_quantize"] or sorted(_registry(params["format"]))
        raise StageError(
            f"quantize_static quantized nothing: {quantized_graph.nothing_quantized(model, asked)}"
        )
    if not quantized["activations"] and not params["allow_weight_only"]:
        raise StageError(
            "no activation was quantized: the result is weight-only, and usually slower than fp32 "
            f"(quantized inputs by op type: {dict(quantized['by_op_type']) or 'none'}). On a transformer-fused "
            "graph ORT leaves Attention and the fused LayerNorms in float: quantize the unfused model instead, "
            "or set allow_weight_only: true"
        )


def _find_traps(model: Path, table: Any, params: dict[str, Any]) -> traps.Traps:
    """The nodes that quantize badly with the table's ranges (none looked for unless avoid_traps)."""
    if not params["avoid_traps"]:
        return traps.Traps()
    return traps.find_traps(
        list(onnx_model.load_graph(model).graph.node),
        traps.table_ranges(table),
        params["mixed_range_ratio"],
    )


def _quantized_metrics(
    params: dict[str, Any],
    model: Path,
    target: Path,
    quantized: dict[str, Any],
    excluded: list[str],
) -> dict[str, Any]:
    """metrics.json's first part: the settings, and what ORT quantized and kept in float."""
    counts = onnx_model.op_counts(target)
    return {
        "format": params["format"],
        "activation_type": params["activation_type"],
        "weight_type": params["weight_type"],
        "per_channel": params["per_channel"],
        "reduce_range": params["reduce_range"],
        "quantized_by_op_type": dict(sorted(quantized["by_op_type"].items())),
        "quantized_activations": quantized["activations"],
        "QuantizeLinear": counts.get("QuantizeLinear", 0),
        "DequantizeLinear": counts.get("DequantizeLinear", 0),
        "nodes_kept_float": excluded,
        "quantized_nodes": quantized_graph.quantized_node_names(
            model, target, _registry(params["format"])
        ),
    }


def _headline(params: dict[str, Any], metrics: dict[str, Any]) -> str:
    """The summary's first part: format, types, the quantized op counts and the size ratio."""
    ops = ", ".join(f"{op} {n}" for op, n in metrics["quantized_by_op_type"].items())
    ratio = metrics["bytes_after"] / metrics["bytes_before"]
    return f"{params['format']} {params['activation_type']}/{params['weight_type']}: {ops}; size x{ratio:.2f}"


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
