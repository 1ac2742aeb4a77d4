"""`<recipe>.lock`, owned by one class: Lock reads it (bounded, alias-free, checked against
schemas/lock.schema.json, so a damaged lock is reported at file:line:col as a recipe is), merges a run's
outcomes into it, answers what it records (drift, what gc keeps, what the cache may serve), and writes it back
as stable sorted YAML for git diffs."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, TypeGuard

import yaml

from ortflow.engine.contracts.builds import FloatValues, LockEntry, RunRecord
from ortflow.engine.contracts.stage import Stage
from ortflow.engine.contracts.stage import within_tolerance as values_agree
from ortflow.engine.contracts.types import QuietObserver, Recipe, StageOutcome, Status
from ortflow.engine.leaves.environment import fact
from ortflow.engine.leaves.errors import Location, OrtflowError, Problem, RecipeError
from ortflow.engine.leaves.json_types import Json, obj
from ortflow.engine.leaves.schema_check import problem as schema_problem
from ortflow.engine.leaves.secrets import redact_json
from ortflow.engine.publish.lock_families import inferred_family, split_by_family
from ortflow.engine.publish.lockfile import (
    FIX,
    HEADER,
    LOCK_SCHEMA,
    LockJson,
    PlainDumper,
    load_lock_yaml,
    read_bounded_text,
)
from ortflow.engine.store import atomic
from ortflow.engine.store.base import Mutexes
from ortflow.engine.store.hashing import hash_bytes


@lru_cache(maxsize=1)
def lock_schema() -> dict[str, Json]:  # a JSON Schema document
    return obj(
        json.loads(
            resources.files("ortflow.schemas")
            .joinpath("lock.schema.json")
            .read_text(encoding="utf-8")
        )
    )


def _fits_lock_schema(data: object) -> TypeGuard[LockJson]:
    """The data fits schemas/lock.schema.json, which is the LockJson form."""
    return schema_problem("lock", data) is None


def _problems(path: Path, data: Any) -> list[Problem]:
    """Each way `data` breaks the lock schema, at file:line:col. The lock's text is parsed again with
    positions only here, for a lock that is already known to be damaged (by the compiled check)."""
    from ortflow.engine.leaves.yamlsource import parse_yaml
    from ortflow.engine.recipe.schema_errors import validate

    _, source = parse_yaml(read_bounded_text(path), str(path))
    found = validate(data, lock_schema(), source) or [
        Problem("not an ortflow lock file", Location(str(path)))
    ]
    return [
        replace(problem, hint=FIX) for problem in found
    ]  # a machine-written file: restored, not edited


@dataclass(frozen=True, eq=False)
class Lock:
    """A lock file's content: the recipe's sources by digest and each stage's LockEntry, the base family's
    (`stages`, written by `family`) and other INT8 kernel families' where theirs differ (`families`,
    engine.publish.lock_families)."""

    path: Path
    stages: Mapping[str, LockEntry] = field(default_factory=dict)
    recipe: str | None = None
    inputs: Mapping[str, Mapping[str, str]] | None = None  # {name: {path, digest}}
    datasets: Mapping[str, Mapping[str, str]] | None = None  # {name: {loader, digest}}
    family: str | None = (
        None  # the kernel family `stages` was built on, once another family is recorded
    )
    families: Mapping[str, Mapping[str, LockEntry]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Lock:
        """The lock, or an empty one when there is none. A damaged lock is an error, not ignored."""
        path = Path(path)
        try:
            data = load_lock_yaml(path)
        except FileNotFoundError:
            return cls(path)
        if not isinstance(data, dict) or data.get("schema") != LOCK_SCHEMA:
            raise RecipeError(
                [
                    Problem(
                        f"not an ortflow lock file (schema {LOCK_SCHEMA})", Location(str(path)), FIX
                    )
                ]
            )
        if not _fits_lock_schema(data):
            raise RecipeError(_problems(path, data))
        stages = {name: LockEntry.from_json(entry) for name, entry in data["stages"].items()}
        families = {
            family: {name: LockEntry.from_json(entry) for name, entry in entries.items()}
            for family, entries in (data.get("families") or {}).items()
        }
        return cls(
            path,
            stages,
            data.get("recipe"),
            data.get("inputs"),
            data.get("datasets"),
            data.get("family"),
            families,
        )

    def to_json(self) -> LockJson:
        found: LockJson = {"schema": LOCK_SCHEMA, "stages": {}}
        if self.recipe is not None:
            found["recipe"] = self.recipe
        if self.inputs is not None:
            found["inputs"] = self.inputs
        if self.datasets is not None:
            found["datasets"] = self.datasets
        found["stages"] = {name: entry.to_json() for name, entry in self.stages.items()}
        if self.family is not None:
            found["family"] = self.family
        if self.families:
            found["families"] = {
                family: {name: entry.to_json() for name, entry in entries.items()}
                for family, entries in self.families.items()
                if entries
            }
        return found

    def entries(self, family: str | None = None) -> dict[str, LockEntry]:
        """Each stage's entry for a kernel family (this machine's by default): its own where it recorded one,
        else the base family's."""
        family = fact("isa") if family is None else family
        return {**self.stages, **self.families.get(family, {})}

    def text(self) -> str:
        return HEADER + str(
            yaml.dump(
                redact_json(self.to_json()),  # a parameter may hold a URL with credentials
                Dumper=PlainDumper,
                sort_keys=True,
                default_flow_style=False,
                allow_unicode=True,
                width=120,
            )
        )

    def write(self) -> None:
        """Atomically, and not at all when the file already holds these bytes."""
        text = self.text()
        try:
            if self.path.read_text(encoding="utf-8") == text:
                return
        except FileNotFoundError:
            pass
        atomic.remove_stale_staging(self.path.parent)
        atomic.write_text(self.path, text)

    def merged(
        self,
        recipe: Recipe,
        outcomes: Mapping[str, StageOutcome],
        source_digests: Mapping[str, str],
        family: str | None = None,
    ) -> Lock:
        """Stages that succeeded get fresh entries; others keep their last good entry; removed stages go.
        A run on a family other than the one `stages` was written on (this machine's, by default) records
        what it made differently under `families`, and leaves `stages` and other families' entries as
        they are (engine.publish.lock_families)."""
        family = fact("isa") if family is None else family
        fresh = {
            name: LockEntry.of(outcome.record, recipe.stages[name].stage_cls.deterministic)
            for name, outcome in outcomes.items()
            if outcome.succeeded and outcome.record is not None
        }
        stages = {name: entry for name, entry in self.stages.items() if name in recipe.stages}
        base = self.family or inferred_family(stages, recipe)
        families = {
            other: {name: entry for name, entry in entries.items() if name in recipe.stages}
            for other, entries in self.families.items()
        }
        if base is None or base == family:
            stages.update(fresh)
            families.pop(family, None)
        else:
            shared, families[family] = split_by_family(
                stages, families.get(family, {}), fresh, recipe
            )
            stages.update(shared)
        families = {other: entries for other, entries in families.items() if entries}
        inputs = {
            name: {"path": spec.declared, "digest": source_digests[f"inputs.{name}"]}
            for name, spec in recipe.inputs.items()
        }
        datasets = {
            name: {"loader": spec.loader, "digest": source_digests[f"datasets.{name}"]}
            for name, spec in recipe.datasets.items()
        }
        named = self.family or (base if families else None)
        return Lock(self.path, stages, recipe.name, inputs, datasets, named, families)

    def drift(self, outcomes: Mapping[str, StageOutcome], recipe: Recipe) -> list[str]:
        """Stages whose outputs differ from what this family's entry records under the same key: one line
        each, as cross-CPU drift where the stage type says the values agree within its tolerance (the run
        goes on, its result recorded for this family), else as a stage that is not reproducible."""
        found = []
        entries = self.entries()
        for name, outcome in sorted(outcomes.items()):
            entry = entries.get(name)
            stage_cls = recipe.stages[name].stage_cls
            if (
                not stage_cls.deterministic
                or outcome.record is None
                or entry is None
                or entry.key != outcome.key
            ):
                continue
            changed = sorted(
                port
                for port, out in outcome.record.outputs.items()
                if entry.digests.get(port) not in (None, out.digest)
            )
            if changed and within_tolerance(stage_cls, outcome.record, entry):
                found.append(
                    f"stage '{name}': {', '.join(changed)} differs from what {self.path.name} records "
                    f"for the same key only by this CPU's rounding, within {stage_cls.type}'s tolerance "
                    f"(not tampering): this result is kept, recorded for this CPU family ({fact('isa')})"
                )
            elif changed:
                found.append(
                    f"stage '{name}' was rebuilt from the same inputs and parameters as the lock file records, "
                    f"but its output {', '.join(changed)} has different bytes: the stage is not reproducible"
                )
        return found

    def referenced(self) -> tuple[set[str], set[str], list[LockEntry]]:
        """(cache keys, object digests, host-specific entries) the lock needs kept; a run record matching a
        host-specific entry (LockEntry.matches) is kept too."""
        keys: set[str] = set()
        digests: set[str] = set()
        host_specific: list[LockEntry] = []
        every = [*self.stages.values(), *(e for f in self.families.values() for e in f.values())]
        for entry in every:  # what any family's entry references
            if entry.key is not None:
                keys.add(entry.key)
            else:
                host_specific.append(entry)
            digests.update(entry.digests.values())
        return keys, digests, host_specific

    def locked_outputs(self) -> dict[str, dict[str, str]]:
        """{cache key: {output: digest}} for every keyed entry of this machine's family (measurements
        record no outputs)."""
        return {
            entry.key: entry.digests for entry in self.entries().values() if entry.key is not None
        }

    def pinned_values(self) -> dict[str, dict[str, FloatValues]]:
        """{cache key: {output: float values}} where the lock records values with an output."""
        found = {}
        for entry in self.entries().values():
            values = {
                port: out.values
                for port, out in (entry.outputs or {}).items()
                if out.values is not None
            }
            if entry.key is not None and values:
                found[entry.key] = values
        return found


