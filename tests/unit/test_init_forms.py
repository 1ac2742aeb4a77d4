"""The `with:` blocks `engine init` writes are typed where it builds them (engine/starter: LoaderWith, StageWith,
MetricWith; a head's reading as HeadWith). Each key those types declare must be a parameter of a
loader, stage or metric init writes it for, of the JSON type the parameter's schema takes: a key renamed on
one side only would otherwise be written into every drafted recipe and refused when the user validates it."""

from __future__ import annotations

import types
import typing
from typing import Any, Mapping, Union

import pytest

from ortflow.engine.contracts.registry import installed_metrics, installed_stages, loader_type
from ortflow.engine.leaves.detection_heads import HeadWith
from ortflow.engine.starter.data import LoaderWith
from ortflow.engine.starter.drafts import MetricWith, StageWith

# the plugins each type's keys are parameters of: the ones init writes that block for
LOADERS = ("random", "images", "text", "npz")
STAGES = (
    "quantize_static",
    "quantize_dynamic",
    "graph_optimization",
    "transformer_fusion",
    "convert_float16",
    "tensorrt_engine",
    "specialize",
    "validate_accuracy",
    "select",
    "benchmark",
    "quantize_partial",
)
METRICS = ("detection", "exact", "dense_map")
# a Python annotation's JSON type (an int is also a JSON number)
JSON_TYPES = {bool: {"boolean"}, int: {"integer", "number"}, float: {"number"}, str: {"string"}}


def _schemas(kind: str, names: tuple[str, ...]) -> list[Mapping[str, Any]]:
    if kind == "loader":
        return [loader_type(name).params_schema for name in names]
    registry = installed_stages() if kind == "stage" else installed_metrics()
    return [registry.get(name).params_schema for name in names if name in registry]


def _annotation_types(annotation: Any) -> set[str]:
    """The JSON types a value of the annotation is written as."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        return set().union(*(_annotation_types(a) for a in typing.get_args(annotation)))
    if origin is list:
        return {"array"}
    if origin is dict or typing.is_typeddict(annotation):
        return {"object"}
    return JSON_TYPES[annotation]


def _schema_types(prop: Mapping[str, Any]) -> set[str]:
    """The JSON types a schema property takes (empty: it does not say, e.g. a $ref)."""
    declared = prop.get("type")
    if declared is not None:
        return {declared} if isinstance(declared, str) else set(declared)
    if "enum" in prop or "const" in prop:
        values = prop.get("enum", [prop.get("const")])
        return set().union(*(_annotation_types(type(v)) for v in values if v is not None))
    parts = [*prop.get("anyOf", []), *prop.get("oneOf", [])]
    return set().union(*(_schema_types(p) for p in parts)) if parts else set()


def _problems(form: type, kind: str, owners: tuple[str, ...]) -> list[str]:
    """Each key of the TypedDict `form` that no owner takes, or takes as another JSON type."""
    schemas = _schemas(kind, owners)
    assert schemas, f"none of {owners} is installed"
    problems = []
    for key, annotation in typing.get_type_hints(form).items():
        props = [s["properties"][key] for s in schemas if key in s.get("properties", {})]
        if not props:
            problems.append(f"{form.__name__}.{key}: no parameter of {', '.join(owners)}")
            continue
        ours, theirs = _annotation_types(annotation), set().union(*map(_schema_types, props))
        if theirs and not ours & theirs:
            problems.append(
                f"{form.__name__}.{key}: {sorted(ours)}, the schema says {sorted(theirs)}"
            )
    return problems


@pytest.mark.parametrize(
    "form, kind, owners",
    [
        (LoaderWith, "loader", LOADERS),
        (StageWith, "stage", STAGES),
        (MetricWith, "metric", METRICS),
        (HeadWith, "metric", ("detection",)),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_each_key_init_writes_is_a_parameter_of_the_json_type_its_schema_takes(
    form: type, kind: str, owners: tuple[str, ...]
) -> None:
    assert _problems(form, kind, owners) == []


class _Misspelt(LoaderWith, total=False):
    sample: int  # random's is `samples`


class _Mistyped(MetricWith, total=False):
    nms_iou: str  # detection's is a number


def test_a_key_no_plugin_takes_or_of_another_type_is_named() -> None:
    """The check above can fail: a key the loaders do not take, and one of the wrong JSON type."""
    assert _problems(_Misspelt, "loader", LOADERS) == [
        "_Misspelt.sample: no parameter of random, images, text, npz"
    ]
    assert _problems(_Mistyped, "metric", METRICS) == [
        "_Mistyped.nms_iou: ['string'], the schema says ['number']"
    ]
