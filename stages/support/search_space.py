"""A search space: parameter values where a list is a choice between values, expanded into every combination
(quantize_search's grid of quantize_dynamic / quantize_static parameters)."""

from __future__ import annotations

import itertools
from typing import Any


def grid(space: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the choices in `space` (a list is a choice, except a plain list given to an
    array-typed parameter, which is one value; a list of lists is a choice between them)."""
    axes = [[(name, v) for v in choices(name, value, schema)] for name, value in space.items()]
    return [dict(combination) for combination in itertools.product(*axes)]


def varying(space: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The parameters that take more than one value across the grid (the ones a candidate is told apart by)."""
    return [name for name, value in space.items() if len(choices(name, value, schema)) > 1]


def choices(name: str, value: Any, schema: dict[str, Any]) -> list[Any]:
    """The values parameter `name` takes in the grid; `schema` (the stage's params schema) tells whether a
    list is a choice or, for an array-typed parameter, one value."""
    if not isinstance(value, list):
        return [value]
    if schema.get("properties", {}).get(name, {}).get("type") == "array":
        return value if value and all(isinstance(v, list) for v in value) else [value]
    return value
