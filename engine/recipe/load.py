"""Recipe loading: YAML -> overrides -> schema checks -> a validated, fully resolved Recipe."""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortflow.engine.errors import Location, OrtflowError, Problem, RecipeError, suggest
from ortflow.engine.json_types import JsonObject
from ortflow.engine.params import fill_defaults
from ortflow.engine.recipe.matrix import DEFAULT_MAX_STAGES, expand
from ortflow.engine.recipe.metric_use import metric_problems
from ortflow.engine.recipe.overrides import apply_overrides
from ortflow.engine.recipe.schema import recipe_is_valid, recipe_schema
from ortflow.engine.recipe.schema_errors import validate
from ortflow.engine.recipe.sources import resolve_datasets, resolve_inputs
from ortflow.engine.recipe.yamlsource import PathKey, SourceMap, load_yaml
from ortflow.engine.registry import Plugins
from ortflow.engine.stage import ArtifactKind, Port, Stage
from ortflow.engine.types import SOURCES, Binding, Recipe, Ref, StageSpec

# After matrix expansion a stage's name can be an instance id, `int8[per_channel=true]`, so the output is
# what follows the last dot.
REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\[.*\])?\.[A-Za-z_][A-Za-z0-9_-]*$")


def read_recipe(
    path: Path, plugins: Plugins, overrides: list[str] = (), params_file: Path | None = None
) -> tuple[Recipe, list[Problem]]:
    """The recipe as far as it could be resolved, and every problem found (syntax errors raise)."""
    path = Path(path)
    display = _display_name(path)
    data, source = load_yaml(path, display)
    if not isinstance(data, dict):
        raise RecipeError(
            [
                Problem(
                    "a recipe must be a YAML mapping",
                    Location(display),
                    "see recipes/quickstart.yaml",
                )
            ]
        )
    problems = apply_overrides(data, source, list(overrides), params_file)
    if not recipe_is_valid(data):
        problems.extend(validate(data, recipe_schema(), source))
    # Go on past schema problems: every check below skips what has the wrong shape (already reported),
    # so one pass reports everything that is wrong.
    raw = {
        key: data.get(key) if isinstance(data.get(key), dict) else {}
        for key in ("inputs", "datasets", "stages")
    }
    inputs = resolve_inputs(raw["inputs"], path.parent, source, problems)
    datasets = resolve_datasets(raw["datasets"], plugins.datasets, path.parent, source, problems)
    limit = data.get("max_stages")
    limit = (
        limit
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
        else DEFAULT_MAX_STAGES
    )
    expansion = expand(raw["stages"], _port_shapes(raw["stages"], plugins), source, limit)
    problems.extend(expansion.problems)
    scope = _Scope(
        expansion.stages,
        {},
        set(raw["inputs"]),
        set(raw["datasets"]),
        source,
        problems,
        {name: spec.path for name, spec in inputs.items()},
    )
    stages = _resolve_stages(scope, plugins)
    for instances in expansion.instances.values():
        for instance in instances or []:
            if instance.id in stages and instance.id != instance.template:
                stages[instance.id].template, stages[instance.id].axes = (
                    instance.template,
                    instance.axes,
                )
    target = data.get("target") if isinstance(data.get("target"), dict) else {}
    target_cpu = target.get("cpu", "native") if isinstance(target.get("cpu"), str) else "native"
    for spec in stages.values():
        spec.target_cpu = target_cpu
    recipe = Recipe(
        path.resolve(),
        str(data.get("name")),
        inputs,
        datasets,
        stages,
        source,
        list(overrides),
        expansion.matrices,
        target_cpu,
    )
    return recipe, _once_per_matrix(problems, expansion.matrices)


def _once_per_matrix(problems: list[Problem], matrices: dict[str, list[str]]) -> list[Problem]:
    """A problem every variant of a matrix stage has (a wrong parameter written once) is reported once.
    Linear in problems: each message is scanned once for the instance ids it quotes."""
    owner = {instance: template for template, ids in matrices.items() for instance in ids}
    generals = (
        [_generalized(p, owner, matrices) for p in problems]
        if owner
        else [(p, 0) for p in problems]
    )
    counts: dict[str, int] = {}
    for general, _ in generals:
        counts[str(general)] = counts.get(str(general), 0) + 1
    kept: list[Problem] = []
    seen: set[str] = set()
    for problem, (general, variants) in zip(problems, generals):
        text = str(general)
        if counts[text] > 1 and counts[text] == variants:
            if text not in seen:
                seen.add(text)
                kept.append(general)
        else:
            kept.append(problem)
    return kept


def _generalized(
    problem: Problem, owner: dict[str, str], matrices: dict[str, list[str]]
) -> tuple[Problem, int]:
    """The problem said of the matrix stage instead of its variant (`'int8' (every variant)`), and how many
    variants that stage has (0: it names none). An id may itself hold quotes, so each quoted span is tried
    from the shortest up."""
    message = problem.message
    quotes = [i for i, char in enumerate(message) if char == "'"]
    parts: list[str] = []
    variants = start = q = 0
    while q < len(quotes):
        for r in range(q + 1, len(quotes)):
            template = owner.get(message[quotes[q] + 1 : quotes[r]])
            if template is not None:
                parts += [message[start : quotes[q]], f"'{template}' (every variant)"]
                variants, start, q = max(variants, len(matrices[template])), quotes[r] + 1, r
                break
        q += 1
    return Problem("".join([*parts, message[start:]]), problem.location, problem.hint), variants


