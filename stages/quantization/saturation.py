"""A numpy emulation of MLAS's u8 x s8 INT8 kernels on x86 without VNNI, to see whether a model's quantized
weights and activations saturate them: the evidence behind `reduce_range: auto` (stages/quantization/isa.py).

What is emulated. Without VNNI (SSE4.1, AVX2, AVX-512 core), MLAS multiplies uint8 activations by int8
weights with vpmaddubsw: the two products of adjacent K positions, a[2i]*w[2i] + a[2i+1]*w[2i+1], are added
into one int16 with signed saturation; vpmaddwd then widens pairs of those into the int32 accumulator (exact).
The u8 values are the quantized activations with their zero point still in them (MLAS subtracts
zero point x column sums afterwards), so a ReLU/SiLU input near 255 times two weights near +-127 reaches
64770, twice the int16 range. Here, per MatMul/Gemm/Conv:
  - activations: uint8 as ORT's quantizer makes them from the calibration table (range widened to hold 0,
    scale (max-min)/255, zero point round(-min/scale)), and quantized as QuantizeLinear does (round half to even);
  - weights: int8, symmetric, per output channel or per tensor, [-127, 127] (scale absmax/127), or with
    reduce_range [-64, 64] (scale absmax/64), as ORT's quantizer writes them;
  - the K order of the pairs: for MatMul the K axis of B (for Gemm with transB, B's last axis); for Conv,
    QLinearConv's NHWC im2col, K = (kernel row, kernel column, input channel of the group), padded with the
    input's zero point. MLAS's indirect symmetric Conv kernel (ConvSym, taken when a group's input channels
    are a multiple of 4) walks channels in fours per kernel position: the same pairs.
Approximations: depthwise convolutions are taken as exact (MLAS's depthwise kernels widen to int16 before
multiplying); only 1-D and 2-D Conv with explicit pads are measured; the rows (output positions) are a seeded
random sample of each sample's rows, not all of them; and what is measured is each op's own error against
its float-weight output, not how that error travels to the model's outputs (isa.decide says what follows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

INT16 = (-32768, 32767)
FULL, REDUCED = (
    127,
    64,
)  # int8 weights' largest magnitude, without and with reduce_range (ORT's ranges)
CHUNK = 1 << 24  # pair sums held at once (int32: 64 MB)


def quantize_activations(values: Any, low: float, high: float) -> tuple[Any, int]:
    """uint8 values (as int64) and their zero point, as ORT's quantizer and QuantizeLinear make them from a
    calibrated range [low, high]."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    scale = (high - low) / 255.0
    if scale <= np.finfo(np.float32).tiny:
        return np.zeros(np.shape(values), np.int64), 0
    zero = int(np.round(-low / np.float32(scale)))
    quantized = np.clip(np.round(np.asarray(values, np.float64) / np.float32(scale)) + zero, 0, 255)
    return quantized.astype(np.int64), zero


def quantize_weights(weights: Any, per_channel: bool, largest: int) -> tuple[Any, Any]:
    """Symmetric int8 weights [K, N] (as int64) and their scales [N]: one per output column N, or one for all.
    `largest`: FULL (127) or REDUCED (64, reduce_range)."""
    weights = np.asarray(weights, np.float64)
    absmax = (
        np.abs(weights).max(axis=0)
        if per_channel
        else np.full(weights.shape[1], np.abs(weights).max())
    )
    scale = np.where(absmax > 0, absmax / largest, 1.0).astype(np.float32).astype(np.float64)
    quantized = np.clip(np.round(weights / scale), -largest, largest)
    return quantized.astype(np.int64), scale


def pair_sums(activations: Any, weights: Any) -> Any:
    """The exact sums a[2i]*w[2i] + a[2i+1]*w[2i+1] vpmaddubsw forms before saturating: [R, ceil(K/2), N]
    from activations [R, K] and weights [K, N] (an odd K gets a zero pair partner, as MLAS pads K)."""
    rows, depth = activations.shape
    if depth % 2:
        activations = np.pad(activations, ((0, 0), (0, 1)))
        weights = np.pad(weights, ((0, 1), (0, 0)))
    a = activations.reshape(rows, -1, 2).astype(np.int32)
    w = weights.reshape(-1, 2, weights.shape[1]).astype(np.int32)
    return a[:, :, 0, None] * w[None, :, 0, :] + a[:, :, 1, None] * w[None, :, 1, :]


