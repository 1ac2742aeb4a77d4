"""Recipe overrides from the command line (`--set key=value`) and params files, applied before validation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ortflow.engine.leaves.errors import Location, Problem, RecipeError, suggest
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.yamlsource import SourceMap, load_yaml, parse_yaml

TOP_LEVEL_KEYS = ("version", "name", "description", "max_stages", "inputs", "datasets", "stages")


@dataclass(frozen=True)
class Override:
    """One value set over the recipe: `dotted` names where (`opt.with.level`), `value` is the user's (read as
    YAML) and `origin` says where it was given, for the errors that name it (`--set opt.with.level`)."""

    dotted: str
    value: Json
    origin: str


def apply_overrides(
    data: JsonObject, source: SourceMap, overrides: list[str], params_file: Path | None
) -> list[Problem]:
    """Set each override in `data`, recording its origin in `source` so errors name the override."""
    assignments = _read_params_file(params_file) if params_file else []
    assignments += [_parse_set(text) for text in overrides]
    problems: list[Problem] = []
    for override in assignments:
        problems.extend(_apply_override(data, source, override))
    return problems


def _parse_set(text: str) -> Override:
    if "=" not in text:
        raise RecipeError(
            [Problem(f"--set {text}: expected KEY=VALUE, e.g. --set opt.with.level=all")]
        )
    dotted, raw = text.split("=", 1)
    value, _ = parse_yaml(raw, f"--set {dotted}") if raw.strip() else ("", None)
    return Override(dotted.strip(), value, f"--set {dotted.strip()}")


def _read_params_file(path: Path) -> list[Override]:
    data, source = load_yaml(Path(path))
    if not isinstance(data, dict):
        raise RecipeError(
            [
                Problem(
                    "a params file must map dotted keys to values",
                    Location(str(path)),
                    "e.g. `opt.with.level: all`",
                )
            ]
        )
    return [Override(str(k), v, str(source.locate((k,), key=True))) for k, v in data.items()]


def _apply_override(data: JsonObject, source: SourceMap, override: Override) -> list[Problem]:
    dotted, value, origin = override.dotted, override.value, override.origin
    parts = [p for p in dotted.split(".")]
    if not all(parts):
        return [
            Problem(f"{origin}: '{dotted}' is not a dotted key", hint="e.g. opt.with.level=all")
        ]
    if parts[0] not in TOP_LEVEL_KEYS:
        parts = ["stages", *parts]  # `opt.with.level` is short for `stages.opt.with.level`
    if parts[0] == "stages" and len(parts) > 4 and parts[2] == "matrix":
        parts = [
            *parts[:3],
            ".".join(parts[3:]),
        ]  # a matrix axis may itself be dotted: `extra_options.X`
    if parts[0] == "inputs" and len(parts) == 3 and parts[2] in ("path", "package", "file"):
        current = data.setdefault(
            "inputs", {}
        )  # an `inputs:` of another shape: the schema reports it
        inputs: JsonObject = current if isinstance(current, dict) else {}
        entry = inputs.get(parts[1])
        if parts[2] == "path" or not isinstance(entry, dict) or "path" in entry:
            entry = {}  # switching between a path and a package file replaces the input as a whole
        inputs[parts[1]] = {**entry, parts[2]: value}
        source.origins[("inputs", parts[1])] = origin
        source.origins[tuple(parts)] = origin
        return []
    if parts[0] == "stages" and len(parts) > 2:
        found = data.get("stages")
        stages = found if isinstance(found, dict) else {}
        if parts[1] not in stages:
            return [
                Problem(
                    f"{origin}: the recipe has no stage '{parts[1]}'",
                    hint=suggest(parts[1], list(stages)),
                )
            ]
    node: Json = data
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict):
            return [
                Problem(
                    f"{origin}: '{'.'.join(parts[:depth])}' is not a mapping, cannot set '{part}' in it"
                )
            ]
        node = node.setdefault(part, {})
    if not isinstance(node, dict):
        return [Problem(f"{origin}: '{'.'.join(parts[:-1])}' is not a mapping")]
    node[parts[-1]] = value
    source.origins[tuple(parts)] = origin
    return []
