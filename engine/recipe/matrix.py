"""Matrix stages: one stage written with `matrix:` becomes one stage instance per combination, before any
other check, so every instance is validated, keyed, cached and scheduled like a stage written by hand.

Instance ids are readable and stable: `int8[activation_type=QInt8,per_channel=true]`. References select
instances: `int8.model[*]` is all of them (a list for a port taking many; one instance of the consumer per
variant for a port taking one), `int8[per_channel=true].model` is the one matching. A consumer that fans
out over several matrix stages gets the combinations that agree on the axes they share.
"""

from __future__ import annotations

import heapq
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

import yaml

from ortflow.engine.errors import Location, Problem
from ortflow.engine.json_types import JsonObject
from ortflow.engine.recipe.matrix_combinations import combinations, label
from ortflow.engine.recipe.yamlsource import KEY, PathKey, SourceMap

DEFAULT_MAX_STAGES = 256
MATRIX_REFERENCE = re.compile(
    r"^(?P<stage>[A-Za-z_][A-Za-z0-9_-]*)(?:\[(?P<select>.*)\])?\.(?P<output>[A-Za-z_][A-Za-z0-9_-]*)(?P<all>\[\*\])?$"
)


@dataclass
class Instance:
    """One stage instance: its id and the axis values that tell it from its siblings."""

    id: str
    template: str
    axes: dict[str, str] = field(default_factory=dict)


@dataclass
class Expansion:
    stages: JsonObject  # the `stages:` mapping with every matrix expanded and references rewritten
    instances: dict[
        str, list[Instance] | None
    ]  # template -> its instances (one, named as written, without a
    # matrix; None where the expansion failed)
    problems: list[Problem]

    @property
    def matrices(self) -> dict[str, list[str]]:
        """Template -> instance ids, for the stages that expanded (targets and plans name them by template)."""
        return {
            t: [i.id for i in found]
            for t, found in self.instances.items()
            if found and found[0].id != t
        }


def expand(
    raw: JsonObject, ports: dict[str, dict[str, bool]], source: SourceMap, max_stages: int
) -> Expansion:
    """`ports`: per stage name, its input ports and whether each takes many references (unknown types: {})."""
    problems: list[Problem] = []
    instances: dict[str, list[Instance] | None] = {}
    out: JsonObject = {}
    pending = [name for name, spec in raw.items() if isinstance(spec, dict)]
    out.update(
        {name: spec for name, spec in raw.items() if not isinstance(spec, dict)}
    )  # the schema reports them
    total = sum(1 for spec in raw.values() if isinstance(spec, dict))
    positions = _positions_by_stage(source)
    for name in _expansion_order(raw, pending):
        spec = raw[name]
        combos = combinations(name, spec, source, problems, max_stages)
        fanned = _fan_out(name, spec, ports.get(name, {}), instances, source, problems)
        clash = sorted(
            {k for inherited, _ in fanned for k in inherited}
            & {k for combo in combos for k in combo.values}
        )
        if clash:
            problems.append(
                Problem(
                    f"stage '{name}': matrix axis '{clash[0]}' is also an axis of a matrix stage it fans "
                    "out over",
                    source.locate(("stages", name, "matrix", clash[0]), key=True),
                    "drop the axis here, or select one upstream variant",
                )
            )
            fanned = fanned[:1]
        if not fanned:
            problems.append(
                Problem(
                    f"stage '{name}': the variants of the matrix stages it fans out over never agree on "
                    "the axes they share, so it would have no instance",
                    source.locate(("stages", name, "in")),
                    "fan out over one of them, or select matching variants",
                )
            )
        made: list[Instance] = []
        # an instance has no `matrix:`: copying the matrix's own positions into every instance would be quadratic
        written = [
            (rest, where) for rest, where in positions.get(name, []) if rest[:1] != ("matrix",)
        ]
        for inherited, rewritten in fanned:
            for combo in combos:
                axes = {**inherited, **{k: label(v) for k, v in combo.values.items()}}
                made.append(Instance(_instance_id(name, axes), name, axes))
                if made[-1].id in out and made[-1].id != name:
                    problems.append(
                        Problem(
                            f"stage '{name}': two combinations are both named {made[-1].id} (values that "
                            'read the same, such as 1 and "1")',
                            source.locate(("stages", name, "matrix"), key=True),
                            "make the values distinct",
                        )
                    )
                    made.pop()
                    continue
                out[made[-1].id] = _instance_spec(spec, combo.values, rewritten)
                if made[-1].id != name:
                    _alias_positions(source, written, made[-1].id, combo.origin)
        instances[name] = (
            made if fanned else None
        )  # None: reported; its consumers say nothing more about it
        total += len(made) - 1
        if total > max_stages and len(made) > 1:
            problems.append(
                Problem(
                    f"stage '{name}' expands to {len(made)} stages, the recipe to {total} so far, over the "
                    f"limit of {max_stages}",
                    source.locate(("stages", name, "matrix"), key=True),
                    "narrow the matrix or add `exclude:` entries, or raise `max_stages:` in the recipe",
                )
            )
            return Expansion({}, instances, problems)
    for spec in out.values():  # `after: [int8]` waits for every variant of int8
        if isinstance(spec, dict) and isinstance(spec.get("after"), list):
            spec["after"] = [
                x
                for a in spec["after"]
                for x in (
                    [i.id for i in instances[a] or []]
                    if isinstance(a, str) and a in instances and a not in out
                    else [a]
                )
            ]
    return Expansion(out, instances, problems)