def saturating_dot(activations: Any, weights: Any) -> tuple[Any, int]:
    """What MLAS's u8 x s8 kernel without VNNI accumulates for activations [R, K] (uint8 values, zero point
    included) times weights [K, N] (int8 values): [R, N] (int64), and how many pair sums left int16 range."""
    rows, depth = activations.shape
    step = max(1, CHUNK // max(1, ((depth + 1) // 2) * weights.shape[1]))
    total = np.zeros((rows, weights.shape[1]), np.int64)
    saturated = 0
    for start in range(0, rows, step):
        sums = pair_sums(activations[start : start + step], weights)
        saturated += int(np.count_nonzero((sums < INT16[0]) | (sums > INT16[1])))
        total[start : start + step] = np.clip(sums, *INT16).sum(axis=1, dtype=np.int64)
    return total, saturated


@dataclass
class OpSaturation:
    """One MatMul/Gemm/Conv's saturation, over the rows measured. The errors are relative to the op's output
    computed with float weights (same quantized activations): with int8 weights in the saturating kernel, with
    int8 weights exactly (what VNNI computes), and with 7-bit weights (reduce_range, which cannot saturate)."""

    name: str
    op_type: str
    pairs: int = 0
    saturated: int = 0
    reference: float = 0.0  # sums of squares
    saturating_error: float = 0.0
    exact_error: float = 0.0
    seven_bit_error: float = 0.0

    def relative(self, error: float) -> float:
        return float(np.sqrt(error / self.reference)) if self.reference > 0 else 0.0

    @property
    def share(self) -> float:
        return self.saturated / self.pairs if self.pairs else 0.0

    def add(self, activations: Any, zero: int, weights: Any, per_channel: bool) -> None:
        """Measure rows `activations` [R, K] (uint8 values, zero point `zero`) against float weights [K, N]."""
        if not len(activations):
            return
        centred = (activations - zero).astype(np.float64)
        reference = centred @ weights
        full, full_scale = quantize_weights(weights, per_channel, FULL)
        reduced, reduced_scale = quantize_weights(weights, per_channel, REDUCED)
        raw, saturated = saturating_dot(activations, full)
        saturating = (raw - zero * full.sum(axis=0)) * full_scale
        exact = (centred @ full) * full_scale
        seven = (centred @ reduced) * reduced_scale
        self.pairs += activations.shape[0] * ((activations.shape[1] + 1) // 2) * weights.shape[1]
        self.saturated += saturated
        self.reference += float(np.square(reference).sum())
        self.saturating_error += float(np.square(saturating - reference).sum())
        self.exact_error += float(np.square(exact - reference).sum())
        self.seven_bit_error += float(np.square(seven - reference).sum())


@dataclass(frozen=True)
class ConvGeometry:
    """A Conv's geometry as the emulation reads it, a 1-D Conv as a 2-D one of height 1 (`one_d`)."""

    kernel: tuple[int, ...]
    strides: tuple[int, int]
    dilations: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right
    group: int = 1
    one_d: bool = False


def conv_rows(
    inputs: Any, zero: int, kernel: tuple[int, ...], conv: ConvGeometry, picks: Any
) -> Any:
    """QLinearConv's im2col rows [R, kh * kw * C] (NHWC order: kernel row, kernel column, channel) at output
    positions `picks` (R x (sample, row, column)) of inputs [N, C, H, W] (uint8 values), padded with `zero`."""
    kh, kw = kernel
    sh, sw = conv.strides
    dh, dw = conv.dilations
    top, left, bottom, right = conv.pads
    padded = np.pad(inputs, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=zero)
    n, oh, ow = picks[:, 0], picks[:, 1], picks[:, 2]
    rows = oh[:, None] * sh + np.arange(kh)[None, :] * dh  # [R, kh]
    cols = ow[:, None] * sw + np.arange(kw)[None, :] * dw  # [R, kw]
    patches = padded[n[:, None, None], :, rows[:, :, None], cols[:, None, :]]  # [R, kh, kw, C]
    return patches.reshape(len(picks), -1)


def conv_weights(weights: Any) -> Any:
    """A group's Conv weights [M, C, kh, kw] as the GEMM's B [kh * kw * C, M], in the rows' K order."""
    return np.transpose(weights, (2, 3, 1, 0)).reshape(-1, weights.shape[0])


def output_size(size: int, kernel: int, stride: int, dilation: int, pads: int) -> int:
    return (size + pads - dilation * (kernel - 1) - 1) // stride + 1
