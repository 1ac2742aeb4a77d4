"""Plain-data views of what is installed, planned and cached: what `--json` prints, and what the console's
tables show.

One vocabulary for every `--json` output (docs/cli.md lists it), so a script reads `plan`, `status`,
`compare`, `stages` and `cache ls` with the same words: `stage` is a stage's name in the recipe (a matrix
variant's full id), `type` a registered type's name (what `uses:`, `loader:` or `metrics:` names), `key` a
cache key, `reason` why a stage is in the state shown, `field` a dotted path inside a stage's entry."""

from __future__ import annotations

from typing import TypedDict

from ortflow.engine.contracts.builds import parse_record
from ortflow.engine.contracts.registry import Plugins, Registry
from ortflow.engine.contracts.stage import Port
from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.run.plan import PlannedStage
from ortflow.engine.store.base import Store


class PluginSummary(TypedDict, total=False):
    """One entry of `engine stages --json`: `type` and `provided_by` always; `error` for a plugin that cannot be
    imported; `names` for a metric; `version` with ports (a stage) or `file_params` (a loader) otherwise."""

    type: str
    provided_by: str
    error: str
    names: dict[str, str]
    version: int
    inputs: list[str]
    outputs: list[str]
    file_params: list[str]


class MetricName(TypedDict):
    name: str
    better: str
    description: str


class PortView(TypedDict):
    name: str
    kind: str
    description: str
    many: bool
    optional: bool


class PluginDetail(TypedDict, total=False):
    """`engine stages NAME --json`: `names` for a metric, `inputs`/`outputs` for a stage."""

    type: str
    version: int | None
    provided_by: str
    description: str
    params_schema: dict[str, Json]
    names: list[MetricName]
    inputs: list[PortView]
    outputs: list[PortView]


class CachedRun(TypedDict, total=False):
    """One row of `cache ls --json`; an unreadable record has only `key` and `unreadable`."""

    key: str
    unreadable: bool
    stage: str
    type: str
    created: str
    outputs: list[str]
    bytes: int


class PlannedRow(TypedDict):
    stage: str
    type: str
    action: str
    reason: str
    key: str | None
    against_lock: str


def plugins(found: Plugins) -> dict[str, list[PluginSummary]]:
    """Every stage type and dataset loader, one entry each; a plugin that cannot be imported says why."""
    return {
        "stages": [_summary(found.stages, name) for name in found.stages.names()],
        "loaders": [_summary(found.datasets, name) for name in found.datasets.names()],
        "metrics": [_summary(found.metrics, name) for name in found.metrics.names()],
    }


def _summary(registry: Registry, name: str) -> PluginSummary:
    entry: PluginSummary = {"type": name, "provided_by": registry.origin(name)}
    try:
        cls = registry.get(name)
    except OrtflowError as exc:  # one broken plugin must not hide the others
        return {**entry, "error": str(exc)}
    if hasattr(cls, "names"):  # a metric: what it reports, and which way is better
        return {**entry, "names": {n.name: n.better.value for n in cls.names}}
    entry["version"] = cls.version
    if hasattr(cls, "outputs"):
        entry["inputs"] = [p.name for p in cls.inputs]
        entry["outputs"] = [p.name for p in cls.outputs]
    else:
        entry["file_params"] = list(cls.file_params)
    return entry


def plugin(registry: Registry, name: str) -> PluginDetail:
    """One plugin in full: its ports and its parameters (the JSON Schema `with:` is checked against)."""
    cls = registry.get(name)
    detail: PluginDetail = {
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


def _port(port: Port) -> PortView:
    return {
        "name": port.name,
        "kind": port.kind.value,
        "description": port.description,
        "many": port.many,
        "optional": port.optional,
    }


def cached_runs(store: Store) -> list[CachedRun]:
    """Every run record in the store (an unreadable one as such)."""
    runs: list[CachedRun] = []
    for key, document in store.iter_runs():
        record = parse_record(document)
        if record is None:
            runs.append({"key": key, "unreadable": True})
            continue
        runs.append(
            {
                "key": key,
                "stage": record.stage,
                "type": record.type,
                "created": record.created,
                "outputs": sorted(record.outputs),
                "bytes": sum(out.size for out in record.outputs.values()),
            }
        )
    return runs


def planned(items: list[PlannedStage]) -> list[PlannedRow]:
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
