"""How a model's saturation reaches its outputs, next to what 7-bit weights cost there: the verdict's evidence
(isa.decide). An op's own error says little by itself: a 40% error in the first convolution of an OCR
detector barely moves its probability map, while one in a YOLO detector's first convolution blurs every class
score (measured here on 3 photos: its class scores' cosine falls to 0.93, against 0.998 with 7-bit weights; on
PP-OCRv4's detector and 4 pages, 0.993 against 0.996).

Emulated, in float, on the float model with ORT on this machine: one variant has int8 weights (dequantized, so
their rounding is in) and, after each saturating op, what saturation took from its output, computed exactly
(every output position) from that op's float input in the same sample; the other has 7-bit weights. This is
linear in the saturation: an op's loss is computed on clean inputs, not on inputs earlier saturation changed,
and activations are not quantized in either variant (their rounding is common to both)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ortflow.stages.quantization import saturation
from ortflow.stages.quantization.saturation import FULL, REDUCED

DELTA = "saturation/"  # the graph input carrying an op's saturation loss
# samples compared (the first ones): every output position of each saturating op is emulated, the costly part
# (MiniLM, static per-channel: 24 s of CPU with 4 samples, 2/3 of it here)
SAMPLES = 2


@dataclass(frozen=True)
class OutputDamage:
    """Squared relative error against the float model (mean over samples) where it is worst: over each output
    and each channel along its axis 1; with int8 weights in the saturating kernel, and with 7-bit weights."""

    saturating: float
    seven_bit: float
    where: str  # the output (and channel) where the saturating variant is worst


def compare(
    model: Any,
    ops: list[Any],
    saturating: list[Any],
    feeds: list[Any],
    probe: Any,
    span: Callable[[str, Any], tuple[float, float]],
    per_channel: bool,
) -> OutputDamage:
    """Run the float model, the saturating int8 variant and the 7-bit variant on the first SAMPLES `feeds`; `probe` returns the
    saturating ops' inputs (`span`: a tensor's uint8 range, from its name and values); `ops`: every op whose
    weights ORT quantizes."""
    names = [o.name for o in probe.get_outputs()]
    reference = _session(model)
    outputs = [o.name for o in reference.get_outputs()]
    eight = _session(_variant(model, ops, FULL, per_channel, {op.name for op in saturating}))
    seven = _session(_variant(model, ops, REDUCED, per_channel, set()))
    damage: dict[str, list[tuple[float, float]]] = {}
    for feed in feeds[:SAMPLES]:
        values = dict(zip(names, probe.run(names, feed)))
        losses = {
            DELTA + op.name: loss(
                op, values[op.activation], span(op.activation, values[op.activation]), per_channel
            )
            for op in saturating
        }
        floats = reference.run(outputs, feed)
        with_saturation = eight.run(outputs, {**feed, **losses})
        with_seven = seven.run(outputs, feed)
        for name, f, s, r in zip(outputs, floats, with_saturation, with_seven):
            for where, a, b, c in _parts(name, f, s, r):
                damage.setdefault(where, []).append((_error(a, b), _error(a, c)))
    means = {where: np.mean(np.array(pairs), axis=0) for where, pairs in damage.items()}
    worst = max(means, key=lambda where: means[where][0])
    return OutputDamage(float(means[worst][0]), float(max(m[1] for m in means.values())), worst)


def loss(op: Any, values: Any, span: tuple[float, float], per_channel: bool) -> Any:
    """What saturation takes from `op`'s output (float, the output's shape) on input `values`, every position."""
    quantized, zero = saturation.quantize_activations(values, *span)
    low, high = min(span[0], 0.0), max(span[1], 0.0)
    scale = np.float32((high - low) / 255.0)
    if op.conv is None:
        rows = quantized.reshape(-1, quantized.shape[-1])
        lost = _lost(rows, op.groups[0], per_channel)
        return (lost * scale).reshape(*values.shape[:-1], -1).astype(np.float32)
    conv = op.conv
    if conv.one_d:
        quantized = quantized[:, :, None, :]
    batch, channels, height, width = quantized.shape
    top, left, bottom, right = conv.pads
    kernel, strides, dilations = conv.kernel, conv.strides, conv.dilations
    out_h = saturation.output_size(height, kernel[0], strides[0], dilations[0], top + bottom)
    out_w = saturation.output_size(width, kernel[1], strides[1], dilations[1], left + right)
    flat = np.arange(batch * out_h * out_w)
    picks = np.stack([flat // (out_h * out_w), (flat // out_w) % out_h, flat % out_w], axis=1)
    per_group = channels // conv.group
    parts = [
        _lost(
            saturation.conv_rows(
                quantized[:, g * per_group : (g + 1) * per_group], zero, kernel, conv, picks
            ),
            w,
            per_channel,
        )
        for g, w in enumerate(op.groups)
    ]
    lost = np.concatenate(parts, axis=1).reshape(batch, out_h, out_w, -1).transpose(0, 3, 1, 2)
    return (lost[:, :, 0, :] if conv.one_d else lost).astype(np.float32) * scale


def _lost(rows: Any, weights: Any, per_channel: bool) -> Any:
    """The saturating kernel's sums minus the exact ones, in units of the activation scale: [R, N]."""
    quantized, scale = saturation.quantize_weights(weights, per_channel, FULL)
    clipped, _ = saturation.saturating_dot(rows, quantized)
    exact = rows.astype(np.float64) @ quantized.astype(np.float64)
    return (clipped - exact) * scale


