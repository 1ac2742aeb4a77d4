"""The model quantize_static hands ORT's quantizer, and the nodes it keeps in float: every node named (exclusion
goes by name), the node and op type names and the calibration table's coverage checked against the model, an
opset-12 model moved to 13 for per-channel, and the nodes kept in float chosen. Split from the stage so that it
reads as the stage's steps; the checks fail with what to change, before ORT fails with less."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ortflow.api import StageError, suggest
from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import quantized_graph

if TYPE_CHECKING:  # onnx is imported where a model is read (a plan stays light)
    from onnx import ModelProto, NodeProto

    from ortflow.stages.quantization.ort_quantizer import StaticSettings

MIN_COVERAGE = 0.5  # share of the model's float activations the table must describe


@dataclass(frozen=True)
class StaticModel:
    """The model to quantize and what preparing it chose."""

    path: Path  # the given model's file, or the saved copy when nodes were named or the opset upgraded
    kept_float: list[str]  # the nodes kept in float, sorted
    around_masks: list[str]  # of those, the ones reading or writing a mask tensor, sorted
    opset_upgraded_from: int | None  # None when the opset was not changed


@dataclass(frozen=True)
class FloatChoice:
    """What preparing reads of quantize_static's parameters: the names to check, the nodes kept float,
    and whether scales are per channel (`op_types_to_quantize` already a list: op_table.without_auto)."""

    nodes_to_exclude: tuple[str, ...]
    op_types_to_quantize: tuple[str, ...]
    keep_float_op_types: tuple[str, ...]
    keep_float_first: int
    keep_float_last: int
    per_channel: bool

    @classmethod
    def of(cls, settings: StaticSettings) -> FloatChoice:
        """From quantize_static's settings, read with `auto` as every op type (op_table.without_auto)."""
        return cls(
            settings.nodes_to_exclude,
            tuple(settings.op_types()),
            settings.keep_float_op_types,
            settings.keep_float_first,
            settings.keep_float_last,
            settings.per_channel,
        )


def prepare(
    model_path: Path,
    asked: FloatChoice,
    calibrated: set[str],
    masks: set[str],
    destination: Path,
) -> StaticModel:
    """Check the table and the node and op names against the model, name unnamed nodes (exclusion goes
    by name), move an opset-12 model to 13 for per-channel, and choose the nodes kept in float (saving the
    changed model to `destination`)."""

    # A model over 2 GB is prepared as its graph alone (its weights stay in the data files the saved copy
    # names, beside it): ONNX's shape inference in the coverage check serializes the whole model, and protobuf
    # fails past 2 GB ("Failed to serialize proto").
    large = onnx_model.needs_external_data(onnx_model.total_size(model_path))
    model = onnx_model.load_graph(model_path, external_data=not large)
    changed = _name_nodes(model)
    _check_names(model, asked)
    _check_coverage(model, asked, calibrated | masks)
    model, upgraded = _per_channel_opset(model, asked)
    excluded, around_masks = _kept_float(list(model.graph.node), asked, masks)
    if changed or upgraded is not None:
        model_path = onnx_model.save(model, destination)
    return StaticModel(model_path, excluded, around_masks, upgraded)


# -- the checks and choices of prepare, in order ----------------------------------------------------


def name_nodes(model: ModelProto) -> bool:
    """Name each unnamed node as quantize_static does before ORT's quantizer sees it (quantization_debug names
    the reference graph alike, so its culprits are names nodes_to_exclude takes). Whether any was."""
    return _name_nodes(model)


def _name_nodes(model: ModelProto) -> bool:
    """Name each unnamed node `<op type>_<index>`, since nodes are kept in float by name. Whether any was."""
    changed = False
    for index, node in enumerate(model.graph.node):
        if not node.name:
            node.name, changed = f"{node.op_type}_{index}", True
    return changed


def _check_names(model: ModelProto, asked: FloatChoice) -> None:
    """A node or op type name that matches nothing would silently exclude or quantize nothing: fail, with
    the nearest name the model has."""
    op_types = {n.op_type for n in model.graph.node}
    quantized_graph.check_excluded_nodes(model, list(asked.nodes_to_exclude))
    for field, names in (
        ("op_types_to_quantize", asked.op_types_to_quantize),
        ("keep_float_op_types", asked.keep_float_op_types),
    ):
        for op_type in names:
            if not _is_op_type(op_type):
                hint = (
                    suggest(op_type, op_types)
                    or "op types are ONNX names such as MatMul, Conv, Gather"
                )
                raise StageError(
                    f"{field}: '{op_type}' is not an ONNX or ONNX Runtime op type — {hint}"
                )


def _check_coverage(model: ModelProto, asked: FloatChoice, described: set[str]) -> None:
    """The table (its ranges and mask tensors: `described`) must cover at least MIN_COVERAGE of the float
    activations to quantize; less means it was calibrated on another graph, and ORT would fail on the
    first tensor it lacks with a message that does not say so."""
    nodes = list(model.graph.node)
    op_types = {n.op_type for n in nodes}
    floats = quantized_graph.float_tensors(model) - {t.name for t in model.graph.initializer}
    wanted = set(asked.op_types_to_quantize)
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


def _per_channel_opset(model: ModelProto, asked: FloatChoice) -> tuple[ModelProto, int | None]:
    """The model to quantize and the opset it was upgraded from (None when it was not). Per-channel
    DequantizeLinear (its `axis`) exists from opset 13; ORT's quantizer writes it into older models anyway,
    which onnx.checker then rejects: so per_channel moves an older model to opset 13."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    if not asked.per_channel or opset >= 13:
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
    nodes: list[NodeProto], asked: FloatChoice, masks: set[str]
) -> tuple[list[str], list[str]]:
    """The nodes to keep in float: those named, those of the keep_float op types, the first and last N
    quantizable ones, and every node reading or writing a mask tensor (its fills have no range in the
    table). Returns (all of them, sorted; the ones around masks, sorted)."""
    around_masks = {n.name for n in nodes if masks & (set(n.input) | set(n.output))}
    kept = {n.name for n in nodes if n.op_type in asked.keep_float_op_types}
    quantizable = [
        n.name for n in nodes if n.op_type in ("MatMul", "Gemm", "Conv", "ConvTranspose")
    ]
    if asked.keep_float_first:
        kept.update(quantizable[: asked.keep_float_first])
    if asked.keep_float_last:
        kept.update(quantizable[-asked.keep_float_last :])
    return sorted(set(asked.nodes_to_exclude) | kept | around_masks), sorted(around_masks)


def _is_op_type(name: str) -> bool:
    import onnx
    from onnxruntime.quantization.registry import (
        IntegerOpsRegistry,
        QDQRegistry,
        QLinearOpsRegistry,
    )

    return onnx.defs.has(name) or name in {*IntegerOpsRegistry, *QDQRegistry, *QLinearOpsRegistry}