def _expansion_order(raw: JsonObject, pending: list[str]) -> Iterator[str]:
    """Stages in the order they expand: each once every stage it references has (Kahn's algorithm; among the
    ready ones the first written; on a cycle the first written of what is left: it is reported later).
    Linear in stages plus references."""
    index = {name: i for i, name in enumerate(pending)}
    waits_on: dict[str, int] = {}
    consumers: dict[str, list[str]] = {}
    for name in pending:
        ups = _upstreams(raw[name]) & index.keys()
        waits_on[name] = len(ups)
        for up in ups:
            consumers.setdefault(up, []).append(name)
    ready = [index[n] for n in pending if not waits_on[n]]
    heapq.heapify(ready)
    done: set[str] = set()
    first = 0  # pending[:first] are all done
    while len(done) < len(pending):
        if ready:
            name = pending[heapq.heappop(ready)]
        else:  # a cycle: go on without
            while pending[first] in done:
                first += 1
            name = pending[first]
        if name in done:
            continue
        done.add(name)
        yield name
        for consumer in consumers.get(name, ()):
            waits_on[consumer] -= 1
            if not waits_on[consumer] and consumer not in done:
                heapq.heappush(ready, index[consumer])


def _positions_by_stage(
    source: SourceMap,
) -> dict[str, list[tuple[PathKey, tuple[int, int] | str]]]:
    """Where everything under each `stages.<name>` was written (file positions, then --set/--params origins),
    by stage, in one pass (an instance id is never a stage name, so aliases added later never belong here)."""
    found: dict[str, list[tuple[PathKey, tuple[int, int] | str]]] = {}
    for table in (source.positions, source.origins):
        for path, where in table.items():
            if len(path) >= 2 and path[0] == "stages":
                found.setdefault(path[1], []).append((path[2:], where))
    return found


def _upstreams(spec: JsonObject) -> set[str]:
    found = set()
    for value in (spec.get("in") or {}).values() if isinstance(spec.get("in"), dict) else ():
        for text in value if isinstance(value, list) else [value]:
            match = MATRIX_REFERENCE.match(text) if isinstance(text, str) else None
            if match and match["stage"] not in ("inputs", "datasets"):
                found.add(match["stage"])
    return found


