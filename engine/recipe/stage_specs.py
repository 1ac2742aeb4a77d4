"""The recipe's `stages:` resolved into StageSpecs: each stage's type found in the registry, its parameters
checked against the type's schema (defaults filled in), its input references and `after:` checked against
the recipe's inputs, datasets and other stages, every problem collected rather than raised."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard

from ortflow.engine.contracts.params import fill_defaults
from ortflow.engine.contracts.registry import Plugins
from ortflow.engine.contracts.stage import ArtifactKind, Port, Stage
from ortflow.engine.contracts.types import SOURCES, Binding, Ref, StageSpec
from ortflow.engine.leaves.errors import Location, OrtflowError, Problem, suggest
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.yamlsource import PathKey, SourceMap
from ortflow.engine.recipe.metric_use import metric_problems
from ortflow.engine.recipe.schema_errors import validate
from ortflow.engine.recipe.stage_entry import StageEntry

# After matrix expansion a stage's name can be an instance id, `int8[per_channel=true]`, so the output is
# what follows the last dot.
REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\[.*\])?\.[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass
class Scope:
    """What reference checks look at while stages are resolved."""

    raw: dict[str, StageEntry]  # `stages:` as written (matrices expanded)
    stage_classes: dict[str, type[Stage]]
    inputs: set[str]
    datasets: set[str]
    source: SourceMap
    problems: list[Problem]
    input_paths: dict[str, Path]  # the inputs that resolved to an existing file or folder


def resolve_stages(scope: Scope, plugins: Plugins) -> dict[str, StageSpec]:
    """Each stage whose type is known, resolved; the problems of all of them added to `scope.problems`."""
    _find_types(scope, plugins)
    stages: dict[str, StageSpec] = {}
    checked = _ParamsCheck(scope.source, scope.problems)
    valid: set[str] = set()  # the stages whose parameters passed: the metric checks read those only
    for name, stage_cls in scope.stage_classes.items():
        params = _mapping(scope.raw[name].params)
        before = len(scope.problems)
        filled = checked(stage_cls, params, ("stages", name), f"stage '{name}' ({stage_cls.type})")
        if len(scope.problems) == before:
            valid.add(name)
        stages[name] = _stage_spec(scope, name, stage_cls, filled)
    scope.problems.extend(metric_problems(stages, scope.input_paths, valid, scope.source))
    return stages


def _find_types(scope: Scope, plugins: Plugins) -> None:
    """Each stage's class from the registry into `scope.stage_classes`; an unknown or broken type reported
    where the recipe names it."""
    raw, source, problems, registry = scope.raw, scope.source, scope.problems, plugins.stages
    for name, spec in raw.items():
        uses = spec.uses
        if not uses:
            continue
        if uses not in registry:
            problems.append(
                Problem(
                    f"stage '{name}': unknown stage type '{uses}'",
                    source.locate(("stages", name, "uses")),
                    suggest(uses, registry.names()) or "see `engine stages`",
                )
            )
        else:
            try:
                scope.stage_classes[name] = registry.get(uses)
            except OrtflowError as exc:  # a broken plugin: say where the recipe uses it
                problems.append(
                    Problem(f"stage '{name}': {exc}", source.locate(("stages", name, "uses")))
                )


def _stage_spec(scope: Scope, name: str, stage_cls: type[Stage], filled: JsonObject) -> StageSpec:
    spec = scope.raw[name]
    port_refs = _resolve_ports(scope, name, stage_cls, _mapping(spec.inputs))
    after = _after(scope, name, f"stage '{name}' ({stage_cls.type})")
    return StageSpec(
        name,
        spec.uses,  # _find_types found its class by it
        stage_cls,
        filled,
        port_refs,
        after,
        scope.source.locate(("stages", name), key=True),
        spec.optional,
        resources=dict(spec.resources),
        workers=list(spec.workers),
    )


def _after(scope: Scope, name: str, subject: str) -> list[str]:
    """The other stages the stage's `after:` names; one that is not in the recipe is reported."""
    raw = scope.raw
    after = []
    for i, other in enumerate(raw[name].after):
        if not isinstance(other, str):
            continue  # the recipe schema reports it
        if other in raw and other != name:
            after.append(other)
        elif _is_str(other):
            scope.problems.append(
                Problem(
                    f"{subject}: after: no other stage named '{other}'",
                    scope.source.locate(("stages", name) + ("after", i)),
                    suggest(other, [s for s in raw if s != name]),
                )
            )
    return after