class LockWriter(QuietObserver):
    """Merges finished stages into the lock file under a mutex, re-reading it each time, so runs of
    different stages of one recipe (or a run and a killed run) never lose each other's entries."""

    EVERY_S = 5.0  # during a run, at most one write per this many seconds; the last write is never skipped

    def __init__(self, recipe: Recipe, store: Mutexes, source_digests: Mapping[str, str]):
        self.recipe = recipe
        self.source_digests = source_digests
        self.store = store
        self.guard_name = (
            f"lockfile-{hash_bytes(str(recipe.lock_path).encode())}"  # one mutex per lock file
        )
        self.unwritten: dict[str, StageOutcome] = {}
        self.last_write = 0.0

    def stage_finished(self, outcome: StageOutcome) -> None:
        """A stage that ran goes into the lock file as it finishes (one served from the cache, at the end)."""
        if outcome.status == Status.RAN:
            self.add({outcome.name: outcome})

    def add(self, outcomes: Mapping[str, StageOutcome], final: bool = False) -> None:
        """Merge `outcomes` in; while the run goes on, writes are batched (a killed run loses at most a few
        seconds of entries, which the next run writes from the cache)."""
        self.unwritten.update(outcomes)
        if not final and time.monotonic() - self.last_write < self.EVERY_S:
            return
        with self.store.key_mutex(self.guard_name):
            Lock.read(self.recipe.lock_path).merged(
                self.recipe, self.unwritten, self.source_digests
            ).write()
        self.unwritten = {}
        self.last_write = time.monotonic()


