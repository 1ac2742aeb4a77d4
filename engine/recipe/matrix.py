"""Matrix stages: one stage written with `matrix:` becomes one stage instance per combination, before any
other check, so every instance is validated, keyed, cached and scheduled like a stage written by hand.

Instance ids are readable and stable: `int8[activation_type=QInt8,per_channel=true]`. References select
instances: `int8.model[*]` is all of them (a list for a port taking many; one instance of the consumer per
variant for a port taking one), `int8[per_channel=true].model` is the one matching. A consumer that fans
out over several matrix stages gets the combinations that agree on the axes they share.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, replace
from typing import Iterator

from ortflow.engine.leaves.errors import Problem
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.yamlsource import KEY, PathKey, SourceMap
from ortflow.engine.recipe.matrix_combinations import Combination, combinations, label
from ortflow.engine.recipe.matrix_references import Instance, fan_out, upstreams
from ortflow.engine.recipe.stage_entry import StageEntry

DEFAULT_MAX_STAGES = 256


@dataclass
class Expansion:
    stages: dict[str, StageEntry]  # `stages:` with every matrix expanded and references rewritten
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
    raw: dict[str, StageEntry],
    ports: dict[str, dict[str, bool]],
    source: SourceMap,
    max_stages: int,
) -> Expansion:
    """`ports`: per stage name, its input ports and whether each takes many references (unknown types: {})."""
    pending = [name for name, spec in raw.items() if spec.mapping]
    # the schema reports the stages that are not mappings
    work = _Expanding(
        source, [], {}, {name: spec for name, spec in raw.items() if not spec.mapping}
    )
    total = len(pending)
    positions = _positions_by_stage(source)
    for name in _expansion_order(raw, pending):
        spec = raw[name]  # a mapping: pending holds those only
        combos = combinations(name, spec, source, work.problems, max_stages)
        fanned = work.fan_out(name, spec, ports.get(name, {}), combos)
        # an instance has no `matrix:`: copying the matrix's own positions into every instance would be quadratic
        written = [
            (rest, where) for rest, where in positions.get(name, []) if rest[:1] != ("matrix",)
        ]
        made = work.instantiate(name, spec, combos, fanned, written)
        work.instances[name] = (
            made if fanned else None
        )  # None: reported; its consumers say nothing more about it
        total += len(made) - 1
        if total > max_stages and len(made) > 1:
            work.problems.append(
                Problem(
                    f"stage '{name}' expands to {len(made)} stages, the recipe to {total} so far, over the "
                    f"limit of {max_stages}",
                    source.locate(("stages", name, "matrix"), key=True),
                    "narrow the matrix or add `exclude:` entries, or raise `max_stages:` in the recipe",
                )
            )
            return Expansion({}, work.instances, work.problems)
    _wait_on_every_variant(work.out, work.instances)
    return Expansion(work.out, work.instances, work.problems)


@dataclass(frozen=True)
class _Expanding:
    """What expanding the stages one by one builds up: the problems found, each template's instances so far
    (what later references select from) and the expanded `stages:` mapping."""

    source: SourceMap
    problems: list[Problem]
    instances: dict[str, list[Instance] | None]
    out: dict[str, StageEntry]

    def fan_out(
        self, name: str, spec: StageEntry, ports: dict[str, bool], combos: list[Combination]
    ) -> list[tuple[dict[str, str], Json]]:
        """The variants of the stage's inputs (see matrix_references.fan_out), checked against its own
        combinations: an axis both inherited and its own keeps only the first variant; none at all is
        reported."""
        fanned = fan_out(name, spec, ports, self.instances, self.source, self.problems)
        clash = sorted(
            {k for inherited, _ in fanned for k in inherited}
            & {k for combo in combos for k in combo.values}
        )
        if clash:
            self.problems.append(
                Problem(
                    f"stage '{name}': matrix axis '{clash[0]}' is also an axis of a matrix stage it fans "
                    "out over",
                    self.source.locate(("stages", name, "matrix", clash[0]), key=True),
                    "drop the axis here, or select one upstream variant",
                )
            )
            fanned = fanned[:1]
        if not fanned:
            self.problems.append(
                Problem(
                    f"stage '{name}': the variants of the matrix stages it fans out over never agree on "
                    "the axes they share, so it would have no instance",
                    self.source.locate(("stages", name, "in")),
                    "fan out over one of them, or select matching variants",
                )
            )
        return fanned

    def instantiate(
        self,
        name: str,
        spec: StageEntry,
        combos: list[Combination],
        fanned: list[tuple[dict[str, str], Json]],
        written: list[tuple[PathKey, tuple[int, int] | str]],
    ) -> list[Instance]:
        """One instance per input variant and combination, added to `out` (an id taken already is reported
        and skipped), its errors pointing into the stage as written."""
        made: list[Instance] = []
        for inherited, rewritten in fanned:
            for combo in combos:
                axes = {**inherited, **{k: label(v) for k, v in combo.values.items()}}
                made.append(Instance(_instance_id(name, axes), name, axes))
                if made[-1].id in self.out and made[-1].id != name:
                    self.problems.append(
                        Problem(
                            f"stage '{name}': two combinations are both named {made[-1].id} (values that "
                            'read the same, such as 1 and "1")',
                            self.source.locate(("stages", name, "matrix"), key=True),
                            "make the values distinct",
                        )
                    )
                    made.pop()
                    continue
                self.out[made[-1].id] = _instance_spec(spec, combo, rewritten)
                if made[-1].id != name:
                    _alias_positions(self.source, written, made[-1].id, combo.origin)
        return made


def _wait_on_every_variant(
    out: dict[str, StageEntry], instances: dict[str, list[Instance] | None]
) -> None:
    """`after: [int8]` waits for every variant of int8."""
    for spec in out.values():
        if spec.mapping:
            spec.after = [
                x
                for a in spec.after
                for x in (
                    [i.id for i in instances[a] or []]
                    if isinstance(a, str) and a in instances and a not in out
                    else [a]
                )
            ]


def _expansion_order(raw: dict[str, StageEntry], pending: list[str]) -> Iterator[str]:
    """Stages in the order they expand: each once every stage it references has (Kahn's algorithm; among the
    ready ones the first written; on a cycle the first written of what is left: it is reported later).
    Linear in stages plus references."""
    index = {name: i for i, name in enumerate(pending)}
    waits_on: dict[str, int] = {}
    consumers: dict[str, list[str]] = {}
    for name in pending:
        ups = upstreams(raw[name]) & index.keys()
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


def _instance_id(name: str, axes: dict[str, str]) -> str:
    return f"{name}[{','.join(f'{k}={v}' for k, v in axes.items())}]" if axes else name


def _instance_spec(spec: StageEntry, combo: Combination, rewritten_in: Json) -> StageEntry:
    """The stage as written less its matrix, the combination's values set in its `with:` (a copy: each
    instance's own) and its `in:` rewritten to the upstream instances it reads."""
    params = json.loads(json.dumps(spec.params)) if isinstance(spec.params, dict) else {}
    for dotted, value in combo.values.items():
        node = params
        *parents, last = dotted.split(".")  # `session.threads` sets a nested parameter
        for part in parents:
            node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
        node[last] = value
    return replace(spec, matrix=None, params=params, inputs=rewritten_in)


