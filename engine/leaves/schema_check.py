"""The schemas of the JSON files ortflow writes and reads back (schemas/lock.schema.json, run_record.schema.json,
and the result documents': benchmark_results, accuracy_results, selection) compiled once into plain Python
checks. Every run reads its lock file, every record it serves and the documents its report shows, so the check
must cost next to nothing on a cached re-run: importing jsonschema costs ~50 ms and fastjsonschema's compile ~10-20 ms a schema,
more than the rest of a cached run's own work. The schemas use a small subset of JSON Schema, which this module
compiles; any other keyword is refused when compiling, so a schema cannot silently outgrow it. The explained
errors (file:line:col) still come from jsonschema (engine.recipe.schema_errors), asked only once a check fails;
tests/unit/test_schema_check.py checks that the two agree."""

from __future__ import annotations

import json
import re
from collections.abc import Sized
from functools import lru_cache
from importlib import resources
from typing import Any, Callable

from ortflow.engine.leaves.json_types import Json, SchemaFragment

Check = Callable[[Any, str], "str | None"]  # (value, where) -> what is wrong, or None

_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "x-expected"}
_KEYWORDS = {
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "pattern",
    "items",
    "minItems",
    "minimum",
    "anyOf",
    "$ref",
}


@lru_cache(maxsize=None)
def compiled(name: str) -> Check:
    """schemas/<name>.schema.json as a check, compiled once per process."""
    text = (
        resources.files("ortflow.schemas")
        .joinpath(f"{name}.schema.json")
        .read_text(encoding="utf-8")
    )
    schema: SchemaFragment = json.loads(text)  # its keywords are checked as it compiles
    return _compile(schema, schema.get("$defs", {}))


def problem(name: str, document: Any) -> str | None:
    """What in `document` does not fit schemas/<name>.schema.json (the first thing found), or None."""
    return compiled(name)(document, "")


def _compile(schema: SchemaFragment, defs: dict[str, SchemaFragment]) -> Check:
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise ValueError(
            f"JSON Schema keyword {sorted(unknown)[0]} is not compiled by engine.leaves.schema_check"
        )
    if "$ref" in schema:
        return _compile(defs[schema["$ref"].removeprefix("#/$defs/")], defs)
    checks = [_type(schema)] if "type" in schema else []
    if "const" in schema:
        checks.append(_const(schema["const"]))
    if "enum" in schema:
        checks.append(_enum(schema["enum"]))
    if "minItems" in schema:
        checks.append(_count(list, schema["minItems"], None, "items"))
    if {"minProperties", "maxProperties"} & set(schema):
        checks.append(
            _count(dict, schema.get("minProperties", 0), schema.get("maxProperties"), "keys")
        )
    if "pattern" in schema:
        checks.append(_pattern(schema["pattern"]))
    if "minimum" in schema:
        checks.append(_minimum(schema["minimum"]))
    if "anyOf" in schema:
        checks.append(_any_of([_compile(option, defs) for option in schema["anyOf"]]))
    if "items" in schema:
        checks.append(_items(_compile(schema["items"], defs)))
    if {"properties", "required", "additionalProperties"} & set(schema):
        checks.append(_object(schema, defs))
    return _all(checks)


def _all(checks: list[Check]) -> Check:
    def check(value: Any, where: str) -> str | None:
        for one in checks:
            found = one(value, where)
            if found:
                return found
        return None

    return check


def _type(schema: SchemaFragment) -> Check:
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    tests = [_TYPES[name] for name in names]
    wanted = " or ".join(names)
    return lambda value, where: (
        None
        if any(test(value) for test in tests)
        else f"{where or 'the document'} must be {wanted}"
    )


def _const(expected: Json) -> Check:
    def check(value: Any, where: str) -> str | None:
        same = value == expected and isinstance(value, bool) == isinstance(expected, bool)
        return None if same else f"{where} must be {json.dumps(expected)}"

    return check


def _enum(allowed: list[Json]) -> Check:
    def check(value: Any, where: str) -> str | None:
        same = any(
            value == one and isinstance(value, bool) == isinstance(one, bool) for one in allowed
        )
        return None if same else f"{where} must be one of {json.dumps(allowed)}"

    return check


def _count(kind: type[Sized], least: int, most: int | None, what: str) -> Check:
    """minItems (lists) or minProperties/maxProperties (objects)."""

    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, kind) or least <= len(value) <= (
            len(value) if most is None else most
        ):
            return None
        bound = f"at least {least}" if len(value) < least else f"at most {most}"
        return f"{where or 'the document'} must have {bound} {what}"

    return check


def _pattern(text: str) -> Check:
    pattern = re.compile(text)
    return lambda value, where: (
        None
        if not isinstance(value, str) or pattern.search(value)
        else f"{where} does not match {text}"
    )


def _minimum(bound: float) -> Check:
    return lambda value, where: (
        f"{where} is below {bound}" if _TYPES["number"](value) and value < bound else None
    )


def _any_of(options: list[Check]) -> Check:
    return lambda value, where: (
        None
        if any(option(value, where) is None for option in options)
        else f"{where} is none of what it may be"
    )


def _items(item: Check) -> Check:
    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, list):
            return None
        return next(
            (found for i, one in enumerate(value) if (found := item(one, f"{where}[{i}]"))), None
        )

    return check


def _object(schema: SchemaFragment, defs: dict[str, SchemaFragment]) -> Check:
    properties = {name: _compile(sub, defs) for name, sub in schema.get("properties", {}).items()}
    required = tuple(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    other = None if isinstance(extra, bool) else _compile(extra, defs)

    def check(value: Any, where: str) -> str | None:
        if not isinstance(value, dict):
            return None
        missing = next((name for name in required if name not in value), None)
        if missing is not None:
            return f"{where or 'the document'} lacks '{missing}'"
        for name, item in value.items():
            inner = f"{where}.{name}" if where else str(name)
            one = properties.get(name, other)
            if one is None and name not in properties and extra is False:
                return f"{where or 'the document'} has an unknown key '{name}'"
            found = one(item, inner) if one is not None else None
            if found:
                return found
        return None

    return check
