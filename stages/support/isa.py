"""ORT's safe INT8 settings for the instruction set a recipe targets (its `target_isa` environment fact).

x86 CPUs without VNNI compute u8 x s8 products with instructions that saturate (vpmaddubsw adds two
products into an int16), so 8-bit weights can lose accuracy there; ORT's quantization documentation
answers this with `reduce_range` (7-bit weights), "especially for per-channel mode". With per-tensor scales
the lost bit costs more than the saturation: MiniLM dynamic INT8 on an AVX2-only host, mean cosine against
fp32 on 64 sentences: per-channel 0.9797 -> 0.9959 with reduce_range, per-tensor 0.9742 -> 0.9232. With
VNNI (avx512_vnni, avx_vnni, AMX) or on arm64 there is no such saturation: 8-bit weights throughout.
"""

from __future__ import annotations

from typing import Any

REDUCE_RANGE_PARAM = {
    "enum": ["auto", True, False],
    "default": "auto",
    "description": "7-bit weights; auto: on for an x86 target without VNNI (u8 x s8 saturation), off otherwise",
}
VNNI = ("avx512_vnni", "avx_vnni", "amx_int8")


def saturates(isa: str) -> bool:
    """The isa fact (`x86_64: avx2,...`) names an x86 CPU without VNNI."""
    arch, _, features = isa.partition(":")
    return arch.strip() == "x86_64" and not any(f in features.split(",") for f in (v.strip() for v in VNNI))


def needs_isa(params: dict[str, Any]) -> bool:
    """Whether the stage's result depends on the target's instruction set (then target_isa is in its key)."""
    return params.get("reduce_range") == "auto"


def reduce_range(params: dict[str, Any], env: dict[str, str], u8_activations: bool = True) -> tuple[bool, str]:
    """The reduce_range to use, and, when `auto` turned it on, why (for the stage's summary)."""
    if params["reduce_range"] != "auto":
        return bool(params["reduce_range"]), ""
    isa = env["target_isa"]
    if u8_activations and saturates(isa) and params["per_channel"]:
        return True, f"7-bit weights for {isa.split(': ', 1)[-1]} (no VNNI, per-channel)"
    return False, ""
