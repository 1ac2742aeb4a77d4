"""Stage and loader parameters: defaults from a JSON Schema, problems with parameters built by code, and
typed parameters.

A stage may declare its parameters as a frozen dataclass (its settings) and read them as attributes,
`ctx.settings(Float16Settings).headroom`, rather than by key from `ctx.params`. The dataclass stands for the
stage's params_schema, never beside it: settings_problems() says where the two disagree (a test holds every
built-in stage's to none), and the schema stays what validates a recipe and what the cache key is computed
from, so declaring settings changes no key. Reading `ctx.params` by key keeps working (plugins do); it is
deprecated: a stage type outside KEYED_BUILTINS that reads a parameter by key is told so once (KeyedParams)."""

from __future__ import annotations

import copy
import dataclasses
import warnings
from typing import TYPE_CHECKING, Any, Mapping, TypeVar, overload

from ortflow.engine.leaves.json_types import Json

if TYPE_CHECKING:  # both import this module: named here for the type checker only
    from ortflow.engine.contracts.metric import Metric
    from ortflow.engine.contracts.stage import Stage

T = TypeVar("T")


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


def schema_problems(params: Mapping[str, Json], schema: dict[str, Any]) -> list[str]:
    """Each way `params` breaks `schema`, as `where: what` (for parameters built by code, not a recipe)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # jsonschema ships no stubs

    return [
        f"{'.'.join(map(str, e.absolute_path)) or 'parameters'}: {e.message}"
        for e in Draft202012Validator(schema).iter_errors(params)
    ]


def params_problems(stage_cls: type[Stage] | type[Metric], params: dict[str, Any]) -> list[str]:
    """What is wrong with `params` for a stage type, defaults filled in: schema first, then its own check."""
    filled = fill_defaults(params, stage_cls.params_schema)
    return schema_problems(filled, stage_cls.params_schema) or stage_cls().check(filled)


# The annotations (as written: modules use `from __future__ import annotations`) a JSON Schema type maps to.
_ANNOTATIONS = {
    "boolean": ("bool",),
    "integer": ("int",),
    "number": ("float", "int | float"),
    "string": ("str",),
    "array": ("tuple[", "list["),
    "object": ("dict[", "Mapping[", "JsonObject"),
}


def settings_of(cls: type[T], params: Mapping[str, object]) -> T:
    """The validated parameters (defaults filled in) as `cls`; a list arrives as a tuple (frozen settings)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass: settings are declared as one")
    values: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        if f.name in params:
            value = params[f.name]
            values[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


def settings_problems(cls: type, schema: Mapping[str, Any]) -> list[str]:
    """Where a settings dataclass and the params_schema it stands for disagree: a property with no field (or
    the reverse), a field whose annotation is not the property's JSON type, or a default that differs."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    fields = {f.name: f for f in dataclasses.fields(cls)}
    problems = [
        f"property '{n}' has no field in {cls.__name__}" for n in properties if n not in fields
    ]
    problems += [f"field '{n}' is no property of the schema" for n in fields if n not in properties]
    for name in sorted(set(fields) & set(properties)):
        field, prop = fields[name], properties[name]
        wanted = _ANNOTATIONS.get(prop.get("type", ""), ())
        if wanted and not str(field.type).startswith(wanted):
            problems.append(f"field '{name}' is {field.type}, the schema says {prop['type']}")
        if "default" in prop and not _same_default(field, prop["default"]):
            problems.append(
                f"field '{name}' defaults otherwise than the schema ({prop['default']!r})"
            )
    return problems


def _same_default(field: dataclasses.Field[Any], default: object) -> bool:
    if field.default is not dataclasses.MISSING:
        ours = field.default
    elif field.default_factory is not dataclasses.MISSING:
        ours = field.default_factory()
    else:
        return False
    return (list(ours) if isinstance(ours, tuple) else ours) == default


# The built-in stage types that still read ctx.params by key, spared the deprecation warning until each declares
# settings (Stage.settings) and reads ctx.settings(): this list only shrinks (tests/unit/test_stage_settings.py).
KEYED_BUILTINS = frozenset(
    {
        "calibrate",
        "quantize_dynamic",
        "quantize_static",
        "quantize_weights",
    }
)
_warned: set[str] = set()  # the stage types already told (once per process each)


class KeyedParams(dict[str, Json]):
    """A stage's ctx.params (a plugin's, or a built-in's that declares settings): reading a parameter by key
    works as it always did, and warns once per stage type (DeprecationWarning naming the stage and
    ctx.settings). A dict still, so json.dumps, copies and `in` behave as before; only reads by key warn."""

    def __init__(self, values: Mapping[str, Json], stage_type: str) -> None:
        super().__init__(values)
        self.stage_type = stage_type

    def __getitem__(self, key: str) -> Json:
        self._warn()
        return super().__getitem__(key)

    @overload
    def get(self, key: str, default: None = None) -> Json: ...
    @overload
    def get(self, key: str, default: Json) -> Json: ...
    @overload
    def get(self, key: str, default: T) -> Json | T: ...

    def get(self, key: str, default: object = None) -> object:  # as dict.get: None when absent
        self._warn()
        return super().get(key, default)

    def _warn(self) -> None:
        if self.stage_type in _warned:
            return
        _warned.add(self.stage_type)
        warnings.warn(
            f"stage '{self.stage_type}' reads ctx.params by key, which is deprecated: declare its parameters as "
            "a frozen dataclass (Stage.settings) and read them with ctx.settings(YourSettings) (docs/plugins.md)",
            DeprecationWarning,
            stacklevel=3,
        )


def stage_params(stage_type: str, params: Mapping[str, Json]) -> dict[str, Json]:
    """A stage's own copy of its parameters as its ctx.params: plain for a built-in not yet converted
    (KEYED_BUILTINS), else one that warns when read by key."""
    return dict(params) if stage_type in KEYED_BUILTINS else KeyedParams(params, stage_type)
