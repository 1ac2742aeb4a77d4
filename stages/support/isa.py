"""ORT's safe INT8 settings for the instruction set a recipe targets (its `target_isa` environment fact).

x86 CPUs without VNNI compute u8 x s8 products with instructions that saturate (vpmaddubsw adds two
products into an int16); ORT's quantization documentation answers this with `reduce_range` (7-bit weights),
"especially for per-channel mode". Measured on an AVX2-only host (mean cosine against fp32), it is a rule
for MatMul-heavy models with per-channel scales, not a general one:

  MiniLM (MatMul), dynamic:        per-channel 0.9797 -> 0.9959 with 7-bit;  per-tensor 0.9742 -> 0.9232
  MiniLM (MatMul), static QDQ:     per-channel 0.9469 -> 0.9618;             per-tensor 0.9463 -> 0.9029
  PP-OCRv4 detector (Conv), static: per-channel 0.9843 -> 0.9765;             per-tensor 0.9693 -> 0.9430

So `auto` picks 7-bit weights only for an x86 target without VNNI, per-channel scales, and a model whose
quantizable ops are mostly MatMul/Gemm; with VNNI (avx512_vnni, avx_vnni, AMX) or on arm64, never.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

REDUCE_RANGE_PARAM = {
    "enum": ["auto", True, False],
    "default": "auto",
    "description": "7-bit weights; auto: on for per-channel scales on a MatMul-heavy model for an x86 target "
                   "without VNNI (u8 x s8 saturation), off otherwise",
}
VNNI = ("avx512_vnni", "avx_vnni", "amx_int8")


def saturates(isa: str) -> bool:
    """The isa fact (`x86_64: avx2,...`) names an x86 CPU without VNNI."""
    arch, _, features = isa.partition(":")
    return arch.strip() == "x86_64" and not any(f in features.split(",") for f in (v.strip() for v in VNNI))


def needs_isa(params: dict[str, Any]) -> bool:
    """Whether the stage's result depends on the target's instruction set (then target_isa is in its key)."""
    return params.get("reduce_range") == "auto"


def reduce_range(params: dict[str, Any], env: dict[str, str], op_counts: Counter[str],
                 u8_activations: bool = True) -> tuple[bool, str]:
    """The reduce_range to use, and, when `auto` turned it on, why (for the stage's summary). `op_counts`:
    the float model's nodes by op type."""
    if params["reduce_range"] != "auto":
        return bool(params["reduce_range"]), ""
    isa = env["target_isa"]
    matmuls = op_counts.get("MatMul", 0) + op_counts.get("Gemm", 0)
    convs = op_counts.get("Conv", 0) + op_counts.get("ConvTranspose", 0)
    if u8_activations and saturates(isa) and params["per_channel"] and matmuls > convs:
        return True, f"7-bit weights for {isa.split(': ', 1)[-1]} (no VNNI, per-channel, MatMul model)"
    return False, ""
