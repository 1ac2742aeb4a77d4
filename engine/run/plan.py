"""What a run would do and why: cached, or run because it is new, its params, inputs, version or environment changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ortflow.engine.builds import Identity, LockEntry, portable_env
from ortflow.engine.errors import StageError
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.run.jobs import job_for, locator, without
from ortflow.engine.store.base import Store
from ortflow.engine.types import Missing, Recipe, TextEnum

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
    refused: set[str] = (
        set()
    )  # optional stages whose cached verdict refused their output: dropped downstream
    locate = locator({ref: (digest, None) for ref, digest in source_digests.items()}, known)
    planned: list[PlannedStage] = []
    for name in graph.order:
        spec = recipe.stages[name]
        waiting = sorted(p for p in graph.predecessors[name] if p not in known and p not in refused)
        if waiting:
            planned.append(
                PlannedStage(
                    name, spec.uses, PlanAction.RUN, f"upstream '{waiting[0]}' will run", None
                )
            )
            continue
        dropped = [p for p in graph.predecessors[name] if p in refused]
        spec = without(spec, dropped)
        if spec is None:
            planned.append(
                PlannedStage(
                    name,
                    recipe.stages[name].uses,
                    PlanAction.SKIP,
                    f"optional upstream '{dropped[0]}' was refused and this stage cannot do without it",
                    None,
                )
            )
            continue
        try:
            job = job_for(spec, locate)
        except StageError as exc:
            planned.append(PlannedStage(name, spec.uses, PlanAction.FAIL, str(exc), None))
            continue
        if isinstance(job, Missing):
            planned.append(
                PlannedStage(
                    name,
                    spec.uses,
                    PlanAction.SKIP,
                    f"'{job.ref}' is an optional output not produced",
                    None,
                )
            )
            continue
        key = job.identity.key
        entry = lock.stages.get(name)
        versus_lock = (
            ""
            if entry is not None and entry.matches(key, job.identity.to_json())
            else _why(entry, job.identity)
        )
        record = store.read_run(key)
        if record is not None and record.get("gate_failed") and spec.optional:
            refused.add(name)  # as a run settles it: its verdict is served, its output never is
            planned.append(
                PlannedStage(
                    name,
                    spec.uses,
                    PlanAction.CACHED,
                    "up to date (refused by its gate: dropped downstream)",
                    key,
                    versus_lock,
                )
            )
            continue
        if record is not None:
            known[name] = {port: out["digest"] for port, out in record["outputs"].items()}
            planned.append(
                PlannedStage(name, spec.uses, PlanAction.CACHED, "up to date", key, versus_lock)
            )
            continue
        if entry is not None and entry.key == key:
            known[name] = entry.digests
        reason = versus_lock or "not in the cache (built elsewhere or removed by gc)"
        if store.has_run(key):
            reason = (
                "damaged in the cache — run `engine cache verify --remove`, then run the recipe"
            )
        planned.append(PlannedStage(name, spec.uses, PlanAction.RUN, reason, key, versus_lock))
    return planned


def _why(entry: LockEntry | None, identity: Identity) -> str:
    if entry is None:
        return "new stage"
    # a host-specific entry records only the portable facts (engine.builds.LockEntry)
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
        if changed:
            return f"{what} changed: " + ", ".join(changed)
    return "cache key changed"


def _diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
