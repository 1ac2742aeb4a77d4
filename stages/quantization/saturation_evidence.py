"""Whether a model saturates MLAS's u8 x s8 kernels without VNNI, measured per model (saturation.py emulates the
kernel): the quantizable MatMul/Gemm/Conv nodes with constant weights, their inputs from real samples run
through the float model (or, without samples, only the worst case the calibrated ranges allow), and, where
some saturate, how that reaches the model's outputs (saturation_outputs.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ortflow.api import onnx as onnx_model
from ortflow.stages.quantization import calibration_passes, saturation_outputs
from ortflow.stages.quantization.saturation import (
    FULL,
    INT16,
    ConvGeometry,
    OpSaturation,
    conv_rows,
    conv_weights,
    output_size,
    quantize_activations,
    quantize_weights,
)
from ortflow.stages.quantization.saturation_outputs import OutputDamage

if TYPE_CHECKING:
    from onnx import NodeProto

    from ortflow.api import Feed

ROWS = 96  # output positions (rows of the GEMM) measured per op and sample
SAMPLES = 4  # real samples run through the float model
SEED = 0


@dataclass(frozen=True)
class WeightedOp:
    """A quantizable node with constant weights, as the GEMM MLAS runs: weights [K, N] per group."""

    name: str
    op_type: str
    activation: str  # the input tensor quantized to uint8
    groups: list[Any]  # float weights per group, [K, N] in the kernel's K order
    conv: ConvGeometry | None = None  # None for MatMul/Gemm


@dataclass
class Evidence:
    """What the emulation found: per op, over `samples` real samples (0: the ranges' worst case only)."""

    ops: list[OpSaturation] = field(default_factory=list)
    samples: int = 0
    unmeasured: list[str] = field(default_factory=list)  # quantizable nodes it could not emulate
    outputs: OutputDamage | None = None  # how saturation reaches the outputs (None: not measured)


def weighted_ops(
    model: Any, excluded: set[str], op_types: list[str]
) -> tuple[list[WeightedOp], list[str]]:
    """The nodes ORT would quantize as u8 x s8 GEMMs (MatMul/Gemm/Conv with constant weights, not excluded),
    and the names of those it cannot emulate (3-D Conv, auto_pad, ...). A depthwise Conv comes without
    groups: MLAS's depthwise kernels widen to int16 first and cannot saturate (its weights are still rounded)."""
    from onnx import numpy_helper

    weights = {t.name: t for t in model.graph.initializer}
    found, skipped = [], []
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm", "Conv") or node.name in excluded:
            continue
        if op_types and node.op_type not in op_types:
            continue
        if len(node.input) < 2 or node.input[1] not in weights:
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float64)
        if node.op_type == "Conv":
            op = _conv(node, w)
            if op is None:
                skipped.append(node.name)
            else:
                found.append(op)
        elif w.ndim == 2 and not _int(node, "transA", 0):
            w = w.T if _int(node, "transB", 0) else w
            found.append(WeightedOp(node.name, node.op_type, node.input[0], [w]))
        else:
            skipped.append(node.name)
    return found, skipped


def _conv(node: NodeProto, w: Any) -> WeightedOp | None:
    """A Conv as GEMMs per group (no groups: depthwise); None when it is not a 1-D or 2-D Conv with explicit pads."""
    if w.ndim not in (3, 4) or _text(node, "auto_pad", "NOTSET") != "NOTSET":
        return None
    dims = w.ndim - 2
    if dims == 1:
        w = w[:, :, None, :]
    group = _int(node, "group", 1)
    pads = _ints(node, "pads", [0] * 2 * dims)
    if dims == 1 or len(pads) == 2:
        pads = [0, pads[0], 0, pads[1]]
    conv = ConvGeometry(
        kernel=tuple(w.shape[2:]),
        strides=_pair(_ints(node, "strides", [1, 1])),
        dilations=_pair(_ints(node, "dilations", [1, 1])),
        pads=(pads[0], pads[1], pads[2], pads[3]),
        group=group,
        one_d=node.op_type == "Conv" and dims == 1,
    )
    if w.shape[1] == 1 and group > 1:
        return WeightedOp(node.name, "Conv", node.input[0], [], conv)
    per_group = w.shape[0] // group
    groups = [conv_weights(w[g * per_group : (g + 1) * per_group]) for g in range(group)]
    return WeightedOp(node.name, "Conv", node.input[0], groups, conv)


def _pair(values: list[int]) -> tuple[int, int]:
    return (1, int(values[0])) if len(values) == 1 else (int(values[0]), int(values[1]))


# A node's attributes by name, each read as the type ONNX declares for it (a default where the node has none).
def _int(node: NodeProto, name: str, default: int) -> int:
    found = [a.i for a in node.attribute if a.name == name]
    return int(found[0]) if found else default


def _ints(node: NodeProto, name: str, default: list[int]) -> list[int]:
    found = [list(a.ints) for a in node.attribute if a.name == name]
    return [int(v) for v in found[0]] if found else default


def _text(node: NodeProto, name: str, default: str) -> str:
    found = [a.s.decode() for a in node.attribute if a.name == name]
    return found[0] if found else default


