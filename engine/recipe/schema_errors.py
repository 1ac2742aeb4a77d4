"""JSON Schema validation whose errors read as file:line:col, what is wrong, and the fix."""

from __future__ import annotations

from typing import Any, Iterable

from ortflow.engine.errors import Problem, suggest
from ortflow.engine.json_types import JsonObject
from ortflow.engine.recipe.yamlsource import PathKey, SourceMap

_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


_VALIDATORS: dict[int, tuple[JsonObject, Any]] = {}


def _validator(schema: JsonObject) -> Any:
    """One validator per schema object: a stage type's schema is shared by all its stages, and building a
    validator costs more than using it."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        from jsonschema import Draft202012Validator

        cached = _VALIDATORS[id(schema)] = (schema, Draft202012Validator(schema))
    return cached[1]


def validate(
    instance: Any, schema: JsonObject, source: SourceMap, base: PathKey = (), subject: str = ""
) -> list[Problem]:
    """All problems of `instance` against `schema`; `base` is where `instance` sits in the document."""
    validator = _validator(schema)
    problems: list[Problem] = []
    for error in sorted(
        validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))
    ):
        problems.extend(_describe(error, source, base, subject))
    return problems


def _describe(error: Any, source: SourceMap, base: PathKey, subject: str) -> Iterable[Problem]:
    path = base + tuple(error.absolute_path)
    relative = tuple(error.absolute_path)
    if not base and len(relative) >= 2 and relative[0] == "stages" and not subject:
        subject, relative = (
            f"stage '{relative[1]}'",
            relative[2:],
        )  # name the stage, then the key inside it
    key = ".".join(str(p) for p in relative)
    prefix = f"{subject}: " if subject else ""
    what = f"{prefix}'{key}'" if key else (subject or "the document")
    kind = error.validator
    schema = error.schema
    if kind == "additionalProperties":
        import re

        allowed = sorted(schema.get("properties", {}))
        patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
        extra = {
            n
            for n in set(error.instance) - set(allowed)
            if not any(p.search(str(n)) for p in patterns)
        }
        for name in sorted(extra, key=str):
            hint = suggest(str(name), allowed) or (
                f"allowed: {', '.join(allowed)}" if allowed else None
            )
            yield Problem(
                f"{prefix}unknown key '{_join(key, name)}'",
                source.locate(path + (name,), key=True),
                hint,
            )
        return
    if kind == "required":
        missing = [n for n in error.validator_value if n not in error.instance]
        for name in missing:
            yield Problem(
                f"{what}: missing required key '{name}'",
                source.locate(path),
                _expected(schema, name),
            )
        return
    if kind == "type":
        expected = (
            error.validator_value
            if isinstance(error.validator_value, list)
            else [error.validator_value]
        )
        names = " or ".join(_TYPE_NAMES.get(t, t) for t in expected)
        yield Problem(
            f"{what} must be {names}, got {_show(error.instance)}",
            source.locate(path),
            _hint(schema),
        )
        return
    if kind == "enum":
        choices = [str(c) for c in error.validator_value]
        hint = suggest(str(error.instance), choices) or f"one of: {', '.join(choices)}"
        yield Problem(f"{what}: {_show(error.instance)} is not allowed", source.locate(path), hint)
        return
    if kind in ("oneOf", "anyOf") and "x-expected" in schema:
        yield Problem(
            f"{what} must be {schema['x-expected']}, got {_show(error.instance)}",
            source.locate(path),
        )
        return
    if kind == "pattern":
        yield Problem(
            f"{what}: {_show(error.instance)} is not valid", source.locate(path), _hint(schema)
        )
        return
    if kind == "propertyNames" or (kind == "not" and isinstance(error.instance, str)):
        yield Problem(
            f"{what}: the name {_show(error.instance)} is not allowed",
            source.locate(path),
            "names are letters, digits, _ and -, and 'inputs' and 'datasets' are reserved",
        )
        return
    yield Problem(f"{what}: {error.message}", source.locate(path), _hint(schema))


def _expected(schema: JsonObject, name: str) -> str | None:
    prop = schema.get("properties", {}).get(name, {})
    return f"add '{name}': {prop['description']}" if "description" in prop else f"add '{name}'"


def _hint(schema: JsonObject) -> str | None:
    return f"it is: {schema['description']}" if "description" in schema else None


def _join(key: str, name: Any) -> str:
    return f"{key}.{name}" if key else str(name)


def _show(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."
