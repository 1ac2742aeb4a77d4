"""Names for JSON-shaped values: what a document, a run record's metrics or a JSON Schema holds, so that a
signature says "a JSON object" rather than a str-keyed dict of Any (an unchecked bag of anything)."""

from __future__ import annotations

from typing import Mapping, TypedDict, Union

Scalar = Union[str, int, float, bool, None]  # one JSON value that is not a container
Json = Union[Scalar, list["Json"], dict[str, "Json"]]  # any JSON value
JsonObject = dict[str, Json]  # a JSON object: a document, a schema, a record's part
# A stage's parameters: the recipe's values, validated against its params_schema with defaults filled in. Their
# shape is the stage's own (its schema says it), so to the engine they are opaque user values.
Params = Mapping[str, object]

# A JSON Schema (or a part of one: a property's, an item's) in the subset ortflow's own schemas use
# (schemas/*.schema.json, compiled by engine.leaves.schema_check, which refuses any keyword not named here).
# Keys such as "$ref" are no identifiers, hence the functional form.
SchemaFragment = TypedDict(
    "SchemaFragment",
    {
        "$schema": str,
        "$id": str,
        "$defs": dict[str, "SchemaFragment"],
        "$ref": str,
        "title": str,
        "description": str,
        "x-expected": Json,
        "type": Union[str, list[str]],
        "const": Json,
        "enum": list[Json],
        "properties": dict[str, "SchemaFragment"],
        "required": list[str],
        "additionalProperties": Union[bool, "SchemaFragment"],
        "minProperties": int,
        "maxProperties": int,
        "pattern": str,
        "items": "SchemaFragment",
        "minItems": int,
        "minimum": float,
        "anyOf": list["SchemaFragment"],
    },
    total=False,
)


# Typed readers of JSON documents: indexing a `Json` value needs its shape first (mypy checks each use), and a
# document of another shape than the reader expects fails here with what was found, not deep in the caller.
def obj(value: Json) -> JsonObject:
    """A JSON object; null reads as {} (an optional part left out)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, found {type(value).__name__}: {str(value)[:80]}")
    return value


def objects(value: Json) -> list[JsonObject]:
    """A JSON array of objects; null reads as []."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array, found {type(value).__name__}: {str(value)[:80]}")
    return [obj(item) for item in value]


def text(value: Json, default: str = "") -> str:
    """A JSON string; null reads as `default`."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise TypeError(f"expected a JSON string, found {type(value).__name__}: {str(value)[:80]}")
    return value


def number(value: Json) -> float | None:
    """A JSON number as a float; anything else (null, a string, true/false) is None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
