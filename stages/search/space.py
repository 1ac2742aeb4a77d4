"""A search space: parameter values where a list is a choice between values, expanded into every combination
(quantize_search's grid of quantize_dynamic / quantize_static parameters)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ortflow.api import Json
from ortflow.stages.quantization import isa


def grid(space: Mapping[str, Json], schema: Mapping[str, Json]) -> list[dict[str, Json]]:
    """Every combination of the choices in `space` (a list is a choice, except a plain list given to an
    array-typed parameter, which is one value; a list of lists is a choice between them)."""
    axes = [[(name, v) for v in choices(name, value, schema)] for name, value in space.items()]
    return [dict(combination) for combination in itertools.product(*axes)]


def varying(space: Mapping[str, Json], schema: Mapping[str, Json]) -> list[str]:
    """The parameters that take more than one value across the grid (the ones a candidate is told apart by)."""
    return [name for name, value in space.items() if len(choices(name, value, schema)) > 1]


def choices(name: str, value: Json, schema: Mapping[str, Json]) -> list[Json]:
    """The values parameter `name` takes in the grid; `schema` (the stage's params schema) tells whether a
    list is a choice or, for an array-typed parameter, one value."""
    if not isinstance(value, list):
        return [value]
    properties = schema.get("properties")
    param = properties.get(name) if isinstance(properties, dict) else None
    if _takes_array(param if isinstance(param, dict) else {}):
        return value if value and all(isinstance(v, list) for v in value) else [value]
    return value


def _takes_array(param: Mapping[str, Json]) -> bool:
    """Whether a parameter's schema admits an array as one value (`type: array`, or one branch of a oneOf /
    anyOf: `op_types_to_quantize` is a list of op types or `auto`)."""
    branches = [param, *_listed(param.get("oneOf")), *_listed(param.get("anyOf"))]
    return any(isinstance(b, Mapping) and b.get("type") == "array" for b in branches)


def _listed(value: Json) -> list[Json]:
    return value if isinstance(value, list) else []


def admitted(
    combinations: list[dict[str, Json]], isa_fact: str
) -> tuple[list[dict[str, Json]], list[tuple[dict[str, Json], str]]]:
    """The combinations worth building for a target with instruction set `isa_fact`, likeliest to meet an
    accuracy target on the fastest kernel first (so a budget that runs out cuts the least promising), and
    those pruned, each with why. A combination is a quantize stage's parameters: the user's JSON, checked by
    the stage it is given to."""
    pruned = [(c, unsupported(c) or isa.wasted(c, isa_fact)) for c in combinations]
    kept = [c for c, why in pruned if not why]
    pruned = [(c, why) for c, why in pruned if why]
    return sorted(kept, key=lambda c: rank(c, isa_fact)), pruned


def rank(params: dict[str, Json], isa_fact: str) -> tuple[int, int]:
    return isa.accuracy_rank(params, isa_fact), isa.kernel_rank(params, isa_fact)


# Knobs that change accuracy but not the kernel a model runs on: a combination that differs from a passing one
# only in these (and does not run on a faster kernel) cannot be faster, only less accurate.
SPEED_NEUTRAL = frozenset(
    {"per_channel", "reduce_range", "weight_type", "activation_type", "calibrate_method"}
)


def dominated(params: dict[str, Json], passed: dict[str, Json], isa_fact: str) -> bool:
    """Whether `params` cannot beat the passing combination `passed`: the same except for speed-neutral
    knobs and the kernel's expected speed, and no faster a kernel."""
    same = all(
        params.get(k) == passed.get(k) for k in set(params) | set(passed) if k not in SPEED_NEUTRAL
    )
    return same and isa.kernel_rank(params, isa_fact) >= isa.kernel_rank(passed, isa_fact)


def unsupported(params: Mapping[str, Json]) -> str:
    """Why ORT cannot build this combination on any CPU (a grid crossing axes meets it; a stage given it
    outright refuses it in its check). Empty when it can."""
    if params.get("weight_type") == "QUInt8" and params.get("activation_type") == "QInt8":
        return "int8 activations with uint8 weights: ORT has no such kernel"
    if params.get("layers_at_8_bits") and params.get("bits") == 8:
        return "layers_at_8_bits with bits 8: every layer is at 8 bits already"
    return ""
