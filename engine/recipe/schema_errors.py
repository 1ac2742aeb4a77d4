"""JSON Schema validation whose errors read as file:line:col, what is wrong, and the fix."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Iterable, Iterator, Protocol, TypedDict

from ortflow.engine.leaves.errors import Problem, suggest
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.yamlsource import PathKey, SourceMap

_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


# The part of the JSON Schema under an error that its message reads (JSON Schema names the last key).
SchemaFragment = TypedDict(
    "SchemaFragment",
    {
        "description": str,
        "properties": dict[str, "SchemaFragment"],
        "patternProperties": dict[str, "SchemaFragment"],
        "x-expected": str,
    },
    total=False,
)


class _SchemaError(Protocol):
    """What a message is made of in a jsonschema ValidationError (jsonschema ships no stubs)."""

    validator: str  # the failing keyword: "type", "required", ...
    validator_value: Json  # its value in the schema
    schema: SchemaFragment  # the schema object holding the keyword
    instance: Json  # the value that fails it
    absolute_path: deque[str | int]  # where that value is in the document
    message: str


class _Validator(Protocol):
    def iter_errors(self, instance: Json) -> Iterator[_SchemaError]: ...


_VALIDATORS: dict[int, tuple[object, _Validator]] = {}


def _validator(schema: object) -> _Validator:
    """One validator per schema object: a stage type's schema is shared by all its stages, and building a
    validator costs more than using it."""
    cached = _VALIDATORS.get(id(schema))
    if cached is None or cached[0] is not schema:
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # ships no stubs

        cached = _VALIDATORS[id(schema)] = (schema, Draft202012Validator(schema))
    return cached[1]


def validate(
    instance: Json, schema: object, source: SourceMap, base: PathKey = (), subject: str = ""
) -> list[Problem]:
    """All problems of `instance` against `schema`; `base` is where `instance` sits in the document. The
    schema (a JSON Schema document: an object, or true/false) goes to jsonschema whole, never read here."""
    validator = _validator(schema)
    problems: list[Problem] = []
    for error in sorted(
        validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))
    ):
        problems.extend(_describe(error, source, base, subject))
    return problems


def _describe(
    error: _SchemaError, source: SourceMap, base: PathKey, subject: str
) -> Iterable[Problem]:
    at = _Subject.of(error, base, subject)
    if error.validator == "additionalProperties":
        return _unknown_keys(error, source, at)
    if error.validator == "required":  # a list of names, checked on an object only
        names, given = _listed(error.validator_value), _keys(error.instance)
        return [
            Problem(
                f"{at.what}: missing required key '{name}'",
                source.locate(at.path),
                _expected(error.schema, name),
            )
            for name in names
            if name not in given
        ]
    return [_problem(error, source, at)]


@dataclass(frozen=True)
class _Subject:
    """Where a schema error is (`path`, to locate it) and how its message names it: the dotted `key` below
    the subject, a `prefix` naming the subject, and `what` is wrong (the key, else the subject)."""

    path: PathKey
    key: str
    prefix: str
    what: str

    @classmethod
    def of(cls, error: _SchemaError, base: PathKey, subject: str) -> _Subject:
        relative = tuple(error.absolute_path)
        if not base and len(relative) >= 2 and relative[0] == "stages" and not subject:
            subject, relative = (
                f"stage '{relative[1]}'",
                relative[2:],
            )  # name the stage, then the key inside it
        key = ".".join(str(p) for p in relative)
        prefix = f"{subject}: " if subject else ""
        what = f"{prefix}'{key}'" if key else (subject or "the document")
        return cls(base + tuple(error.absolute_path), key, prefix, what)


def _unknown_keys(error: _SchemaError, source: SourceMap, at: _Subject) -> Iterable[Problem]:
    """One problem per key neither the schema's properties nor its pattern properties allow, at the key."""

    schema = error.schema
    allowed = sorted(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    extra = {
        n
        for n in _keys(error.instance) - set(allowed)
        if not any(p.search(str(n)) for p in patterns)
    }
    for name in sorted(extra, key=str):
        hint = suggest(str(name), allowed) or (
            f"allowed: {', '.join(allowed)}" if allowed else None
        )
        yield Problem(
            f"{at.prefix}unknown key '{_join(at.key, name)}'",
            source.locate(at.path + (name,), key=True),
            hint,
        )


def _problem(error: _SchemaError, source: SourceMap, at: _Subject) -> Problem:
    """The one problem an error of any other kind makes, said in the recipe's words where the kind is known."""
    kind, schema, what, where = error.validator, error.schema, at.what, source.locate(at.path)
    if kind == "type":
        expected = (
            error.validator_value
            if isinstance(error.validator_value, list)
            else [error.validator_value]
        )
        names = " or ".join(_TYPE_NAMES.get(str(t), str(t)) for t in expected)
        return Problem(f"{what} must be {names}, got {_show(error.instance)}", where, _hint(schema))
    if kind == "enum":
        choices = _listed(error.validator_value)
        hint = suggest(str(error.instance), choices) or f"one of: {', '.join(choices)}"
        return Problem(f"{what}: {_show(error.instance)} is not allowed", where, hint)
    if kind in ("oneOf", "anyOf") and "x-expected" in schema:
        return Problem(f"{what} must be {schema['x-expected']}, got {_show(error.instance)}", where)
    if kind == "pattern":
        return Problem(
            f"{what}: {_show(error.instance)} is not valid: it must match {error.validator_value}",
            where,
            "; ".join(
                filter(None, [_example(error.instance, str(error.validator_value)), _hint(schema)])
            ),
        )
    if kind == "propertyNames" or (kind == "not" and isinstance(error.instance, str)):
        return Problem(
            f"{what}: the name {_show(error.instance)} is not allowed",
            where,
            "names are letters, digits, _ and -, and 'inputs' and 'datasets' are reserved",
        )
    return Problem(f"{what}: {error.message}", where, _hint(schema))


def _example(value: Json, pattern: str) -> str | None:
    """A value like `value` that matches `pattern` (`../../evil` -> `evil`), offered as the fix."""
    text = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(value)).strip("._-")
    for candidate in (text, text.replace(".", "_"), f"s_{text}"):
        if candidate and re.search(pattern, candidate):
            return f"e.g. {candidate!r}"
    return None


def _expected(schema: SchemaFragment, name: str) -> str | None:
    properties = schema.get("properties")
    prop = properties.get(name) if isinstance(properties, dict) else None
    if isinstance(prop, dict) and "description" in prop:
        return f"add '{name}': {prop['description']}"
    return f"add '{name}'"


def _hint(schema: SchemaFragment) -> str | None:
    return f"it is: {schema['description']}" if "description" in schema else None


def _join(key: str, name: str) -> str:
    return f"{key}.{name}" if key else str(name)


def _show(value: Json) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _listed(value: Json) -> list[str]:
    """The values a keyword lists (`required`, `enum`), as text."""
    return [str(name) for name in value] if isinstance(value, list) else []


def _keys(instance: Json) -> set[str]:
    """The keys of the object an object keyword failed on (`required`, `additionalProperties`)."""
    return set(instance) if isinstance(instance, dict) else set()