def within_tolerance(stage_cls: type[Stage], record: RunRecord, entry: LockEntry) -> bool:
    """Whether the record's outputs that differ from the entry's are, by their stage type, the same result
    made on another CPU (engine.contracts.stage.within_tolerance)."""
    locked = entry.outputs or {}
    changed = {
        port: out.values
        for port, out in record.outputs.items()
        if port in locked and locked[port].digest != out.digest
    }
    return values_agree(
        stage_cls, dict(record.params), changed, {p: o.values for p, o in locked.items()}
    )


def read_locks(paths: Iterable[Path], required: bool = True) -> list[Lock]:
    """The named lock files; with `required`, a missing one is an error naming the fix."""
    locks = []
    for path in paths:
        if required and not Path(path).exists():
            raise OrtflowError(
                f"{path}: no lock file — run the recipe first, or leave it out of the list"
            )
        locks.append(Lock.read(path))
    return locks


def collect_garbage(store: Any, lock_paths: Iterable[Path], dry_run: bool = False) -> Any:
    """Remove from `store` every run record and object the lock files do not reference (what they name by
    key, and this machine's results for their host-specific entries); returns the store's tally. The lock
    files are read under the store mutex gc holds: a run writes its lock before it lets go of the mutex, so
    what gc reads names everything a run that has finished built, and no run is building while gc removes."""
    with store.collecting():
        keys: set[str] = set()
        digests: set[str] = set()
        host_specific: list[LockEntry] = []
        for lock in read_locks(lock_paths):
            more_keys, more_digests, more_entries = lock.referenced()
            keys |= more_keys
            digests |= more_digests
            host_specific += more_entries

        # this machine's result for a host-specific entry
        def kept(record: RunRecord) -> bool:
            return any(entry.matches(record.identity) for entry in host_specific)

        return store.collect(keys, digests, dry_run=dry_run, keep=kept)
