"""Names for JSON-shaped values: what a document, a run record's metrics or a JSON Schema holds, so that a
signature says "a JSON object" rather than a str-keyed dict of Any (an unchecked bag of anything)."""

from __future__ import annotations

from typing import Mapping, Union

Scalar = Union[str, int, float, bool, None]  # one JSON value that is not a container
Json = Union[Scalar, list["Json"], dict[str, "Json"]]  # any JSON value
JsonObject = dict[str, Json]  # a JSON object: a document, a schema, a record's part
# A stage's parameters: the recipe's values, validated against its params_schema with defaults filled in. Their
# shape is the stage's own (its schema says it), so to the engine they are opaque user values.
Params = Mapping[str, object]
