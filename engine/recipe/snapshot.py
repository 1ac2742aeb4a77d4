"""Validated-recipe snapshots: a recipe that passed every check is stored in resolved form, so an unchanged
recipe is not parsed and validated again (no YAML, jsonschema or networkx on a fully cached re-run).

A snapshot is signed with the user's local key (engine.store.signing) and bound to its own cache key: the
cache may be shared or tampered with, and a snapshot says which loader code runs, so one that does not
verify is ignored and the recipe validated from its own bytes.

The snapshot's key covers everything validation reads: the recipe's bytes and path, the overrides and
params file, the working directory (error locations are relative to it), the engine version and the recipe
schema. What it cannot key on up front, the installed stage types' contracts (version, ports, parameter
schema) and the inputs' existence, is checked on load; any difference means a full validation.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, cast

import ortflow
from ortflow.engine.contracts.registry import Plugins
from ortflow.engine.contracts.types import Binding, DatasetSpec, InputSpec, Recipe, Ref, StageSpec
from ortflow.engine.leaves.errors import Location
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.secrets import redact
from ortflow.engine.leaves.yamlsource import MAX_BYTES, SourceMap
from ortflow.engine.recipe.graph import StageGraph
from ortflow.engine.recipe.schema import recipe_schema_text
from ortflow.engine.store.base import Store
from ortflow.engine.store.hashing import hash_bytes
from ortflow.engine.store.keys import canonical_json
from ortflow.engine.store.signing import local_key, sign, signature_ok

if TYPE_CHECKING:
    from ortflow.engine.contracts.dataset import DatasetLoader
    from ortflow.engine.contracts.stage import Stage

Place = tuple[str, "int | None", "int | None"]  # a Location as saved: file, line, column


class _Dataset(TypedDict):
    loader: str
    contract: str
    params: dict[str, Json]
    location: Place


class _Stage(TypedDict):
    uses: str
    contract: str
    params: dict[str, Json]
    inputs: dict[str, "str | list[str]"]
    after: list[str]
    location: Place
    optional: bool
    template: str
    axes: dict[str, str]
    resources: dict[str, float]
    workers: list[str]
    target_cpu: str


class _Snapshot(TypedDict):
    """The document save() writes (and signs): load() reads it by this shape, checked by its signature."""

    name: str
    target_cpu: str
    path: str
    file: str
    overrides: list[str]
    inputs: dict[str, tuple[str, str]]  # name -> [absolute path, as declared]
    datasets: dict[str, _Dataset]
    stages: dict[str, _Stage]
    matrices: dict[str, list[str]]
    order: list[str]
    predecessors: dict[str, list[str]]


def snapshot_key(recipe_path: Path, overrides: list[str], params_file: Path | None) -> str | None:
    try:
        for path in filter(
            None, (recipe_path, params_file)
        ):  # read below, and only if small regular files
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BYTES:
                return None  # the full load refuses it with the reason
        parts = {
            "engine": ortflow.__version__,
            "schema": hash_bytes(recipe_schema_text().encode("utf-8")),
            "recipe": hash_bytes(Path(recipe_path).read_bytes()),
            "path": str(Path(recipe_path).resolve()),
            "cwd": os.getcwd(),
            "overrides": list(overrides),
            "params": hash_bytes(Path(params_file).read_bytes()) if params_file else None,
        }
    except OSError:
        return None  # let the full load report the missing file
    return hash_bytes(canonical_json(parts).encode())


def contract(plugin: type[Stage] | type[DatasetLoader]) -> str:
    """What validation relied on from a stage type or dataset loader."""
    ports = [
        [p.name, p.kind.value, p.many, p.optional]
        for p in (*getattr(plugin, "inputs", ()), *getattr(plugin, "outputs", ()))
    ]
    files = list(getattr(plugin, "file_params", ()))
    return hash_bytes(canonical_json([plugin.version, ports, files, plugin.params_schema]).encode())


def save(store: Store, key: str, recipe: Recipe, graph: StageGraph) -> None:
    contracts = {
        cls: contract(cls) for cls in {spec.stage_cls for spec in recipe.stages.values()}
    }  # once per type
    data = {
        "name": recipe.name,
        "target_cpu": recipe.target_cpu,
        "path": str(recipe.path),
        "file": recipe.source.file,
        "overrides": recipe.overrides,
        "inputs": {n: [str(i.path), i.declared] for n, i in recipe.inputs.items()},
        "datasets": {
            n: {
                "loader": d.loader,
                "contract": contract(d.loader_cls),
                "params": {k: str(v) if k in d.file_paths() else v for k, v in d.params.items()},
                "location": [d.location.file, d.location.line, d.location.col],
            }
            for n, d in recipe.datasets.items()
        },
        "stages": {
            name: {
                "uses": spec.uses,
                "contract": contracts[spec.stage_cls],
                "params": spec.params,
                "inputs": {
                    port: b.shaped([str(r) for r in b.refs]) for port, b in spec.inputs.items()
                },
                "after": spec.after,
                "location": _place(spec.location),
                "optional": spec.optional,
                "template": spec.template,
                "axes": spec.axes,
                "resources": spec.resources,
                "workers": spec.workers,
                "target_cpu": spec.target_cpu,
            }
            for name, spec in recipe.stages.items()
        },
        "matrices": recipe.matrices,
        "order": list(graph.order),
        "predecessors": {n: list(p) for n, p in graph.predecessors.items()},
    }
    secret = local_key()
    if secret is None:
        return  # unsigned snapshots would be trusted code from the cache: keep none
    text = json.dumps(data)
    if redact(text) != text:
        return  # a recipe holding a URL with credentials: parsed on every run rather than kept in the cache
    store.write_snapshot(key, f"{sign(secret, _signed(key, text))}\n{text}")


def _place(location: Location | None) -> list[Json]:
    """A stage's Location as saved (a Place); a stage made by code rather than written has none."""
    if location is None:
        return ["", None, None]
    return [location.file, location.line, location.col]