def _fan_out(
    name: str,
    spec: JsonObject,
    ports: dict[str, bool],
    instances: dict[str, list[Instance]],
    source: SourceMap,
    problems: list[Problem],
) -> list[tuple[dict[str, str], JsonObject]]:
    """Each variant of the stage's inputs: the axes it inherits, and `in:` with references to instance ids."""
    given = spec.get("in") if isinstance(spec.get("in"), dict) else None
    if given is None:
        return [({}, spec.get("in"))]
    fixed: JsonObject = {}
    choices: list[
        list[tuple[str, Instance | None, str]]
    ] = []  # per fanning port: (port, instance, reference)
    for port, value in given.items():
        many = ports.get(port, isinstance(value, list))
        texts = value if isinstance(value, list) else [value]
        resolved: list[Any] = []
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
                resolved = None  # type: ignore[assignment]
                break
        if resolved is not None:
            fixed[port] = (
                resolved if many or isinstance(value, list) or len(resolved) != 1 else resolved[0]
            )
    variants = []
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
    instances: dict[str, list[Instance]],
    where: Location,
    owner: str,
    problems: list[Problem],
) -> tuple[str, bool, list[Instance]] | None | bool:
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
        wanted = _selector(match["select"])
        if wanted is None:
            problems.append(
                Problem(
                    f"stage '{owner}': cannot read the selector in '{text}'",
                    where,
                    "write it as stage[axis=value,...].output",
                )
            )
            return False
        found = [i for i in found if all(i.axes.get(k) == v for k, v in wanted.items())]
        if not found:
            problems.append(
                Problem(
                    f"stage '{owner}': no variant of '{match['stage']}' matches [{match['select']}]",
                    where,
                    "its variants: " + ", ".join(i.id for i in instances[match["stage"]]),
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


def _selector(text: str) -> dict[str, str] | None:
    pairs: dict[str, str] = {}
    for part in _split_top_level(text):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            return None
        try:  # written as YAML: `per_channel=True` selects the variant labelled `true`, `text="a,b"` a quoted one
            pairs[key.strip()] = label(yaml.safe_load(value.strip()))
        except yaml.YAMLError:
            pairs[key.strip()] = value.strip()
    return pairs


def _split_top_level(text: str) -> list[str]:
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


def _instance_id(name: str, axes: dict[str, str]) -> str:
    return f"{name}[{','.join(f'{k}={v}' for k, v in axes.items())}]" if axes else name


def _instance_spec(spec: JsonObject, combo: JsonObject, rewritten_in: Any) -> JsonObject:
    instance = {k: v for k, v in spec.items() if k != "matrix"}
    params = json.loads(json.dumps(spec.get("with"))) if isinstance(spec.get("with"), dict) else {}
    for dotted, value in combo.items():
        node = params
        *parents, last = dotted.split(".")  # `session.threads` sets a nested parameter
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[last] = value
    if combo or "with" in spec:
        instance["with"] = params
    if rewritten_in is not None:
        instance["in"] = rewritten_in
    return instance


def _alias_positions(
    source: SourceMap,
    written: list[tuple[PathKey, tuple[int, int] | str]],
    instance_id: str,
    origin: dict[str, PathKey],
) -> None:
    """Errors about an instance point into the stage as written; a parameter set by the matrix, at the axis
    value, include entry or override that set it."""
    for rest, where in written:
        table = source.origins if isinstance(where, str) else source.positions
        table[("stages", instance_id, *rest)] = where  # type: ignore[assignment]
    for dotted, path in origin.items():
        where = _written_at(source, path)
        if where is None:
            continue
        parts = dotted.split(".")
        for depth in range(1, len(parts) + 1):  # an error about `x` in `x.y` points there too
            target = ("stages", instance_id, "with", *parts[:depth])
            if isinstance(where, str):
                source.origins[target] = where
            else:
                source.positions[target] = where
                source.positions[target + (KEY,)] = where


def _written_at(source: SourceMap, path: PathKey) -> tuple[int, int] | str | None:
    """As SourceMap.locate: the nearest enclosing value that was written somewhere, override or file."""
    while len(path) > 3:  # not above the matrix itself
        if path in source.origins:
            return source.origins[path]
        if path in source.positions:
            return source.positions[path]
        path = path[:-1]
    return None
