"""Typed values as JSON, checked: a typed document's parts (a TypedDict, a dict of floats, a tuple) are not
`Json` to mypy (dicts are invariant, a TypedDict is a Mapping of object), so its to_json() passes each through
json_value(), which says at run time that the value is JSON rather than asserting it to the type checker."""

from __future__ import annotations

from typing import Mapping, SupportsFloat

from ortflow.engine.leaves.json_types import Json, Scalar, obj, text


def json_value(value: object) -> Json:
    """`value` as a JSON value: containers copied (tuples as lists, as json.dumps writes them), numbers that are
    not Python's (numpy scalars) as floats, as the documents' writer (json.dumps default=float) always wrote them."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, Mapping):
        return {_key(key): json_value(item) for key, item in value.items()}
    if isinstance(value, SupportsFloat):
        return float(value)
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"a JSON object's key must be a string, found {type(key).__name__}")
    return key


# Readers of a schema-checked document's parts, typed: each raises TypeError on another shape, naming it.
def texts(value: Json) -> list[str]:
    """A JSON array of strings (null: [])."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array, found {type(value).__name__}")
    return [text(item) for item in value]


def number_map(value: Json) -> dict[str, float]:
    """A JSON object of numbers (null: {}), each as written: an int stays an int, so a document read and
    written again is the same bytes."""
    found: dict[str, float] = {}
    for key, item in obj(value).items():
        if not isinstance(item, (int, float)) or isinstance(item, bool):
            raise TypeError(f"expected a number at '{key}', found {type(item).__name__}")
        found[key] = item
    return found


def text_map(value: Json) -> dict[str, str]:
    """A JSON object of strings (null: {})."""
    return {key: text(item) for key, item in obj(value).items()}


def integer(value: Json) -> int:
    """A JSON integer."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected a JSON integer, found {type(value).__name__}")
    return value


def real(value: Json) -> float:
    """A JSON number as written (an int stays an int: the same bytes when written again)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"expected a JSON number, found {type(value).__name__}")
    return value


def reals(value: Json) -> list[float]:
    """A JSON array of numbers (null: [])."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"expected a JSON array, found {type(value).__name__}")
    return [real(item) for item in value]


def flag(value: Json) -> bool:
    """A JSON boolean."""
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, found {type(value).__name__}")
    return value


def scalar_map(value: Json) -> dict[str, Scalar]:
    """A JSON object of strings, numbers, booleans and nulls (null: {})."""
    found: dict[str, Scalar] = {}
    for key, item in obj(value).items():
        if isinstance(item, (list, dict)):
            raise TypeError(f"expected a single value at '{key}', found {type(item).__name__}")
        found[key] = item
    return found