def _variant(model: Any, ops: list[Any], largest: int, per_channel: bool, inject: set[str]) -> Any:
    """The model with the ops' weights rounded to `largest` levels (and back to float), and an input added
    after each op of `inject` for its saturation loss."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    weights = {t.name: t for t in copy.graph.initializer}
    nodes = {n.name: n for n in copy.graph.node}
    for op in ops:
        node = nodes[op.name]
        tensor = weights[node.input[1]]
        values = numpy_helper.to_array(tensor).astype(np.float64)
        transposed = any(a.name == "transB" and a.i for a in node.attribute)
        axis = 1 if node.op_type == "MatMul" or (node.op_type == "Gemm" and not transposed) else 0
        tensor.CopyFrom(
            numpy_helper.from_array(_rounded(values, axis, per_channel, largest), tensor.name)
        )
    graph = []
    for node in copy.graph.node:
        graph.append(node)
        if node.name in inject:
            clean = node.output[0]
            node.output[0] = f"{clean}/unsaturated"
            copy.graph.input.append(
                helper.make_tensor_value_info(DELTA + node.name, TensorProto.FLOAT, None)
            )
            graph.append(
                helper.make_node(
                    "Add",
                    [node.output[0], DELTA + node.name],
                    [clean],
                    name=f"{node.name}/saturation",
                )
            )
    del copy.graph.node[:]
    copy.graph.node.extend(graph)
    return copy


def _rounded(values: Any, axis: int, per_channel: bool, largest: int) -> Any:
    """Weights quantized as ORT does (output channels along `axis`) and dequantized back to float32."""
    moved = np.moveaxis(values, axis, -1)
    quantized, scale = saturation.quantize_weights(
        moved.reshape(-1, moved.shape[-1]), per_channel, largest
    )
    return np.moveaxis((quantized * scale).reshape(moved.shape), -1, axis).astype(np.float32)


def _session(model: Any) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _parts(name: str, f: Any, s: Any, r: Any) -> list[tuple[str, Any, Any, Any]]:
    """The output whole, and each of its channels along axis 1 (a detector's boxes and each class's scores)."""
    parts = [(name, f, s, r)]
    if f.ndim >= 3 and f.shape[1] > 1:
        parts += [(f"{name} channel {c}", f[:, c], s[:, c], r[:, c]) for c in range(f.shape[1])]
    return parts


def _error(a: Any, b: Any) -> float:
    """Squared relative error |b - a|^2 / |a|^2 (about 2 x (1 - cosine) when nothing is scaled, but unlike
    the cosine it sees a uniform loss of magnitude, which saturation causes)."""
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    norm = float(a @ a)
    return float(np.square(b - a).sum() / norm) if norm > 0 else 0.0