class _ParamsCheck:
    """Checks a stage's `with:` against its type's schema and `check()`, and fills in the defaults. The same
    parameters of the same type (common in generated recipes) are checked once."""

    def __init__(self, source: SourceMap, problems: list[Problem]):
        self.source, self.problems = source, problems
        self.valid: dict[tuple[type, str], JsonObject] = {}

    def __call__(
        self, stage_cls: type[Stage], params: JsonObject, where: PathKey, subject: str
    ) -> JsonObject:
        known = (stage_cls, json.dumps(params, sort_keys=True, default=repr))
        if known in self.valid:
            return copy.deepcopy(self.valid[known])
        before = len(self.problems)
        self.problems.extend(
            validate(params, stage_cls.params_schema, self.source, where + ("with",), subject)
        )
        filled = fill_defaults(params, stage_cls.params_schema)
        if len(self.problems) == before:
            for message in stage_cls().check(copy.deepcopy(filled)):
                self.problems.append(
                    Problem(f"{subject}: {message}", self.source.locate(where + ("with",)))
                )
        if len(self.problems) == before:
            self.valid[known] = filled
            return copy.deepcopy(filled)
        return filled


def _is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value)


def _mapping(value: Json) -> JsonObject:
    """A part of a stage's entry that is a mapping (`with:`, `in:`); anything else reads as {}: the recipe
    schema reports it."""
    return value if isinstance(value, dict) else {}


def _resolve_ports(
    scope: Scope, name: str, stage_cls: type[Stage], given: JsonObject
) -> dict[str, Binding]:
    source, problems = scope.source, scope.problems
    subject = f"stage '{name}' ({stage_cls.type})"
    where = ("stages", name, "in")
    resolved: dict[str, Binding] = {}
    port_names = [p.name for p in stage_cls.inputs]
    for port_name, value in given.items():
        port = stage_cls.input_port(port_name)
        if port is None:
            problems.append(
                Problem(
                    f"{subject}: it has no input '{port_name}'",
                    source.locate(where + (port_name,), key=True),
                    suggest(port_name, port_names)
                    or f"its inputs: {', '.join(port_names) or 'none'}",
                )
            )
            continue
        if isinstance(value, list) and not port.many:
            problems.append(
                Problem(
                    f"{subject}: input '{port_name}' takes one reference, got a list",
                    source.locate(where + (port_name,)),
                    "give a single reference",
                )
            )
            continue
        texts = value if isinstance(value, list) else [value]
        refs = []
        for i, text in enumerate(texts):
            if isinstance(text, str) and text.endswith("[*]"):
                text = text[
                    :-3
                ]  # left by the matrix expansion only where the stage is a source or unknown
            if not isinstance(text, str) or not REFERENCE.match(text):
                continue  # the schema check reports it
            loc = source.locate(
                where + (port_name, i) if isinstance(value, list) else where + (port_name,)
            )
            ref = _check_ref(scope, text, _Use(name, port, subject, loc))
            if ref is not None:
                refs.append(ref)
        if refs:
            resolved[port_name] = Binding(tuple(refs), port.many)
    for port in stage_cls.inputs:
        if not port.optional and port.name not in given:
            problems.append(
                Problem(
                    f"{subject}: missing input '{port.name}' ({port.kind.value}: {port.description})",
                    source.locate(("stages", name), key=True),
                    f"add `in: {{{port.name}: <reference>}}`",
                )
            )
    return resolved


