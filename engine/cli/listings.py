"""Plain-data views of what is installed, planned and cached: what `--json` prints, and what the console's
tables show.

One vocabulary for every `--json` output (docs/cli.md lists it), so a script reads `plan`, `status`,
`compare`, `stages` and `cache ls` with the same words: `stage` is a stage's name in the recipe (a matrix
variant's full id), `type` a registered type's name (what `uses:`, `loader:` or `metrics:` names), `key` a
cache key, `reason` why a stage is in the state shown, `field` a dotted path inside a stage's entry."""

from __future__ import annotations

from typing import Any

from ortflow.engine.contracts.registry import Plugins, Registry
from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.leaves.json_types import JsonObject
from ortflow.engine.store.base import Store


def plugins(found: Plugins) -> dict[str, list[JsonObject]]:
    """Every stage type and dataset loader, one entry each; a plugin that cannot be imported says why."""
    return {
        "stages": [_summary(found.stages, name) for name in found.stages.names()],
        "loaders": [_summary(found.datasets, name) for name in found.datasets.names()],
        "metrics": [_summary(found.metrics, name) for name in found.metrics.names()],
    }


def _summary(registry: Registry, name: str) -> JsonObject:
    entry: JsonObject = {"type": name, "provided_by": registry.origin(name)}
    try:
        cls = registry.get(name)
    except OrtflowError as exc:  # one broken plugin must not hide the others
        return {**entry, "error": str(exc)}
    if hasattr(cls, "names"):  # a metric: what it reports, and which way is better
        return {**entry, "names": {n.name: n.better.value for n in cls.names}}
    entry["version"] = cls.version
    if hasattr(cls, "outputs"):
        entry.update(inputs=[p.name for p in cls.inputs], outputs=[p.name for p in cls.outputs])
    else:
        entry["file_params"] = list(cls.file_params)
    return entry


def plugin(registry: Registry, name: str) -> JsonObject:
    """One plugin in full: its ports and its parameters (the JSON Schema `with:` is checked against)."""
    cls = registry.get(name)
    detail: JsonObject = {
        "type": name,
        "version": getattr(cls, "version", None),
        "provided_by": registry.origin(name),
        "description": cls.description,
        "params_schema": cls.params_schema,
    }
    if hasattr(cls, "names"):
        detail["names"] = [
            {"name": n.name, "better": n.better.value, "description": n.description}
            for n in cls.names
        ]
    if hasattr(cls, "outputs"):
        detail["inputs"] = [_port(p) for p in cls.inputs]
        detail["outputs"] = [_port(p) for p in cls.outputs]
    return detail


def _port(port: Any) -> JsonObject:
    return {
        "name": port.name,
        "kind": port.kind.value,
        "description": port.description,
        "many": port.many,
        "optional": port.optional,
    }


def cached_runs(store: Store) -> list[JsonObject]:
    """Every run record in the store (an unreadable one as such)."""
    runs = []
    for key, record in store.iter_runs():
        if record is None:
            runs.append({"key": key, "unreadable": True})
            continue
        outputs = record.get("outputs", {})
        runs.append(
            {
                "key": key,
                "stage": record["stage"],
                "type": record["type"],
                "created": record["created"],
                "outputs": sorted(outputs),
                "bytes": sum(out["size"] for out in outputs.values()),
            }
        )
    return runs


def planned(items: list[Any]) -> list[JsonObject]:
    """`engine plan --json`: what a run would do with each stage (`action`: cached, run, skip or fail) and why;
    `against_lock` says how the stage differs from its lock-file entry ("" when they agree)."""
    return [
        {
            "stage": p.name,
            "type": p.uses,
            "action": str(p.action),
            "reason": p.reason,
            "key": p.key,
            "against_lock": p.against_lock,
        }
        for p in items
    ]


def statuses(rows: list[tuple[str, str, str]]) -> list[dict[str, str]]:
    """`engine status --json`: each stage's `state` against the lock file, and the `reason` when not up to date."""
    return [{"stage": stage, "state": state, "reason": reason} for stage, state, reason in rows]


def differences(rows: list[tuple[str, str, str, str]]) -> list[dict[str, str]]:
    """`engine compare --json`: one row per changed `field` of a stage (`params.level`, `outputs.model`, ...)."""
    return [
        {"stage": stage, "field": field, "before": before, "after": after}
        for stage, field, before, after in rows
    ]
