"""The recipe JSON Schema as shipped in the ortflow.schemas package (found by importlib.resources in a wheel,
an editable install or a zip)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # named in an annotation only
    from ortflow.engine.recipe.schema_errors import SchemaFragment


def recipe_schema_text() -> str:
    return (
        resources.files("ortflow.schemas")
        .joinpath("recipe.schema.json")
        .read_text(encoding="utf-8")
    )


@lru_cache(maxsize=1)
def recipe_schema() -> SchemaFragment:
    """The schema as an object (its keys the error messages read are typed); validators take it whole."""
    schema: SchemaFragment = json.loads(recipe_schema_text())
    return schema


@lru_cache(maxsize=1)
def _compiled() -> Callable[[Any], Any]:
    import fastjsonschema

    return fastjsonschema.compile(json.loads(recipe_schema_text()))  # its own copy: compiled once


def recipe_is_valid(document: Any) -> bool:
    """A quick yes for a valid recipe document: fastjsonschema compiles the schema to Python, 4x or more
    faster than jsonschema on large recipes. A no is then explained by jsonschema (schema_errors), whose
    errors name the path, so the two must agree: tests/test_recipe_errors.py checks that they do."""
    import fastjsonschema

    try:
        _compiled()(document)
    except fastjsonschema.JsonSchemaValueException:
        return False
    return True