def _alias_positions(
    source: SourceMap,
    written: list[tuple[PathKey, tuple[int, int] | str]],
    instance_id: str,
    origin: dict[str, PathKey],
) -> None:
    """Errors about an instance point into the stage as written; a parameter set by the matrix, at the axis
    value, include entry or override that set it."""
    for rest, where in written:
        alias: PathKey = ("stages", instance_id, *rest)
        if isinstance(where, str):
            source.origins[alias] = where
        else:
            source.positions[alias] = where
    for dotted, path in origin.items():
        set_at = _written_at(source, path)
        if set_at is None:
            continue
        parts = dotted.split(".")
        for depth in range(1, len(parts) + 1):  # an error about `x` in `x.y` points there too
            target = ("stages", instance_id, "with", *parts[:depth])
            if isinstance(set_at, str):
                source.origins[target] = set_at
            else:
                source.positions[target] = set_at
                source.positions[target + (KEY,)] = set_at


def _written_at(source: SourceMap, path: PathKey) -> tuple[int, int] | str | None:
    """As SourceMap.locate: the nearest enclosing value that was written somewhere, override or file."""
    while len(path) > 3:  # not above the matrix itself
        if path in source.origins:
            return source.origins[path]
        if path in source.positions:
            return source.positions[path]
        path = path[:-1]
    return None
