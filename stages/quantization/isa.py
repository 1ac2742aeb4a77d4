"""ORT's safe INT8 settings for the instruction set a recipe targets (its `target_isa` environment fact).

x86 CPUs without VNNI compute u8 x s8 products with instructions that saturate (vpmaddubsw adds two
products into an int16); ORT's quantization documentation answers this with `reduce_range` (7-bit weights),
"especially for per-channel mode". Measured on an AVX2-only host (mean cosine against fp32), it is a rule
for MatMul-heavy models with per-channel scales, not a general one:

  MiniLM (MatMul), dynamic:        per-channel 0.9797 -> 0.9959 with 7-bit;  per-tensor 0.9742 -> 0.9232
  MiniLM (MatMul), static QDQ:     per-channel 0.9469 -> 0.9618;             per-tensor 0.9463 -> 0.9029
  PP-OCRv4 detector (Conv), static: per-channel 0.9843 -> 0.9765;             per-tensor 0.9693 -> 0.9430

So `auto` picks 7-bit weights only for an x86 target without VNNI, per-channel scales, int8 weights and a
model whose quantizable ops are mostly MatMul/Gemm; with VNNI (the avx2-vnni, avx512-vnni and amx kernel families), on arm64, or for
uint8 weights (u8 x u8 products are widened to int16 first: they never saturate), never.

The other answer is uint8 weights: exact without VNNI, but MLAS's u8 x u8 kernel is slower than its u8 x s8 one.
MiniLM, dynamic per-channel, 2 threads on the AVX2 host: int8 0.9818 at 6.6 ms, int8 7-bit 0.9961 at 6.5 ms,
uint8 0.9968 at 7.8 ms (fp32 9.9 ms). `wasted` and `kernel_rank` below turn these facts into the search's
pruning and order (quantize_search).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ortflow.api import int8_saturates

REDUCE_RANGE_PARAM = {
    "enum": ["auto", True, False],
    "default": "auto",
    "description": "7-bit weights; auto: on for per-channel scales on a MatMul-heavy model for an x86 target "
    "without VNNI (u8 x s8 saturation), off otherwise",
}


def saturates(isa: str) -> bool:
    """The isa fact (`x86_64: avx2`, an INT8 kernel family) names an x86 kernel without VNNI."""
    return int8_saturates(isa)


def needs_isa(params: dict[str, Any]) -> bool:
    """Whether the stage's result depends on the target's instruction set (then target_isa is in its key)."""
    return params.get("reduce_range") == "auto"


def reduce_range(
    params: dict[str, Any],
    env: dict[str, str],
    op_counts: Counter[str],
    u8_activations: bool = True,
    s8_weights: bool = True,
) -> tuple[bool, str]:
    """The reduce_range to use, and, when `auto` turned it on, why (for the stage's summary). `op_counts`:
    the float model's nodes by op type."""
    if params["reduce_range"] != "auto":
        return bool(params["reduce_range"]), ""
    isa = env["target_isa"]
    matmuls = op_counts.get("MatMul", 0) + op_counts.get("Gemm", 0)
    convs = op_counts.get("Conv", 0) + op_counts.get("ConvTranspose", 0)
    if (
        u8_activations
        and s8_weights
        and saturates(isa)
        and params["per_channel"]
        and matmuls > convs
    ):
        return (
            True,
            f"7-bit weights for {isa.split(': ', 1)[-1]} (no VNNI, per-channel, MatMul model)",
        )
    return False, ""


def wasted(params: dict[str, Any], isa: str) -> str:
    """Why a combination of quantize parameters (weight_type, activation_type, reduce_range) cannot help on
    a target with instruction set `isa`: the search does not build it. Empty when it can."""
    u8_weights = params.get("weight_type") == "QUInt8"
    if params.get("reduce_range") is True and u8_weights:
        return "7-bit uint8 weights: u8 x u8 products never saturate, so they would only lose precision"
    if params.get("reduce_range") is True and not saturates(isa):
        return f"7-bit weights on {_features(isa)}: its int8 products do not saturate, so they would only lose precision"
    if u8_weights and vnni(isa):
        return f"uint8 weights on {_features(isa)}: VNNI multiplies u8 x s8 only; int8 weights are as exact and faster"
    return ""


def kernel_rank(params: dict[str, Any], isa: str) -> int:
    """How fast the int8 kernel a combination runs on is expected to be on `isa` (0: fastest). On x86, MLAS's
    u8 x s8 kernels are the fast ones; uint8 weights or signed activations take slower paths."""
    if not isa.startswith("x86_64"):
        return 0
    # signed activations are the slowest: 1.7-3x slower than fp32 on the AVX2 host (README, the sweep's table)
    return int(params.get("weight_type") == "QUInt8") + 2 * int(
        params.get("activation_type") == "QInt8"
    )


def accuracy_rank(params: dict[str, Any], isa: str) -> int:
    """How likely a combination keeps accuracy on `isa` (0: likeliest): per-channel scales first; without VNNI,
    full-range int8 weights saturate (u8 x s8), so they come after 7-bit or uint8 weights."""
    saturating = (
        saturates(isa)
        and params.get("weight_type", "QInt8") == "QInt8"
        and params.get("reduce_range") is not True
    )
    return int(params.get("per_channel") is False) * 2 + int(
        saturating and params.get("activation_type") != "QInt8"
    )


def vnni(isa: str) -> bool:
    arch, _, features = isa.partition(":")
    return arch.strip() == "x86_64" and not saturates(isa)


def _features(isa: str) -> str:
    return isa.partition(": ")[2] or isa
