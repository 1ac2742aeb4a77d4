"""Recipe loading: YAML -> overrides -> schema checks -> a validated, fully resolved Recipe."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from engine.errors import Location, Problem, RecipeError, suggest
from engine.registry import StageRegistry
from engine.schema_errors import fill_defaults, validate
from engine.stage import Stage
from engine.yamlsource import SourceMap, load_yaml, parse_yaml

TOP_LEVEL_KEYS = ("version", "name", "description", "inputs", "stages")
REFERENCE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Ref:
    """A data reference: `inputs.<name>` or `<stage>.<output>`."""

    source: str
    name: str

    @property
    def is_input(self) -> bool:
        return self.source == "inputs"

    def __str__(self) -> str:
        return f"{self.source}.{self.name}"


@dataclass(frozen=True)
class InputSpec:
    name: str
    path: Path  # resolved, absolute
    declared: str  # as the user wrote it, for messages


@dataclass
class StageSpec:
    name: str
    uses: str
    stage_cls: type[Stage]
    params: dict[str, Any]  # validated, defaults filled in
    inputs: dict[str, Ref | list[Ref]]
    after: list[str]
    location: Location

    def refs(self) -> list[Ref]:
        found: list[Ref] = []
        for value in self.inputs.values():
            found.extend(value if isinstance(value, list) else [value])
        return found

    def upstream(self) -> set[str]:
        return {r.source for r in self.refs() if not r.is_input} | set(self.after)


@dataclass
class Recipe:
    path: Path
    name: str
    inputs: dict[str, InputSpec]
    stages: dict[str, StageSpec]
    source: SourceMap
    overrides: list[str] = field(default_factory=list)

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")


def recipe_schema() -> dict[str, Any]:
    return json.loads(resources.files("schemas").joinpath("recipe.schema.json").read_text(encoding="utf-8"))


def load_recipe(
    path: Path, registry: StageRegistry, overrides: list[str] = (), params_file: Path | None = None
) -> Recipe:
    """Load and check `path`; raises RecipeError listing every problem found."""
    recipe, problems = read_recipe(path, registry, overrides, params_file)
    if problems:
        raise RecipeError(problems)
    return recipe


def read_recipe(
    path: Path, registry: StageRegistry, overrides: list[str] = (), params_file: Path | None = None
) -> tuple[Recipe, list[Problem]]:
    """The recipe as far as it could be resolved, and every problem found (syntax errors raise)."""
    path = Path(path)
    display = _display_name(path)
    data, source = load_yaml(path, display)
    problems: list[Problem] = []
    assignments = _read_params_file(params_file) if params_file else []
    assignments += [_parse_set(text) for text in overrides]
    if not isinstance(data, dict):
        raise RecipeError([Problem("a recipe must be a YAML mapping", Location(display), "see recipes/quickstart.yaml")])
    for dotted, value, origin in assignments:
        problems.extend(_apply_override(data, source, dotted, value, origin))
    problems.extend(validate(data, recipe_schema(), source))
    # Go on past schema problems: every check below skips what has the wrong shape (already reported),
    # so one pass reports everything that is wrong.
    raw_inputs = data.get("inputs") if isinstance(data.get("inputs"), dict) else {}
    raw_stages = data.get("stages") if isinstance(data.get("stages"), dict) else {}
    inputs = _resolve_inputs(raw_inputs, path.parent, source, problems)
    stages = _resolve_stages(raw_stages, registry, inputs, set(raw_inputs), source, problems)
    return Recipe(path.resolve(), str(data.get("name")), inputs, stages, source, list(overrides)), problems


def _display_name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# -- overrides ---------------------------------------------------------------------------------


def _parse_set(text: str) -> tuple[str, Any, str]:
    if "=" not in text:
        raise RecipeError([Problem(f"--set {text}: expected KEY=VALUE, e.g. --set opt.with.level=all")])
    dotted, raw = text.split("=", 1)
    value, _ = parse_yaml(raw, f"--set {dotted}") if raw.strip() else ("", None)
    return dotted.strip(), value, f"--set {dotted.strip()}"


def _read_params_file(path: Path) -> list[tuple[str, Any, str]]:
    data, source = load_yaml(Path(path))
    if not isinstance(data, dict):
        raise RecipeError([Problem("a params file must map dotted keys to values", Location(str(path)),
                                   "e.g. `opt.with.level: all`")])
    return [(str(k), v, str(source.locate((k,), key=True))) for k, v in data.items()]


def _apply_override(data: dict[str, Any], source: SourceMap, dotted: str, value: Any, origin: str) -> list[Problem]:
    parts = [p for p in dotted.split(".")]
    if not all(parts):
        return [Problem(f"{origin}: '{dotted}' is not a dotted key", hint="e.g. opt.with.level=all")]
    if parts[0] not in TOP_LEVEL_KEYS:
        parts = ["stages", *parts]  # `opt.with.level` is short for `stages.opt.with.level`
    if parts[0] == "stages" and len(parts) > 2:
        stages = data.get("stages") if isinstance(data.get("stages"), dict) else {}
        if parts[1] not in stages:
            return [Problem(f"{origin}: the recipe has no stage '{parts[1]}'", hint=suggest(parts[1], list(stages)))]
    node: Any = data
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict):
            return [Problem(f"{origin}: '{'.'.join(parts[:depth])}' is not a mapping, cannot set '{part}' in it")]
        node = node.setdefault(part, {})
    if not isinstance(node, dict):
        return [Problem(f"{origin}: '{'.'.join(parts[:-1])}' is not a mapping")]
    node[parts[-1]] = value
    source.origins[tuple(parts)] = origin
    return []


# -- inputs ------------------------------------------------------------------------------------


def _resolve_inputs(raw: dict[str, Any], base: Path, source: SourceMap, problems: list[Problem]) -> dict[str, InputSpec]:
    inputs: dict[str, InputSpec] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict) or not _is_str(spec.get("path") or spec.get("package")):
            continue
        if isinstance(spec.get("path"), str):
            resolved = (base / spec["path"]).resolve()
            if not resolved.exists():
                problems.append(Problem(f"input '{name}': file not found: {spec['path']} (looked in {base.resolve()})",
                                        source.locate(("inputs", name, "path")),
                                        "fix the path; it is relative to the recipe's folder"))
                continue
            inputs[name] = InputSpec(name, resolved, spec["path"])
        elif _is_str(spec.get("file")):
            found = _package_file(spec["package"], spec["file"], source.locate(("inputs", name)), problems)
            if found is not None:
                inputs[name] = InputSpec(name, found, f"{spec['package']}:{spec['file']}")
    return inputs


def _package_file(package: str, file: str, where: Location, problems: list[Problem]) -> Path | None:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(package)
    except PackageNotFoundError:
        problems.append(Problem(f"package '{package}' is not installed", where, f"pip install {package}"))
        return None
    files = [str(f) for f in dist.files or []]
    wanted = file.strip("/")
    matches = [f for f in files if f == wanted] or [f for f in files if f.endswith("/" + wanted)]
    if len(matches) != 1:
        data_files = [f for f in files if not f.endswith((".py", ".pyc")) and ".dist-info/" not in f]
        reason = "is ambiguous" if matches else "is not in it"
        problems.append(Problem(f"package '{package}': file '{file}' {reason}", where,
                                f"files in the package: {', '.join(data_files[:5]) or 'none'}"))
        return None
    return Path(dist.locate_file(matches[0])).resolve()


# -- stages ------------------------------------------------------------------------------------


def _resolve_stages(
    raw: dict[str, Any], registry: StageRegistry, inputs: dict[str, InputSpec], declared_inputs: set[str],
    source: SourceMap, problems: list[Problem],
) -> dict[str, StageSpec]:
    stage_classes: dict[str, type[Stage]] = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict) or not _is_str(spec.get("uses")):
            continue
        if spec["uses"] not in registry:
            problems.append(Problem(f"stage '{name}': unknown stage type '{spec['uses']}'",
                                    source.locate(("stages", name, "uses")),
                                    suggest(spec["uses"], registry.names()) or "see `engine stages`"))
        else:
            stage_classes[name] = registry.get(spec["uses"])
    stages: dict[str, StageSpec] = {}
    for name, stage_cls in stage_classes.items():
        spec = raw[name]
        where = ("stages", name)
        subject = f"stage '{name}' ({stage_cls.type})"
        params = spec.get("with") if isinstance(spec.get("with"), dict) else {}
        problems.extend(validate(params, stage_cls.params_schema, source, where + ("with",), subject))
        given = spec.get("in") if isinstance(spec.get("in"), dict) else {}
        port_refs = _resolve_ports(name, stage_cls, given, raw, stage_classes, declared_inputs, source, problems)
        after = []
        for i, other in enumerate(spec["after"] if isinstance(spec.get("after"), list) else []):
            if other in raw and other != name:
                after.append(other)
            elif _is_str(other):
                problems.append(Problem(f"{subject}: after: no other stage named '{other}'",
                                        source.locate(where + ("after", i)), suggest(other, [s for s in raw if s != name])))
        stages[name] = StageSpec(name, spec["uses"], stage_cls, fill_defaults(params, stage_cls.params_schema),
                                 port_refs, after, source.locate(where, key=True))
    return stages


def _is_str(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _resolve_ports(
    name: str, stage_cls: type[Stage], given: dict[str, Any], raw: dict[str, Any],
    stage_classes: dict[str, type[Stage]], inputs: set[str], source: SourceMap, problems: list[Problem],
) -> dict[str, Ref | list[Ref]]:
    subject = f"stage '{name}' ({stage_cls.type})"
    where = ("stages", name, "in")
    resolved: dict[str, Ref | list[Ref]] = {}
    port_names = [p.name for p in stage_cls.inputs]
    for port_name, value in given.items():
        port = stage_cls.input_port(port_name)
        if port is None:
            problems.append(Problem(f"{subject}: it has no input '{port_name}'", source.locate(where + (port_name,), key=True),
                                    suggest(port_name, port_names) or f"its inputs: {', '.join(port_names) or 'none'}"))
            continue
        if isinstance(value, list) and not port.many:
            problems.append(Problem(f"{subject}: input '{port_name}' takes one reference, got a list",
                                    source.locate(where + (port_name,)), "give a single reference"))
            continue
        texts = value if isinstance(value, list) else [value]
        refs = []
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not REFERENCE.match(text):
                continue  # the schema check reports it
            loc = source.locate(where + (port_name, i) if isinstance(value, list) else where + (port_name,))
            ref = _check_ref(text, name, stage_classes, raw, inputs, subject, loc, problems)
            if ref is not None:
                refs.append(ref)
        resolved[port_name] = refs if port.many else (refs[0] if refs else None)  # type: ignore[assignment]
    for port in stage_cls.inputs:
        if not port.optional and port.name not in given:
            problems.append(Problem(f"{subject}: missing input '{port.name}' ({port.kind.value}: {port.description})",
                                    source.locate(("stages", name), key=True), f"add `in: {{{port.name}: <reference>}}`"))
    return {k: v for k, v in resolved.items() if v is not None and v != []}


def _check_ref(
    text: str, owner: str, stage_classes: dict[str, type[Stage]], raw: dict[str, Any], inputs: set[str],
    subject: str, loc: Location, problems: list[Problem],
) -> Ref | None:
    source_name, _, item = text.partition(".")
    if source_name == "inputs":
        if item not in inputs:
            problems.append(Problem(f"{subject}: unknown reference '{text}': no input '{item}'", loc,
                                    suggest(item, list(inputs)) or "declare it under `inputs:`"))
            return None
        return Ref("inputs", item)
    if source_name not in raw:
        problems.append(Problem(f"{subject}: unknown reference '{text}': no stage '{source_name}'", loc,
                                suggest(source_name, [*raw, "inputs"]) or "references are inputs.<name> or <stage>.<output>"))
        return None
    if source_name == owner:
        problems.append(Problem(f"{subject}: '{text}' refers to the stage itself", loc, "a stage cannot consume its own output"))
        return None
    upstream_cls = stage_classes.get(source_name)
    if upstream_cls is None:
        return None  # its unknown type is already reported
    if upstream_cls.output_port(item) is None:
        names = [p.name for p in upstream_cls.outputs]
        problems.append(Problem(f"{subject}: unknown reference '{text}': {upstream_cls.type} has no output '{item}'", loc,
                                suggest(item, names) or f"its outputs: {', '.join(names) or 'none'}"))
        return None
    return Ref(source_name, item)
