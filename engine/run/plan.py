"""What a run would do and why: cached, or run because it is new, its params, inputs, version or environment changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.engine.errors import StageError
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.run.jobs import job_for, job_key, locator, without
from ortflow.engine.store.base import Store
from ortflow.engine.store.keys import lock_entry_matches, portable_env
from ortflow.engine.types import Missing, Recipe, TextEnum


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
    recipe: Recipe, graph: StageGraph, store: Store, source_digests: dict[str, str], lock: dict[str, Any]
) -> list[PlannedStage]:
    """Keys are known wherever upstream outputs are: from the cache, or else from the lock file (so a fresh
    clone with an empty cache still sees which stages match the lock)."""
    known: dict[str, dict[str, Any]] = {}  # stage -> its outputs (from a run record or lock entry)
    refused: set[str] = set()  # optional stages whose cached verdict refused their output: dropped downstream
    locate = locator({ref: (digest, None) for ref, digest in source_digests.items()}, known)
    planned: list[PlannedStage] = []
    for name in graph.order:
        spec = recipe.stages[name]
        waiting = sorted(p for p in graph.predecessors[name] if p not in known and p not in refused)
        if waiting:
            planned.append(PlannedStage(name, spec.uses, PlanAction.RUN, f"upstream '{waiting[0]}' will run", None))
            continue
        dropped = [p for p in graph.predecessors[name] if p in refused]
        spec = without(spec, dropped)
        if spec is None:
            planned.append(PlannedStage(name, recipe.stages[name].uses, PlanAction.SKIP,
                                        f"optional upstream '{dropped[0]}' was refused and this stage cannot do without it", None))
            continue
        job = job_for(spec, locate)
        if isinstance(job, Missing):
            planned.append(PlannedStage(name, spec.uses, PlanAction.SKIP, f"'{job.ref}' is an optional output not produced", None))
            continue
        try:
            key, env = job_key(job)
        except StageError as exc:
            planned.append(PlannedStage(name, spec.uses, PlanAction.FAIL, str(exc), None))
            continue
        entry = lock.get("stages", {}).get(name)
        identity = {"type": spec.uses, "version": spec.stage_cls.version, "params": spec.params,
                    "inputs": job.input_digests, "env": env}
        versus_lock = "" if lock_entry_matches(entry, key, identity) else _why(entry, identity)
        record = store.read_run(key)
        if record is not None and record.get("gate_failed") and spec.optional:
            refused.add(name)  # as a run settles it: its verdict is served, its output never is
            planned.append(PlannedStage(name, spec.uses, PlanAction.CACHED, "up to date (refused by its gate: dropped downstream)",
                                        key, versus_lock))
            continue
        if record is not None:
            known[name] = {"outputs": record["outputs"]}
            planned.append(PlannedStage(name, spec.uses, PlanAction.CACHED, "up to date", key, versus_lock))
            continue
        if entry is not None and entry.get("key") == key:
            known[name] = {"outputs": entry.get("outputs") or {}}
        reason = versus_lock or "not in the cache (built elsewhere or removed by gc)"
        if store.has_run(key):
            reason = "damaged in the cache — run `engine cache verify --remove`, then run the recipe"
        planned.append(PlannedStage(name, spec.uses, PlanAction.RUN, reason, key, versus_lock))
    return planned


def _why(entry: dict[str, Any] | None, identity: dict[str, Any]) -> str:
    uses, version, params, inputs = identity["type"], identity["version"], identity["params"], identity["inputs"]
    # a host-specific entry records only the portable facts (engine.record.lockfile)
    env = identity["env"] if entry is None or "key" in entry else portable_env(identity["env"])
    if entry is None:
        return "new stage"
    if entry.get("type") != uses:
        return f"stage type changed: {entry.get('type')} -> {uses}"
    if str(entry.get("version")) != str(version):
        return f"stage version changed: {entry.get('version')} -> {version}"
    changed = _diff(entry.get("params", {}), params)
    if changed:
        return "params changed: " + ", ".join(changed)
    changed = _diff(entry.get("inputs", {}), inputs)
    if changed:
        return "input changed: " + ", ".join(changed)
    changed = _diff(entry.get("env", {}), env)
    if changed:
        return "environment changed: " + ", ".join(changed)
    return "cache key changed"


def _diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
