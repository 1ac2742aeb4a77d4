"""Stage and loader parameters: defaults from a JSON Schema, and problems with parameters built by code."""

from __future__ import annotations

import copy
from typing import Any


def fill_defaults(params: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `params` with every missing property that declares a `default` filled in (recursively)."""
    result = copy.deepcopy(params)
    for name, prop in schema.get("properties", {}).items():
        if name not in result and "default" in prop:
            result[name] = copy.deepcopy(
                prop["default"]
            )  # never share the schema's own list or dict
        if isinstance(result.get(name), dict) and prop.get("type") == "object":
            result[name] = fill_defaults(result[name], prop)
    return result


def schema_problems(params: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Each way `params` breaks `schema`, as `where: what` (for parameters built by code, not a recipe)."""
    from jsonschema import Draft202012Validator

    return [
        f"{'.'.join(map(str, e.absolute_path)) or 'parameters'}: {e.message}"
        for e in Draft202012Validator(schema).iter_errors(params)
    ]


def params_problems(stage_cls: type, params: dict[str, Any]) -> list[str]:
    """What is wrong with `params` for a stage type, defaults filled in: schema first, then its own check."""
    filled = fill_defaults(params, stage_cls.params_schema)
    return schema_problems(filled, stage_cls.params_schema) or stage_cls().check(filled)
