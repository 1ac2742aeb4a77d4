"""quantize_static: INT8 (or 16-bit) static quantization from a calibration table, QDQ or QOperator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ortflow.api import ArtifactKind, Port, Stage, StageContext, StageError, StageResult, suggest
from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import (
    calibration_table,
    isa,
    ort_failures,
    pre_processing,
    quantized_graph,
    sanity,
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
MIN_COVERAGE = 0.5  # share of the model's float activations the table must describe


class QuantizeStatic(Stage):
    type = "quantize_static"
    # 3: reduce_range auto; 4: the sanity check; 5: the sanity numbers in the run record, not metrics.json;
    # 6: pre_process auto (the default), and a table calibrated on the other graph (pre-processed or not) refused
    version = "6"
    description = (
        "Static quantization with onnxruntime.quantization.quantize_static, reading the ranges from a "
        "calibrate stage's table (no re-calibration). Reports the quantized op counts, and fails when no "
        "activation got quantized (e.g. a fused transformer graph whose Attention ops ORT leaves in float), "
        "since such a model is weight-only and usually slower than fp32."
    )
    inputs = (
        Port(
            "model", ArtifactKind.ONNX_MODEL, "the fp32 model (the one the table was calibrated on)"
        ),
        Port("calibration", ArtifactKind.CALIBRATION_TABLE, "a calibrate stage's table"),
        Port(
            "data",
            ArtifactKind.DATASET,
            "a few samples for the sanity check (default: random feeds)",
            optional=True,
        ),
    )
    outputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the quantized model", filename="model.onnx"),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "quantized op counts, sizes, excluded nodes",
            filename="metrics.json",
        ),
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
                "enum": QUANT_TYPES,
                "default": "QUInt8",
                "description": "activations; unsigned 8-bit is several times faster on x86 VNNI CPUs",
            },
            "weight_type": {"enum": QUANT_TYPES, "default": "QInt8", "description": "weights"},
            "per_channel": {
                "type": "boolean",
                "default": False,
                "description": "one scale per output channel of each weight",
            },
            "reduce_range": REDUCE_RANGE_PARAM,
            "op_types_to_quantize": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "only these op types (default: every type ORT can quantize)",
            },
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
                "propertyNames": {"enum": EXTRA_OPTIONS},
                "default": {},
                "description": "ORT's extra_options, e.g. {ActivationSymmetric: true}",
            },
            **traps.TRAP_PARAMS,
            **sanity.SANITY_PARAMS,
        },
    }

    def check(self, params: dict[str, Any]) -> list[str]:
        problems = []
        if params["extra_options"].get("SmoothQuant"):
            problems.append(
                "SmoothQuant re-calibrates inside quantize_static, which takes a calibrate stage's table;"
                " it is not supported here yet"
            )
        if (
            params["format"] == "QOperator"
            and "16" in params["activation_type"] + params["weight_type"]
        ):
            problems.append("16-bit types need format QDQ")
        if params["activation_type"] == "QInt8" and params["weight_type"] == "QUInt8":
            problems.append(
                "ORT does not support int8 activations with uint8 weights — use QInt8 weights"
            )
        return problems

    def env_facts(self, params: dict[str, Any]) -> tuple[str, ...]:
        return ("onnxruntime", "onnx", "numpy") + (("target_isa",) if isa.needs_isa(params) else ())

    def run(self, ctx: StageContext) -> StageResult:
        reduce_range, why = isa.reduce_range(
            ctx.params,
            ctx.env,
            onnx_model.op_counts(onnx_model.model_file(ctx.path("model"))),
            u8_activations=ctx.params["activation_type"] == "QUInt8",
        )
        params = {**ctx.params, "reduce_range": reduce_range}
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)  # ORT writes beside it
        onnx_model.load_for_ort(source)
        prepared = pre_processing.prepare(source, ctx.scratch, params["pre_process"])
        model = prepared.model
        table_path = (
            ctx.scratch / "calibration.json"
        )  # a private copy: ORT may rewrite its cache file
        table, masks = self._read_table(ctx.path("calibration"), table_path)
        pre_processing.check_same_graph(calibration_table.pre_processed(table_path), prepared)
        model, excluded, around_masks, upgraded = self._prepare(
            model, params, set(table.data), set(masks), model.parent / "prepared.onnx"
        )
        found = (
            traps.find_traps(
                list(onnx_model.load_graph(model).graph.node),
                traps.table_ranges(table),
                params["mixed_range_ratio"],
            )
            if params["avoid_traps"]
            else traps.Traps()
        )
        excluded = sorted(set(excluded) | found.nodes())
        target = self._quantize(
            model, ctx.output_path("model"), params, table, table_path, excluded
        )
        onnx_model.cap_ir_version(target)
        # ORT's quantizers can leave a graph with If/Loop subgraphs out of order (onnx.checker refuses it).
        reordered = onnx_model.resort_if_needed(target)
        onnx_model.check(target)
        counts = onnx_model.op_counts(target)
        quantized = quantized_graph.quantized_ops(target)
        _check_quantized(model, quantized, params)
        metrics = {
            "format": params["format"],
            "activation_type": params["activation_type"],
            "weight_type": params["weight_type"],
            "per_channel": params["per_channel"],
            "reduce_range": reduce_range,
            "quantized_by_op_type": dict(sorted(quantized["by_op_type"].items())),
            "quantized_activations": quantized["activations"],
            "QuantizeLinear": counts.get("QuantizeLinear", 0),
            "DequantizeLinear": counts.get("DequantizeLinear", 0),
            "nodes_kept_float": excluded,
            "quantized_nodes": quantized_graph.quantized_node_names(
                model, target, _registry(params["format"])
            ),
            "mask_nodes_kept_float": around_masks,
            "traps_kept_float": found.metrics(),
            "opset_upgraded_from": upgraded,
            **prepared.metrics(),
            "bytes_before": onnx_model.total_size(source),
            "bytes_after": onnx_model.total_size(target),
            **({"nodes_reordered_after_ort": True} if reordered else {}),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        measured: dict[str, Any] = {}
        checked = sanity.verify_quantized(ctx, model, target, measured)
        ops = ", ".join(f"{op} {n}" for op, n in sorted(quantized["by_op_type"].items()))
        ratio = metrics["bytes_after"] / metrics["bytes_before"]
        summary = f"{params['format']} {params['activation_type']}/{params['weight_type']}: {ops}; size x{ratio:.2f}"
        summary += (
            (f"; {why}" if why else "")
            + (f"; {_traps_text(found)}" if found.nodes() else "")
            + f"; {checked}"
        )
        summary += f"; {prepared.summary()}" if prepared.summary() else ""
        return StageResult(
            summary=summary,
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

    @staticmethod
    def _prepare(
        model_path: Path,
        params: dict[str, Any],
        calibrated: set[str],
        masks: set[str],
        destination: Path,
    ) -> tuple[Path, list[str], list[str], int | None]:
        """Check the table and the node and op names against the model, name unnamed nodes (exclusion goes
        by name), move an opset-12 model to 13 for per-channel, and choose the nodes kept in float.
        Returns (model to quantize, nodes kept in float, of those the ones around masks, opset upgraded from)."""

        # A model over 2 GB is prepared as its graph alone (its weights stay in the data files the saved copy
        # names, beside it): ONNX's shape inference in the coverage check serializes the whole model, and protobuf
        # fails past 2 GB ("Failed to serialize proto").
        large = onnx_model.total_size(model_path) > onnx_model.TWO_GB
        model = onnx_model.load_graph(model_path, external_data=not large)
        changed = _name_nodes(model)
        _check_names(model, params)
        _check_coverage(model, params, calibrated | masks)
        model, upgraded = _per_channel_opset(model, params)
        excluded, around_masks = _kept_float(list(model.graph.node), params, masks)
        if changed or upgraded is not None:
            model_path = onnx_model.save(model, destination)
        return model_path, excluded, around_masks, upgraded

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

        large = onnx_model.total_size(model) > onnx_model.TWO_GB
        target = onnx_model.output_file(output, large)
        try:
            quantize_static(
                str(model),
                str(target),
                calibration_data_reader=None,
                quant_format=QuantFormat.QDQ
                if params["format"] == "QDQ"
                else QuantFormat.QOperator,
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
        except Exception as exc:  # ORT's quantizer: its failures become one line with what to do
            raise ort_failures.quantizer_failed("quantize_static", exc) from exc
        return target


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


# -- the checks and choices of _prepare, in order ----------------------------------------------------


def _name_nodes(model: Any) -> bool:
    """Name each unnamed node `<op type>_<index>`, since nodes are kept in float by name. Whether any was."""
    changed = False
    for index, node in enumerate(model.graph.node):
        if not node.name:
            node.name, changed = f"{node.op_type}_{index}", True
    return changed


def _check_names(model: Any, params: dict[str, Any]) -> None:
    """A node or op type name that matches nothing would silently exclude or quantize nothing: fail, with
    the nearest name the model has."""
    op_types = {n.op_type for n in model.graph.node}
    quantized_graph.check_excluded_nodes(model, params["nodes_to_exclude"])
    for field in ("op_types_to_quantize", "keep_float_op_types"):
        for op_type in params[field]:
            if not _is_op_type(op_type):
                hint = (
                    suggest(op_type, op_types)
                    or "op types are ONNX names such as MatMul, Conv, Gather"
                )
                raise StageError(
                    f"{field}: '{op_type}' is not an ONNX or ONNX Runtime op type — {hint}"
                )


def _check_coverage(model: Any, params: dict[str, Any], described: set[str]) -> None:
    """The table (its ranges and mask tensors: `described`) must cover at least MIN_COVERAGE of the float
    activations to quantize; less means it was calibrated on another graph, and ORT would fail on the
    first tensor it lacks with a message that does not say so."""
    nodes = list(model.graph.node)
    op_types = {n.op_type for n in nodes}
    floats = quantized_graph.float_tensors(model) - {t.name for t in model.graph.initializer}
    wanted = set(params["op_types_to_quantize"])
    if wanted and not wanted & op_types:
        raise StageError(
            f"op_types_to_quantize: the model has no {', '.join(sorted(wanted))} node "
            f"(its op types: {', '.join(sorted(op_types))})"
        )
    activations = {
        o for n in nodes if not wanted or n.op_type in wanted for o in [*n.input, *n.output]
    } & floats
    covered = len(activations & described) / max(1, len(activations))
    if covered < MIN_COVERAGE:
        raise StageError(
            f"the calibration table describes only {covered:.0%} of the activations to quantize: it was calibrated "
            "on another graph — give calibrate and quantize_static the same model and the same pre_process"
        )


def _per_channel_opset(model: Any, params: dict[str, Any]) -> tuple[Any, int | None]:
    """The model to quantize and the opset it was upgraded from (None when it was not). Per-channel
    DequantizeLinear (its `axis`) exists from opset 13; ORT's quantizer writes it into older models anyway,
    which onnx.checker then rejects: so per_channel moves an older model to opset 13."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    if not params["per_channel"] or opset >= 13:
        return model, None
    from onnx import version_converter

    try:
        return version_converter.convert_version(model, 13), opset
    except Exception as exc:
        raise StageError(
            f"per_channel needs opset 13 and converting this opset-{opset} model failed: {exc}"
            " — set per_channel: false"
        ) from exc