def _signed(key: str, text: str) -> bytes:
    return f"{key}\n{text}".encode(
        "utf-8"
    )  # the key too: a valid snapshot cannot be moved to another key


def load(store: Store, key: str, plugins: Plugins) -> tuple[Recipe, StageGraph] | None:
    data = _read_signed(store, key)
    if data is None:
        return None
    inputs = {n: InputSpec(n, Path(p), declared) for n, (p, declared) in data["inputs"].items()}
    if not all(spec.path.exists() for spec in inputs.values()):
        return None
    datasets = _datasets(data, plugins)
    if datasets is None:
        return None
    stages = _stages(data, plugins)
    if stages is None:
        return None
    recipe = Recipe(
        Path(data["path"]),
        data["name"],
        inputs,
        datasets,
        stages,
        SourceMap(data["file"]),
        data["overrides"],
        data["matrices"],
        data["target_cpu"],
    )
    graph = StageGraph(tuple(data["order"]), {n: tuple(p) for n, p in data["predecessors"].items()})
    return recipe, graph


def _read_signed(store: Store, key: str) -> _Snapshot | None:
    """The snapshot stored under `key`, if there is one and this user's key signed it as it is."""
    secret = local_key()
    stored = store.read_snapshot(key)
    if stored is None:
        return None
    try:
        signature, _, text = stored.partition("\n")
        if secret is None or not signature_ok(secret, _signed(key, text), signature):
            return None  # not written by this user (or altered since): validate the recipe itself
        return cast(_Snapshot, json.loads(text))  # signed by this user: what save() wrote
    except (OSError, ValueError):
        return None


def _datasets(data: _Snapshot, plugins: Plugins) -> dict[str, DatasetSpec] | None:
    """The snapshot's datasets; None where a loader is gone or changed, or a file it reads is gone."""
    datasets: dict[str, DatasetSpec] = {}
    for name, item in data["datasets"].items():
        if item["loader"] not in plugins.datasets:
            return None
        loader_cls = plugins.datasets.get(item["loader"])
        if contract(loader_cls) != item["contract"]:
            return None
        files = {k: Path(str(v)) for k, v in item["params"].items() if k in loader_cls.file_params}
        if not all(path.exists() for path in files.values()):
            return None
        params: dict[str, Json | Path] = {**item["params"], **files}
        datasets[name] = DatasetSpec(
            name, item["loader"], loader_cls, params, Location(*item["location"])
        )
    return datasets


def _stages(data: _Snapshot, plugins: Plugins) -> dict[str, StageSpec] | None:
    """The snapshot's stages; None where a stage type is gone or its contract changed."""
    stages: dict[str, StageSpec] = {}
    contracts: dict[type, str] = {}
    for name, item in data["stages"].items():
        if item["uses"] not in plugins.stages:
            return None
        stage_cls = plugins.stages.get(item["uses"])
        if stage_cls not in contracts:  # once per stage type in this call, not once per stage
            contracts[stage_cls] = contract(stage_cls)
        if contracts[stage_cls] != item["contract"]:
            return None
        refs = {
            port: Binding(tuple(_ref(t) for t in v), True)
            if isinstance(v, list)
            else Binding.one(_ref(v))
            for port, v in item["inputs"].items()
        }
        stages[name] = StageSpec(
            name,
            item["uses"],
            stage_cls,
            item["params"],
            refs,
            item["after"],
            Location(*item["location"]),
            item["optional"],
            item["template"],
            item["axes"],
            item["resources"],
            item["workers"],
            item["target_cpu"],
        )
    return stages


def _ref(text: str) -> Ref:
    source, _, name = text.rpartition(".")
    return Ref(source, name)