def _port_shapes(raw: JsonObject, plugins: Plugins) -> dict[str, dict[str, bool]]:
    """Per stage, whether each input port takes many references: it decides what `x.model[*]` means there."""
    shapes: dict[str, dict[str, bool]] = {}
    for name, spec in raw.items():
        uses = spec.get("uses") if isinstance(spec, dict) else None
        if isinstance(uses, str) and uses in plugins.stages:
            try:
                shapes[name] = {p.name: p.many for p in plugins.stages.get(uses).inputs}
            except OrtflowError:
                pass  # a broken plugin: reported where the stage is resolved
    return shapes


def _display_name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# -- stages ------------------------------------------------------------------------------------


@dataclass
class _Scope:
    """What reference checks look at while stages are resolved."""

    raw: JsonObject  # the `stages:` mapping as written
    stage_classes: dict[str, type[Stage]]
    inputs: set[str]
    datasets: set[str]
    source: SourceMap
    problems: list[Problem]
    input_paths: dict[str, Path]  # the inputs that resolved to an existing file or folder


def _resolve_stages(scope: _Scope, plugins: Plugins) -> dict[str, StageSpec]:
    raw, source, problems, registry = scope.raw, scope.source, scope.problems, plugins.stages
    stage_classes = scope.stage_classes
    for name, spec in raw.items():
        if not isinstance(spec, dict) or not _is_str(spec.get("uses")):
            continue
        if spec["uses"] not in registry:
            problems.append(
                Problem(
                    f"stage '{name}': unknown stage type '{spec['uses']}'",
                    source.locate(("stages", name, "uses")),
                    suggest(spec["uses"], registry.names()) or "see `engine stages`",
                )
            )
        else:
            try:
                stage_classes[name] = registry.get(spec["uses"])
            except OrtflowError as exc:  # a broken plugin: say where the recipe uses it
                problems.append(
                    Problem(f"stage '{name}': {exc}", source.locate(("stages", name, "uses")))
                )
    stages: dict[str, StageSpec] = {}
    checked = _ParamsCheck(source, problems)
    valid: set[str] = set()
    for name, stage_cls in stage_classes.items():
        spec = raw[name]
        where = ("stages", name)
        subject = f"stage '{name}' ({stage_cls.type})"
        params = spec.get("with") if isinstance(spec.get("with"), dict) else {}
        before = len(problems)
        filled = checked(stage_cls, params, where, subject)
        if len(problems) == before:
            valid.add(name)
        given = spec.get("in") if isinstance(spec.get("in"), dict) else {}
        port_refs = _resolve_ports(scope, name, stage_cls, given)
        after = []
        for i, other in enumerate(spec["after"] if isinstance(spec.get("after"), list) else []):
            if not isinstance(other, str):
                continue  # the recipe schema reports it
            if other in raw and other != name:
                after.append(other)
            elif _is_str(other):
                problems.append(
                    Problem(
                        f"{subject}: after: no other stage named '{other}'",
                        source.locate(where + ("after", i)),
                        suggest(other, [s for s in raw if s != name]),
                    )
                )
        resources = spec.get("resources") if isinstance(spec.get("resources"), dict) else {}
        workers = spec.get("workers", [])
        stages[name] = StageSpec(
            name,
            spec["uses"],
            stage_cls,
            filled,
            port_refs,
            after,
            source.locate(where, key=True),
            spec.get("optional") is True,
            resources=dict(resources),
            workers=[workers] if isinstance(workers, str) else list(workers),
        )
    problems.extend(metric_problems(stages, scope.input_paths, valid, source))
    return stages


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


def _is_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _resolve_ports(
    scope: _Scope, name: str, stage_cls: type[Stage], given: JsonObject
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
            ref = _check_ref(scope, text, name, port, subject, loc)
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


def _check_model_input(scope: _Scope, name: str, port: Port, subject: str, loc: Location) -> None:
    """A folder is a model only if it holds its one .onnx file (with the data files it names): a folder such
    as `/` would otherwise be hashed whole before any stage could say it is not a model."""
    path = scope.input_paths.get(name)
    if path is None or not path.is_dir():
        return
    found = len(list(path.glob("*.onnx")))
    if found != 1:
        scope.problems.append(
            Problem(
                f"{subject}: input '{port.name}' takes an ONNX model, but inputs.{name} is a "
                f"folder ({path}) holding {found} .onnx files",
                loc,
                "name the .onnx file itself",
            )
        )


def _check_ref(
    scope: _Scope, text: str, owner: str, port: Port, subject: str, loc: Location
) -> Ref | None:
    problems = scope.problems
    source_name, _, item = text.rpartition(".")
    wants_dataset = port.kind is ArtifactKind.DATASET
    if (source_name == "datasets") != wants_dataset:
        expected = (
            "a dataset (datasets.<name>)" if wants_dataset else "a file or model, not a dataset"
        )
        problems.append(
            Problem(f"{subject}: input '{port.name}' takes {expected}; got '{text}'", loc)
        )
        return None
    if source_name in SOURCES:
        declared = scope.inputs if source_name == "inputs" else scope.datasets
        if item not in declared:
            noun = "input" if source_name == "inputs" else "dataset"
            problems.append(
                Problem(
                    f"{subject}: unknown reference '{text}': no {noun} '{item}'",
                    loc,
                    suggest(item, list(declared)) or f"declare it under `{source_name}:`",
                )
            )
            return None
        if source_name == "inputs" and port.kind is ArtifactKind.ONNX_MODEL:
            _check_model_input(scope, item, port, subject, loc)
        return Ref(source_name, item)
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
    if source_name == owner:
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