def _kept_float(
    nodes: list[Any], params: dict[str, Any], masks: set[str]
) -> tuple[list[str], list[str]]:
    """The nodes to keep in float: those named, those of the keep_float op types, the first and last N
    quantizable ones, and every node reading or writing a mask tensor (its fills have no range in the
    table). Returns (all of them, sorted; the ones around masks, sorted)."""
    around_masks = {n.name for n in nodes if masks & (set(n.input) | set(n.output))}
    kept = {n.name for n in nodes if n.op_type in params["keep_float_op_types"]}
    quantizable = [
        n.name for n in nodes if n.op_type in ("MatMul", "Gemm", "Conv", "ConvTranspose")
    ]
    if params["keep_float_first"]:
        kept.update(quantizable[: params["keep_float_first"]])
    if params["keep_float_last"]:
        kept.update(quantizable[-params["keep_float_last"] :])
    return sorted(set(params["nodes_to_exclude"]) | kept | around_masks), sorted(around_masks)


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


def _is_op_type(name: str) -> bool:
    import onnx
    from onnxruntime.quantization.registry import (
        IntegerOpsRegistry,
        QDQRegistry,
        QLinearOpsRegistry,
    )

    return onnx.defs.has(name) or name in {*IntegerOpsRegistry, *QDQRegistry, *QLinearOpsRegistry}
