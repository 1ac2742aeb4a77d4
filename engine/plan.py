"""What a run would do and why: cached, or run because it is new, its params, inputs, version or environment changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.dag import StageGraph
from engine.recipe import Recipe
from engine.runner import StageJob
from engine.store import ArtifactStore


@dataclass(frozen=True)
class PlannedStage:
    name: str
    uses: str
    action: str  # "cached" or "run"
    reason: str
    key: str | None  # unknown until the upstream stages it waits on have run


def make_plan(
    recipe: Recipe, graph: StageGraph, store: ArtifactStore, source_digests: dict[str, str], lock: dict[str, Any]
) -> list[PlannedStage]:
    records: dict[str, dict[str, Any]] = {}
    planned: list[PlannedStage] = []
    for name in graph.order:
        spec = recipe.stages[name]
        waiting = sorted(p for p in graph.predecessors[name] if p not in records)
        if waiting:
            planned.append(PlannedStage(name, spec.uses, "run", f"upstream '{waiting[0]}' will run", None))
            continue
        digests: dict[str, Any] = {}
        for port, value in sorted(spec.inputs.items()):
            refs = value if isinstance(value, list) else [value]
            found = [source_digests[str(r)] if r.is_source else records[r.source]["outputs"][r.name]["digest"] for r in refs]
            digests[port] = found if isinstance(value, list) else found[0]
        job = StageJob(spec, digests, {})
        key, env = job.key_and_env()
        record = store.read_run(key)
        if record is not None:
            records[name] = record
            planned.append(PlannedStage(name, spec.uses, "cached", "up to date", key))
            continue
        reason = _why(lock.get("stages", {}).get(name), spec.uses, spec.stage_cls.version, spec.params, digests, env, key)
        planned.append(PlannedStage(name, spec.uses, "run", reason, key))
    return planned


def _why(entry: dict[str, Any] | None, uses: str, version: str, params: dict[str, Any], inputs: dict[str, Any],
         env: dict[str, str], key: str) -> str:
    if entry is None:
        return "new stage"
    if entry.get("key") == key:
        return "not in the cache (built elsewhere or removed by gc)"
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
