"""References between matrix stages: which upstream stages a stage names, which instances a reference
selects (`int8.model[*]`, `int8[per_channel=true].model`), and the variants of a stage's `in:` that fanning
out over them gives."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ortflow.engine.leaves.errors import Location, Problem, RecipeError
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.yamlsource import SourceMap, parse_yaml
from ortflow.engine.recipe.matrix_combinations import label
from ortflow.engine.recipe.stage_entry import StageEntry

MATRIX_REFERENCE = re.compile(
    r"^(?P<stage>[A-Za-z_][A-Za-z0-9_-]*)(?:\[(?P<select>.*)\])?\.(?P<output>[A-Za-z_][A-Za-z0-9_-]*)(?P<all>\[\*\])?$"
)


@dataclass
class Instance:
    """One stage instance: its id and the axis values that tell it from its siblings."""

    id: str
    template: str
    axes: dict[str, str] = field(default_factory=dict)


def upstreams(spec: StageEntry) -> set[str]:
    found = set()
    given = spec.inputs
    for value in given.values() if isinstance(given, dict) else ():
        for text in value if isinstance(value, list) else [value]:
            match = MATRIX_REFERENCE.match(text) if isinstance(text, str) else None
            if match and match["stage"] not in ("inputs", "datasets"):
                found.add(match["stage"])
    return found


def fan_out(
    name: str,
    spec: StageEntry,
    ports: dict[str, bool],
    instances: dict[str, list[Instance] | None],
    source: SourceMap,
    problems: list[Problem],
) -> list[tuple[dict[str, str], Json]]:
    """Each variant of the stage's inputs: the axes it inherits, and `in:` with references to instance ids."""
    given = spec.inputs if isinstance(spec.inputs, dict) else None
    if given is None:
        return [({}, spec.inputs)]
    fixed: JsonObject = {}
    choices: list[
        list[tuple[str, Instance | None, str]]
    ] = []  # per fanning port: (port, instance, reference)
    for port, value in given.items():
        many = ports.get(port, isinstance(value, list))
        texts = value if isinstance(value, list) else [value]
        resolved: list[Any] = []
        fans = False  # the port takes one reference to a stage with variants: this stage fans out on it
        for i, text in enumerate(texts):
            where = (
                ("stages", name, "in", port, i)
                if isinstance(value, list)
                else ("stages", name, "in", port)
            )
            found = _resolve(text, instances, source.locate(where), name, problems)
            if found is False:
                resolved.append(
                    ""
                )  # reported; an empty text is skipped by the later reference checks
                continue
            if found is None:
                resolved.append(
                    text
                )  # a source, a malformed text or an unknown stage: later checks report it
            elif (
                many or not found[1] or isinstance(value, list)
            ):  # a list on a one-reference port: reported later
                resolved.extend(f"{inst.id}.{found[0]}" for inst in found[2])
            else:
                choices.append([(port, inst, f"{inst.id}.{found[0]}") for inst in found[2]])
                fans = True
                break
        if not fans:
            fixed[port] = (
                resolved if many or isinstance(value, list) or len(resolved) != 1 else resolved[0]
            )
    return _variants(fixed, choices)


def _variants(
    fixed: JsonObject, choices: list[list[tuple[str, Instance | None, str]]]
) -> list[tuple[dict[str, str], Json]]:
    """One `in:` per combination of the fanning ports' upstream variants that agree on the axes they share."""
    variants: list[tuple[dict[str, str], Json]] = []
    for picked in itertools.product(*choices):
        axes: dict[str, str] = {}
        if any(
            axes.setdefault(k, v) != v
            for _, inst, _ in picked
            for k, v in (inst.axes if inst else {}).items()
        ):
            continue  # two upstream variants that disagree on an axis they share
        variants.append((axes, {**fixed, **{port: ref for port, _, ref in picked}}))
    return variants


def _resolve(
    text: Any,
    instances: dict[str, list[Instance] | None],
    where: Location,
    owner: str,
    problems: list[Problem],
) -> tuple[str, bool, list[Instance]] | Literal[False] | None:
    """(output, fans out, instances) for a reference to a stage; False for one it reported as wrong; None for
    anything else (a source, a malformed reference, an unknown stage: checked later)."""
    match = MATRIX_REFERENCE.match(text) if isinstance(text, str) else None
    if match is None or match["stage"] not in instances:
        return None
    found = instances[match["stage"]]
    if found is None:
        return False  # its own expansion failed, and said why
    expanded = bool(found) and found[0].id != match["stage"]
    if match["select"] is not None:
        wanted = selector(match["select"])
        if wanted is None:
            problems.append(
                Problem(
                    f"stage '{owner}': cannot read the selector in '{text}'",
                    where,
                    "write it as stage[axis=value,...].output",
                )
            )
            return False
        every, found = (
            found,
            [i for i in found if all(i.axes.get(k) == v for k, v in wanted.items())],
        )
        if not found:
            problems.append(
                Problem(
                    f"stage '{owner}': no variant of '{match['stage']}' matches [{match['select']}]",
                    where,
                    "its variants: " + ", ".join(i.id for i in every),
                )
            )
            return False
    if match["all"]:
        return match["output"], True, found
    if expanded and len(found) != 1:
        problems.append(
            Problem(
                f"stage '{owner}': '{text}' names {len(found)} variants of the matrix stage "
                f"'{match['stage']}'",
                where,
                f"take all with {match['stage']}.{match['output']}[*], or one:"
                f" {found[0].id}.{match['output']}",
            )
        )
        return False
    return match["output"], False, found


def selector(text: str) -> dict[str, str] | None:
    pairs: dict[str, str] = {}
    for part in split_top_level(text):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            return None
        try:  # written as YAML: `per_channel=True` selects the variant labelled `true`, `text="a,b"` a quoted one
            pairs[key.strip()] = label(parse_yaml(value.strip(), "a selector")[0])
        except RecipeError:
            pairs[key.strip()] = value.strip()
    return pairs


def split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets, braces and quotes (a list value's label contains commas)."""
    parts, depth, current, quoted, escaped = [], 0, "", False, False
    for char in text:
        if escaped:  # the character after a backslash inside quotes is plain text
            current, escaped = current + char, False
            continue
        escaped = quoted and char == "\\"
        quoted ^= char == '"'
        depth += char in "[{" and not quoted
        depth -= char in "]}" and not quoted
        if char == "," and depth == 0 and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current] if current or parts else []
