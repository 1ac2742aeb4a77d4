"""Plain-data views of what is installed and what is cached: what `--json` prints, and what the console's
tables show."""

from __future__ import annotations

from typing import Any

from ortflow.engine.errors import OrtflowError
from ortflow.engine.json_types import JsonObject
from ortflow.engine.registry import Plugins, Registry
from ortflow.engine.store.base import Store


def plugins(found: Plugins) -> dict[str, list[JsonObject]]:
    """Every stage type and dataset loader, one entry each; a plugin that cannot be imported says why."""
    return {"stages": [_summary(found.stages, name) for name in found.stages.names()],
            "loaders": [_summary(found.datasets, name) for name in found.datasets.names()],
            "metrics": [_summary(found.metrics, name) for name in found.metrics.names()]}


def _summary(registry: Registry, name: str) -> JsonObject:
    entry: JsonObject = {"name": name, "provided_by": registry.origin(name)}
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
    detail: JsonObject = {"name": name, "version": getattr(cls, "version", None), "provided_by": registry.origin(name),
                              "description": cls.description, "params_schema": cls.params_schema}
    if hasattr(cls, "names"):
        detail["names"] = [{"name": n.name, "better": n.better.value, "description": n.description} for n in cls.names]
    if hasattr(cls, "outputs"):
        detail["inputs"] = [_port(p) for p in cls.inputs]
        detail["outputs"] = [_port(p) for p in cls.outputs]
    return detail


def _port(port: Any) -> JsonObject:
    return {"name": port.name, "kind": port.kind.value, "description": port.description, "many": port.many,
            "optional": port.optional}


def cached_runs(store: Store) -> list[JsonObject]:
    """Every run record in the store (an unreadable one as such)."""
    runs = []
    for key, record in store.iter_runs():
        if record is None:
            runs.append({"key": key, "unreadable": True})
            continue
        outputs = record.get("outputs", {})
        runs.append({"key": key, "stage": record["stage"], "type": record["type"], "created": record["created"],
                     "outputs": sorted(outputs), "bytes": sum(out["size"] for out in outputs.values())})
    return runs