@dataclass(frozen=True)
class _Use:
    """A reference as one stage's input port uses it: what its checks compare it with and where they say so."""

    owner: str  # the stage
    port: Port
    subject: str  # the stage as messages name it
    loc: Location


def _check_model_input(scope: Scope, name: str, use: _Use) -> None:
    """A folder is a model only if it holds its one .onnx file (with the data files it names): a folder such
    as `/` would otherwise be hashed whole before any stage could say it is not a model."""
    path = scope.input_paths.get(name)
    if path is None or not path.is_dir():
        return
    found = len(list(path.glob("*.onnx")))
    if found != 1:
        scope.problems.append(
            Problem(
                f"{use.subject}: input '{use.port.name}' takes an ONNX model, but inputs.{name} is a "
                f"folder ({path}) holding {found} .onnx files",
                use.loc,
                "name the .onnx file itself",
            )
        )


def _check_ref(scope: Scope, text: str, use: _Use) -> Ref | None:
    """The reference, or None where it is wrong (reported): a dataset where the port takes none or the other
    way round, or what it names does not exist."""
    source_name = text.rpartition(".")[0]
    wants_dataset = use.port.kind is ArtifactKind.DATASET
    if (source_name == "datasets") != wants_dataset:
        expected = (
            "a dataset (datasets.<name>)" if wants_dataset else "a file or model, not a dataset"
        )
        scope.problems.append(
            Problem(
                f"{use.subject}: input '{use.port.name}' takes {expected}; got '{text}'", use.loc
            )
        )
        return None
    if source_name in SOURCES:
        return _check_source_ref(scope, text, use)
    return _check_stage_ref(scope, text, use)


def _check_source_ref(scope: Scope, text: str, use: _Use) -> Ref | None:
    """`inputs.<name>` or `datasets.<name>`: declared in the recipe (an input an ONNX port takes: a model)."""
    source_name, _, item = text.rpartition(".")
    declared = scope.inputs if source_name == "inputs" else scope.datasets
    if item not in declared:
        noun = "input" if source_name == "inputs" else "dataset"
        scope.problems.append(
            Problem(
                f"{use.subject}: unknown reference '{text}': no {noun} '{item}'",
                use.loc,
                suggest(item, list(declared)) or f"declare it under `{source_name}:`",
            )
        )
        return None
    if source_name == "inputs" and use.port.kind is ArtifactKind.ONNX_MODEL:
        _check_model_input(scope, item, use)
    return Ref(source_name, item)


def _check_stage_ref(scope: Scope, text: str, use: _Use) -> Ref | None:
    """`<stage>.<output>`: another stage of the recipe, and an output its type has."""
    source_name, _, item = text.rpartition(".")
    problems, subject, loc = scope.problems, use.subject, use.loc
    if source_name not in scope.raw:
        problems.append(
            Problem(
                f"{subject}: unknown reference '{text}': no stage '{source_name}'",
                loc,
                suggest(source_name, [*scope.raw, *SOURCES])
                or "references are inputs.<name>, datasets.<name> or <stage>.<output>",
            )
        )
        return None
    if source_name == use.owner:
        problems.append(
            Problem(
                f"{subject}: '{text}' refers to the stage itself",
                loc,
                "a stage cannot consume its own output",
            )
        )
        return None
    upstream_cls = scope.stage_classes.get(source_name)
    if upstream_cls is None:
        return None  # its unknown type is already reported
    if upstream_cls.output_port(item) is None:
        names = [p.name for p in upstream_cls.outputs]
        problems.append(
            Problem(
                f"{subject}: unknown reference '{text}': {upstream_cls.type} has no output '{item}'",
                loc,
                suggest(item, names) or f"its outputs: {', '.join(names) or 'none'}",
            )
        )
        return None
    return Ref(source_name, item)
