"""A matrix stage's combinations, as CI matrices define them: the product of its axes, less `exclude`
entries, plus `include` entries (extending the combinations they agree with, or standing alone)."""

from __future__ import annotations

import itertools
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from ortflow.engine.leaves.errors import Problem, RecipeError, suggest
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.yamlsource import PathKey, SourceMap, parse_yaml
from ortflow.engine.recipe.stage_entry import StageEntry

RESERVED = ("include", "exclude")
SPECIAL = re.compile(r'[,=\[\]{}"#:\\]|[\x00-\x1f]')


def label(value: Any) -> str:
    """A value as it appears in an instance id."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str) and (SPECIAL.search(value) or not _reads_back(value)):
        return json.dumps(value)  # quoted, so ids stay unambiguous and a selector can name them
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _reads_back(text: str) -> bool:
    """Whether a selector value written as `text` (read as YAML) is this very string."""
    try:
        return bool(text) and parse_yaml(text, "a matrix value")[0] == text
    except RecipeError:
        return False


@dataclass
class Combination:
    values: JsonObject
    origin: dict[str, PathKey]  # where each value is written: an axis, or an include entry


def combinations(
    name: str, spec: StageEntry, source: SourceMap, problems: list[Problem], limit: int
) -> list[Combination]:
    """The matrix's combinations, in CI-matrix order: the product of its axes, less `exclude`, plus
    `include` (each value remembers where it is written, for error messages)."""
    matrix = spec.matrix
    if not isinstance(matrix, dict):
        return [Combination({}, {})]  # no matrix (or a malformed one, which the schema reports)
    where = ("stages", name, "matrix")
    axes = {k: v for k, v in matrix.items() if k not in RESERVED and isinstance(v, list) and v}
    size = math.prod(len(v) for v in axes.values()) if axes else 0
    if size > 100 * limit:  # do not enumerate a product that is refused anyway
        problems.append(
            Problem(
                f"stage '{name}': its matrix has {size} combinations, over the limit of {limit} stages",
                source.locate(where, key=True),
                "narrow the matrix, or raise `max_stages:` in the recipe",
            )
        )
        return [Combination({}, {})]
    combos = (
        [
            Combination(
                {k: v for k, (_, v) in zip(axes, picked)},
                {k: where + (k, i) for k, (i, _) in zip(axes, picked)},
            )
            for picked in itertools.product(*(list(enumerate(v)) for v in axes.values()))
        ]
        if axes
        else []
    )
    combos = _excluded(name, matrix.get("exclude"), axes, combos, where, source, problems)
    _check_with_overlap(name, spec, axes, source, problems)
    combos = _included(matrix.get("include"), axes, combos, where)
    if not combos:
        what = (
            "exclude removes every combination of its matrix"
            if axes
            else "its matrix has no combinations"
        )
        problems.append(
            Problem(
                f"stage '{name}': {what}",
                source.locate(where, key=True),
                "remove an exclude entry"
                if axes
                else "give an axis (a parameter and a list of values)",
            )
        )
        return [Combination({}, {})]
    return _unique_axes_first(axes, combos)


def _excluded(
    name: str,
    excluded: Json,
    axes: dict[str, list[Json]],
    combos: list[Combination],
    where: PathKey,
    source: SourceMap,
    problems: list[Problem],
) -> list[Combination]:
    """Less the combinations an `exclude:` entry matches (`excluded`: the list as written)."""
    for i, entry in enumerate(excluded if isinstance(excluded, list) else []):
        if not isinstance(entry, dict):
            continue
        unknown = [k for k in entry if k not in axes]
        if unknown:
            problems.append(
                Problem(
                    f"stage '{name}': exclude entry names '{unknown[0]}', which is not a matrix axis",
                    source.locate(where + ("exclude", i)),
                    suggest(unknown[0], list(axes)) or f"its axes: {', '.join(axes) or 'none'}",
                )
            )
            continue
        combos = [c for c in combos if not _matches(c, entry)]
    return combos


def _check_with_overlap(
    name: str,
    spec: StageEntry,
    axes: dict[str, list[Json]],
    source: SourceMap,
    problems: list[Problem],
) -> None:
    """A parameter set both in `with:` and by the matrix is ambiguous: refused."""
    block = spec.params
    written = block if isinstance(block, dict) else {}
    for axis in axes:
        top = axis.split(".")[0]
        if top in written and (
            top == axis or not isinstance(written[top], dict) or _nested(written, axis) is not None
        ):
            problems.append(
                Problem(
                    f"stage '{name}': '{axis}' is both in `with:` and a matrix axis; the matrix values "
                    "replace it",
                    source.locate(("stages", name, "with", top), key=True),
                    f"remove '{axis}' from `with:` (or from the matrix)",
                )
            )


def _included(
    included: Json, axes: dict[str, list[Json]], combos: list[Combination], where: PathKey
) -> list[Combination]:
    """As in CI matrices: an entry that agrees with existing combinations on their axes extends them with its
    other keys; one that matches none is a combination of its own. Only the product's own combinations are
    extended (as in GitHub Actions), never an earlier include's. `included`: `include:` as written."""
    originals = list(combos)
    for i, entry in enumerate(included if isinstance(included, list) else []):
        if not isinstance(entry, dict):
            continue
        on_axes = {k: v for k, v in entry.items() if k in axes}
        matching = [c for c in originals if _matches(c, on_axes)]
        extra = {k: v for k, v in entry.items() if k not in axes}
        written = {k: where + ("include", i, k) for k in entry}
        if matching:
            for combo in matching:
                combo.values.update(extra)
                combo.origin.update({k: written[k] for k in extra})
        else:
            combos.append(Combination(dict(entry), written))
    return combos


def _unique_axes_first(axes: dict[str, list[Json]], combos: list[Combination]) -> list[Combination]:
    """Each distinct combination once, its values ordered axes first (the order ids show them in)."""
    rank = {
        k: i for i, k in enumerate(dict.fromkeys([*axes, *(k for c in combos for k in c.values)]))
    }
    seen: set[str] = set()
    unique = []
    for combo in combos:
        combo.values = dict(sorted(combo.values.items(), key=lambda item: rank[item[0]]))
        key = json.dumps(combo.values, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            unique.append(combo)
    return unique


def _nested(params: Json, dotted: str) -> Json:
    """The value at a dotted key (`session.threads`), or None where there is none."""
    node = params
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _matches(combo: Combination, entry: JsonObject) -> bool:
    """Whether the combination has each of an include or exclude entry's values (as its id shows them)."""
    values = combo.values
    return all(k in values and label(values[k]) == label(v) for k, v in entry.items())
