"""Tiny in-memory recipes for the recipe unit tests: YAML text parsed with positions, no files, no ORT sessions."""

from __future__ import annotations

import textwrap
from pathlib import Path

from ortflow.engine.contracts.types import Binding, Recipe, Ref, StageSpec
from ortflow.engine.leaves.errors import Location
from ortflow.engine.leaves.yamlsource import SourceMap, parse_yaml

NAME = "recipe.yaml"


def parsed(text: str) -> tuple[dict, SourceMap]:
    """`text` (dedented) as the engine reads a recipe: data and where each value was written."""
    return parse_yaml(textwrap.dedent(text), NAME)


def graph_recipe(stages: dict[str, tuple[list[str], list[str]]]) -> Recipe:
    """A resolved recipe of toy stages: name -> (references such as `a.model` or `inputs.model`, `after:` names),
    each stage "written" on its own line. The graph never uses a stage's class, so it is a plain object."""
    specs = {}
    for line, (name, (refs, after)) in enumerate(stages.items(), start=1):
        ports = {"in": Binding(tuple(Ref(*ref.split(".")) for ref in refs), True)} if refs else {}
        specs[name] = StageSpec(
            name, "toy", object, {}, ports, list(after), Location(NAME, line, 3)
        )
    return Recipe(Path(NAME), "toy", {}, {}, specs, SourceMap(NAME))


def at(text: str, needle: str, nth: int = 1) -> str:
    """`recipe.yaml:LINE:COL` of the `nth` occurrence of `needle` in the dedented `text`: where an error must point."""
    lines = textwrap.dedent(text).splitlines()
    seen = 0
    for number, line in enumerate(lines, start=1):
        start = line.find(needle)
        while start >= 0:
            seen += 1
            if seen == nth:
                return f"{NAME}:{number}:{start + 1}"
            start = line.find(needle, start + 1)
    raise AssertionError(f"{needle!r} is not in the recipe {nth} times")