def measure(
    model_path: Path,
    ranges: dict[str, tuple[float, float]] | None,
    feeds: list[Feed],
    per_channel: bool,
    excluded: frozenset[str] | set[str] = frozenset(),
    op_types: tuple[str, ...] | list[str] = (),
) -> Evidence:
    """The emulation over `feeds` (real samples) run through the float model `model_path` (the graph the
    calibration `ranges` describe; None: dynamic quantization, each tensor quantized with its own range in
    each sample, as DynamicQuantizeLinear does); with no feeds, the worst case the ranges allow."""
    if onnx_model.needs_external_data(onnx_model.total_size(model_path)):
        return Evidence(samples=len(feeds), unmeasured=["the model (over 2 GB: not emulated)"])
    model = onnx_model.load_graph(model_path, external_data=True)
    quantized, unmeasured = weighted_ops(model, set(excluded), list(op_types))
    ops = [op for op in quantized if (ranges is None or op.activation in ranges) and op.groups]
    span = _spans(ranges)
    evidence = Evidence([OpSaturation(op.name, op.op_type) for op in ops], len(feeds), unmeasured)
    if not ops:
        return evidence
    if not feeds:
        for op, found in zip(ops, evidence.ops):
            _worst_case(op, found, per_channel)
        return evidence
    probe = _session(model_path, sorted({op.activation for op in ops}))
    names = [o.name for o in probe.get_outputs()]
    rng = np.random.default_rng(SEED)
    for feed in feeds:
        values = dict(zip(names, probe.run(names, feed)))
        for op, found in zip(ops, evidence.ops):
            value = values[op.activation]
            _measure_op(op, found, value, span(op.activation, value), per_channel, rng)
    saturating = [op for op, found in zip(ops, evidence.ops) if found.saturated]
    if saturating:
        evidence.outputs = saturation_outputs.compare(
            model, quantized, saturating, feeds, probe, span, per_channel
        )
    return evidence


def _spans(
    ranges: dict[str, tuple[float, float]] | None,
) -> Callable[[str, Any], tuple[float, float]]:
    """A tensor's range for uint8 quantization: calibrated, or (dynamic: None) the values' own."""
    if ranges is None:
        return lambda _, values: (float(np.min(values)), float(np.max(values)))
    return lambda name, _: ranges[name]


def _session(model_path: Path, tensors: list[str]) -> Any:
    """The float model with the measured ops' inputs as its outputs (optimizations off, as in calibration)."""
    from onnx import TensorProto, helper

    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in tensors]
    path = calibration_passes.pass_model(model_path, outputs, "saturation-probe.onnx")
    return calibration_passes.session(path)


def _measure_op(
    op: WeightedOp,
    found: OpSaturation,
    values: Any,
    span: tuple[float, float],
    per_channel: bool,
    rng: Any,
) -> None:
    """Add one sample's rows of `op` (its input `values`, quantized with the calibrated `span`) to `found`."""
    quantized, zero = quantize_activations(values, *span)
    if op.conv is None:
        flat = quantized.reshape(-1, quantized.shape[-1])
        picks = rng.choice(len(flat), size=min(ROWS, len(flat)), replace=False)
        found.add(flat[picks], zero, op.groups[0], per_channel)
        return
    conv = op.conv
    if conv.one_d:
        quantized = quantized[:, :, None, :]
    batch, channels, height, width = quantized.shape
    top, left, bottom, right = conv.pads
    out_h = output_size(height, conv.kernel[0], conv.strides[0], conv.dilations[0], top + bottom)
    out_w = output_size(width, conv.kernel[1], conv.strides[1], conv.dilations[1], left + right)
    count = min(ROWS, batch * out_h * out_w)
    flat = rng.choice(batch * out_h * out_w, size=count, replace=False)
    picks = np.stack([flat // (out_h * out_w), (flat // out_w) % out_h, flat % out_w], axis=1)
    per_group = channels // conv.group
    for g, weights in enumerate(op.groups):
        part = quantized[:, g * per_group : (g + 1) * per_group]
        found.add(conv_rows(part, zero, conv.kernel, conv, picks), zero, weights, per_channel)


def _worst_case(op: WeightedOp, found: OpSaturation, per_channel: bool) -> None:
    """Without samples: how many of the weight pairs can leave int16 range for some uint8 activations
    (both at 255 when the two weights share a sign). Counts pairs per output column, not per row."""
    for weights in op.groups:
        quantized, _ = quantize_weights(weights, per_channel, FULL)
        if len(quantized) % 2:
            quantized = np.pad(quantized, ((0, 1), (0, 0)))
        pairs = quantized.reshape(-1, 2, quantized.shape[1])
        same_sign = np.sign(pairs[:, 0]) == np.sign(pairs[:, 1])
        reach = np.where(
            same_sign, 255 * np.abs(pairs).sum(axis=1), 255 * np.abs(pairs).max(axis=1)
        )
        found.pairs += reach.size
        found.saturated += int(np.count_nonzero(reach > INT16[1]))
