"""The searches' parameters as typed settings: quantize_search's and quantize_partial's params_schema (declared
by the stages in stages/quantize_search.py and stages/quantize_partial.py), read once when a search starts
(StageContext.settings) so the search reads attributes, not keys of an untyped mapping. The nested blocks
(`accuracy`, `benchmark`, a family's space, `quantize`) are other stages' parameters, handed to their steps as
given: free JSON here, each checked by the stage that runs it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ortflow.api import Json


def _benchmark() -> dict[str, Json]:
    return {"runs": 200, "rounds": 4, "peak_memory": False}


def _dynamic() -> dict[str, Json]:
    return {
        "per_channel": [True, False],
        "weight_type": ["QInt8", "QUInt8"],
        "reduce_range": [True, False],
    }


def _static() -> dict[str, Json]:
    return {
        "per_channel": [True, False],
        "activation_type": ["QUInt8", "QInt8"],
        "weight_type": ["QInt8", "QUInt8"],
        "reduce_range": [True, False],
        "op_types_to_quantize": [[], ["Conv", "Gemm", "MatMul"]],
    }


@dataclass(frozen=True)
class SearchSettings:
    """quantize_search's parameters (its params_schema; tests/unit/test_typed_settings.py keeps them
    in step)."""

    # validate_accuracy's parameters, with the target
    accuracy: Mapping[str, Json] = field(default_factory=dict)
    benchmark: Mapping[str, Json] = field(default_factory=_benchmark)
    families: tuple[str, ...] = ("dynamic", "static")
    dynamic: Mapping[str, Json] = field(default_factory=_dynamic)
    weights: Mapping[str, Json] = field(default_factory=lambda: {"bits": [8, 4]})
    static: Mapping[str, Json] = field(default_factory=_static)
    repair: int = 2
    max_excluded: int = 8
    max_candidates: int = 80
    seconds: float = 1800
    tie: float = 0.03

    def space(self, family: str) -> Mapping[str, Json]:
        """The grid of a quantize family (dynamic, static, weights): its parameters, a list a choice."""
        spaces = {"dynamic": self.dynamic, "static": self.static, "weights": self.weights}
        return spaces[family]


@dataclass(frozen=True)
class PartialSettings:
    """quantize_partial's parameters (its params_schema)."""

    # validate_accuracy's parameters, with the target; quantize_static's or quantize_dynamic's
    accuracy: Mapping[str, Json] = field(default_factory=dict)
    quantize: Mapping[str, Json] = field(default_factory=dict)
    max_candidates: int = 6
    max_float: int = 64
    seconds: float | None = None  # None: no time budget
