"""What a run would do and why: cached, or run because it is new, its params, inputs, version or environment changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, TypeVar

from ortflow.engine.contracts.builds import Identity, LockEntry, portable_env
from ortflow.engine.contracts.types import Missing, Recipe, StageSpec, TextEnum
from ortflow.engine.leaves.environment import fact
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.run.jobs import cached_verdict, job_for, locator, without
from ortflow.engine.store.base import Store

if TYPE_CHECKING:
    from ortflow.engine.publish.lock import Lock


class PlanAction(TextEnum):
    """What a run would do with a stage."""

    CACHED = "cached"
    RUN = "run"
    SKIP = "skip"
    FAIL = "fail"


@dataclass(frozen=True)
class PlannedStage:
    name: str
    uses: str
    action: PlanAction
    reason: str
    key: str | None  # unknown until the upstream stages it waits on have run
    against_lock: str = ""  # how the stage differs from its lock-file entry ("" when they agree)


def make_plan(
    recipe: Recipe, graph: StageGraph, store: Store, source_digests: dict[str, str], lock: Lock
) -> list[PlannedStage]:
    """Keys are known wherever upstream outputs are: from the cache, or else from the lock file (so a fresh
    clone with an empty cache still sees which stages match the lock)."""
    known: dict[
        str, dict[str, str]
    ] = {}  # stage -> {port: digest} (from a run record or lock entry)
    locate = locator({ref: (digest, None) for ref, digest in source_digests.items()}, known)
    planner = _Planner(store, lock, known, set(), locate)
    return [
        planner.stage(name, recipe.stages[name], graph.predecessors[name]) for name in graph.order
    ]


@dataclass(frozen=True)
class _Planner:
    """Plans the stages one by one in graph order, each learning from those before it: the outputs `known`
    (which `locate` resolves references from) and the stages `refused` (dropped downstream)."""

    store: Store
    lock: Lock
    known: dict[str, dict[str, str]]
    refused: set[
        str
    ]  # optional stages whose cached verdict refused their output: dropped downstream
    locate: Any

    def stage(self, name: str, spec: StageSpec, predecessors: Iterable[str]) -> PlannedStage:
        """The stage's plan before its key is known: waiting on an upstream stage that will run, skipped, or
        failing to compute its key; else keyed() says."""
        waiting = sorted(p for p in predecessors if p not in self.known and p not in self.refused)
        if waiting:
            return PlannedStage(
                name, spec.uses, PlanAction.RUN, f"upstream '{waiting[0]}' will run", None
            )
        dropped = [p for p in predecessors if p in self.refused]
        usable = without(spec, dropped)
        if usable is None:
            return PlannedStage(
                name,
                spec.uses,
                PlanAction.SKIP,
                f"optional upstream '{dropped[0]}' was refused and this stage cannot do without it",
                None,
            )
        try:
            job = job_for(usable, self.locate)
        except StageError as exc:
            return PlannedStage(name, usable.uses, PlanAction.FAIL, str(exc), None)
        if isinstance(job, Missing):
            return PlannedStage(
                name,
                usable.uses,
                PlanAction.SKIP,
                f"'{job.ref}' is an optional output not produced",
                None,
            )
        return self.keyed(name, usable, job.identity)

    def keyed(self, name: str, spec: StageSpec, identity: Identity) -> PlannedStage:
        """A stage whose key is known: cached (its outputs now known downstream) or run, and how it differs
        from its lock-file entry; a lock entry with the same key makes its outputs known too."""
        key = identity.key
        entry = self.lock.entries().get(name)
        versus_lock = "" if entry is not None and entry.matches(identity) else _why(entry, identity)
        verdict = cached_verdict(spec, self.store.read_run(key, name))  # as a run settles it
        if verdict is not None and verdict.tolerated and verdict.record is not None:
            self.refused.add(name)  # its verdict is served, its output never is
            return PlannedStage(
                name,
                spec.uses,
                PlanAction.CACHED,
                f"up to date (refused by its {'gate' if verdict.record.gate_failed else 'own verdict'}: "
                "dropped downstream)",
                key,
                versus_lock,
            )
        if verdict is not None and verdict.record is not None:
            self.known[name] = verdict.record.digests
            return PlannedStage(name, spec.uses, PlanAction.CACHED, "up to date", key, versus_lock)
        if entry is not None and entry.key == key:
            self.known[name] = entry.digests
        reason = versus_lock or "not in the cache (built elsewhere or removed by gc)"
        unsigned = self.store.unsigned_run(key)
        if unsigned is not None:
            reason = UNSIGNED_HERE if unsigned.value == "here" else UNSIGNED_ELSEWHERE
        elif self.store.has_run(key):
            reason = (
                "damaged in the cache — run `engine cache verify --remove`, then run the recipe"
            )
        return PlannedStage(name, spec.uses, PlanAction.RUN, reason, key, versus_lock)


UNSIGNED_HERE = (
    "in the cache, but unsigned (written here before ORTFLOW_SIGNING_KEY was set), so not served while the "
    "key is set; it is not damaged — `engine cache adopt` signs it with the team key"
)
UNSIGNED_ELSEWHERE = (
    "in the cache, but unsigned (written before ORTFLOW_SIGNING_KEY was set, not by this machine's local "
    "key), so not served while the key is set; it is not damaged — `engine run` builds it again, signed"
)


def _why(entry: LockEntry | None, identity: Identity) -> str:
    if entry is None:
        return "new stage"
    # a host-specific entry records only the portable facts (engine.contracts.builds.LockEntry)
    env = identity.env if entry.key is not None else portable_env(identity.env)
    if entry.type != identity.type:
        return f"stage type changed: {entry.type} -> {identity.type}"
    if str(entry.version) != str(identity.version):
        return f"stage version changed: {entry.version} -> {identity.version}"
    for what, old, new in (
        ("params", entry.params, identity.params),
        ("input", entry.inputs, identity.inputs),
        ("environment", entry.env, env),
    ):
        changed = _diff(old, new)
        if changed == ["target_isa"] and what == "environment" and new["target_isa"] == fact("isa"):
            return (
                f"environment changed: target_isa (built for {old['target_isa']}; none recorded yet for "
                f"this CPU family, {new['target_isa']}: a run adds it to the lock file)"
            )
        if changed:
            return f"{what} changed: " + ", ".join(changed)
    return "cache key changed"


V = TypeVar("V")  # any value: compared for equality only


def _diff(old: Mapping[str, V], new: Mapping[str, V]) -> list[str]:
    """The names whose values differ (a lock entry's against the job's: parameters, inputs or facts)."""
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
