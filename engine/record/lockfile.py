"""`<recipe>.lock`: what each stage was built from and what it produced, in stable sorted YAML for git diffs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import yaml

from ortflow.engine.errors import Location, Problem, RecipeError
from ortflow.engine.recipe.yamlsource import MAX_DEPTH, byte_size, too_deep_for_libyaml
from ortflow.engine.store import atomic
from ortflow.engine.store.base import Locks
from ortflow.engine.store.hashing import hash_bytes
from ortflow.engine.store.keys import portable_env
from ortflow.engine.types import Recipe, StageOutcome

LOCK_SCHEMA = 1
HEADER = "# Written by `engine run`. Commit it beside the recipe: it records exactly what was built.\n"


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: a 1,000-stage lock loads in milliseconds
# A lock file holds a few hundred bytes per stage (a 1,000-stage lock is 0.8 MB) and nests as deep as the
# recipe's parameters do, plus its own three levels.
MAX_LOCK_BYTES = 64 << 20
MAX_LOCK_DEPTH = 2 * MAX_DEPTH
FIX = "restore it from git, or delete it and run again"


class _PlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Never writes anchors and aliases: a lock file is read by people and diffed by git."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def read_lock(path: Path) -> dict[str, Any]:
    """The lock's content, or an empty lock when there is none. A damaged lock is an error, not ignored."""
    try:
        data = load_lock_yaml(path)
    except FileNotFoundError:
        return {"schema": LOCK_SCHEMA, "inputs": {}, "stages": {}}
    if not isinstance(data, dict) or data.get("schema") != LOCK_SCHEMA or not isinstance(data.get("stages"), dict):
        raise RecipeError([Problem(f"not an ortflow lock file (schema {LOCK_SCHEMA})", Location(str(path)), FIX)])
    data.setdefault("inputs", {})
    return data


def read_bounded_text(path: Path, what: str = "a lock file", fix: str = FIX) -> str:
    """The file's text, refused unread when it is larger than `what` ever is. FileNotFoundError passes."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(MAX_LOCK_BYTES + 1) if size <= MAX_LOCK_BYTES else b""
    if size > MAX_LOCK_BYTES or len(data) > MAX_LOCK_BYTES:
        how_big = byte_size(size) if size > MAX_LOCK_BYTES else f"over {byte_size(MAX_LOCK_BYTES)}"
        raise RecipeError([Problem(f"{path} is {how_big}, more than the {byte_size(MAX_LOCK_BYTES)} {what} may be",
                                   Location(str(path)), fix)])
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        raise RecipeError([Problem("not a text file", Location(str(path)), fix)]) from None


def load_lock_yaml(path: Path) -> Any:
    """A lock file's data. `engine run` writes plain YAML, never anchors or aliases, so any is refused
    before it can expand: a 2 KB file of nested aliases otherwise makes gigabytes of repeated values for
    whatever walks the result. Built from libyaml's events without recursion (no depth can crash it),
    and faster than yaml.load, whose constructor is Python. FileNotFoundError passes."""
    text = read_bounded_text(path)
    try:
        return _LockBuilder(str(path)).build(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Location(str(path), mark.line + 1, mark.column + 1) if mark else Location(str(path))
        what = f"the lock file holds values nested more than {MAX_LOCK_DEPTH} levels deep" if too_deep_for_libyaml(exc) \
            else "the lock file is not valid YAML"
        raise RecipeError([Problem(what, where, FIX)]) from None


class _LockBuilder:
    """Plain data from YAML events: mappings, sequences and the scalars yaml.safe_load reads."""

    def __init__(self, name: str):
        self.name = name
        self.stack: list[tuple[Any, list[Any] | None]] = []  # open collections; a mapping's pending key
        self.scalars: dict[tuple[Any, ...], Any] = {}  # a lock repeats digests and names: construct each once
        self.documents = 0

    def build(self, text: str) -> Any:
        loader = _Loader(text)
        root = None
        try:
            for event in iter(loader.get_event, None):
                kind = type(event)
                if kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
                    self._open(event)
                    continue
                if kind is yaml.ScalarEvent:
                    value = self._scalar(loader, event)
                elif kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
                    value = self.stack.pop()[0]
                elif kind is yaml.AliasEvent:
                    raise self._refuse(event, f"an alias (*{event.anchor}), which `engine run` never writes")
                else:
                    self._other(event)
                    continue
                if self.stack:
                    self._add(event, value)
                else:
                    root = value
        finally:
            loader.dispose()
        return root

    def _open(self, event: yaml.CollectionStartEvent) -> None:
        if event.anchor is not None:
            raise self._refuse(event, f"an anchor (&{event.anchor}), which `engine run` never writes")
        if event.tag is not None:
            raise self._refuse(event, f"a tag ({event.tag}), which `engine run` never writes")
        if len(self.stack) >= MAX_LOCK_DEPTH:
            raise self._refuse(event, f"values nested more than {MAX_LOCK_DEPTH} levels deep")
        is_mapping = type(event) is yaml.MappingStartEvent
        self.stack.append(({}, []) if is_mapping else ([], None))

    def _other(self, event: yaml.Event) -> None:
        if type(event) is yaml.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                raise self._refuse(event, "more than one YAML document")

    def _scalar(self, loader: Any, event: yaml.ScalarEvent) -> Any:
        if event.anchor is not None:
            raise self._refuse(event, f"an anchor (&{event.anchor}), which `engine run` never writes")
        key = (event.tag, event.value, event.implicit)
        if key not in self.scalars:
            tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit) if event.tag in (None, "!") else event.tag
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            self.scalars[key] = loader.construct_object(node)  # raises for tags safe_load refuses
        return self.scalars[key]

    def _add(self, event: yaml.Event, value: Any) -> None:
        container, key = self.stack[-1]
        if key is None:
            container.append(value)
        elif key:
            container[key.pop()] = value
        elif isinstance(value, (dict, list)):
            raise self._refuse(event, "a mapping or list as a key")
        else:
            key.append(value)

    def _refuse(self, event: yaml.Event, what: str) -> RecipeError:
        where = Location(self.name, event.start_mark.line + 1, event.start_mark.column + 1)
        return RecipeError([Problem(f"the lock file holds {what}", where, FIX)])


def lock_entry(record: dict[str, Any], deterministic: bool = True) -> dict[str, Any]:
    """A stage's lock entry. Measurements (non-deterministic stages) record no output hashes, which change
    every time they are taken; results made for this machine (a key with host facts: a benchmark, an
    accuracy check, an 'all'-level model) record what they were made from but not the key, the host facts or
    the outputs, which another machine makes differently: the lock a team commits must not churn in git."""
    env = portable_env(record["env"])
    entry = {"type": record["type"], "version": record["version"], "params": record["params"],
             "inputs": record["inputs"], "env": env}
    if not deterministic:
        entry["measurement"] = True
    if env != record["env"]:
        return {**entry, "host_specific": True}
    entry["key"] = record["key"]
    if deterministic:
        entry["outputs"] = {name: _locked_output(out) for name, out in record["outputs"].items()}
    return entry


def _locked_output(out: dict[str, Any]) -> dict[str, Any]:
    kept = {"digest": out["digest"], "size": out["size"]}
    if isinstance(out.get("values"), str):
        kept["values"] = out["values"]  # float values another CPU's run may keep (StageContext.locked_values)
    return kept


def updated_lock(
    recipe: Recipe, old: dict[str, Any], outcomes: dict[str, StageOutcome], source_digests: dict[str, str]
) -> dict[str, Any]:
    """Stages that succeeded get fresh entries; others keep their last good entry; removed stages go."""
    stages = {name: entry for name, entry in old.get("stages", {}).items() if name in recipe.stages}
    for name, outcome in outcomes.items():
        if outcome.succeeded and outcome.record is not None:
            stages[name] = lock_entry(outcome.record, recipe.stages[name].stage_cls.deterministic)
    return {
        "schema": LOCK_SCHEMA,
        "recipe": recipe.name,
        "inputs": {name: {"path": spec.declared, "digest": source_digests[f"inputs.{name}"]}
                   for name, spec in recipe.inputs.items()},
        "datasets": {name: {"loader": spec.loader, "digest": source_digests[f"datasets.{name}"]}
                     for name, spec in recipe.datasets.items()},
        "stages": stages,
    }


def write_lock(path: Path, lock: dict[str, Any]) -> None:
    text = HEADER + yaml.dump(lock, Dumper=_PlainDumper, sort_keys=True, default_flow_style=False,
                              allow_unicode=True, width=120)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except FileNotFoundError:
        pass
    atomic.remove_stale_staging(path.parent)
    atomic.write_text(path, text)


class LockWriter:
    """Merges finished stages into the lock file under a file lock, re-reading it each time, so runs of
    different stages of one recipe (or a run and a killed run) never lose each other's entries."""

    EVERY_S = 5.0  # during a run, at most one write per this many seconds; the last write is never skipped

    def __init__(self, recipe: Recipe, store: Locks, source_digests: dict[str, str]):
        self.recipe = recipe
        self.source_digests = source_digests
        self.store = store
        self.guard_name = f"lockfile-{hash_bytes(str(recipe.lock_path).encode())}"  # one lock per lock file
        self.unwritten: dict[str, StageOutcome] = {}
        self.last_write = 0.0

    def record(self, outcomes: dict[str, StageOutcome], final: bool = False) -> None:
        """Merge `outcomes` in; while the run goes on, writes are batched (a killed run loses at most a few
        seconds of entries, which the next run writes from the cache)."""
        self.unwritten.update(outcomes)
        if not final and time.monotonic() - self.last_write < self.EVERY_S:
            return
        with self.store.key_lock(self.guard_name):
            current = read_lock(self.recipe.lock_path)
            write_lock(self.recipe.lock_path, updated_lock(self.recipe, current, self.unwritten, self.source_digests))
        self.unwritten = {}
        self.last_write = time.monotonic()


def drift(old: dict[str, Any], outcomes: dict[str, StageOutcome], recipe: Recipe) -> list[str]:
    """Stages rebuilt under the key the lock records but with different output bytes: not reproducible."""
    found = []
    for name, outcome in sorted(outcomes.items()):
        if not recipe.stages[name].stage_cls.deterministic:
            continue
        entry = old.get("stages", {}).get(name)
        if outcome.record is None or entry is None or entry.get("key") != outcome.key:
            continue
        changed = sorted(port for port, out in outcome.record["outputs"].items()
                         if entry.get("outputs", {}).get(port, {}).get("digest") not in (None, out["digest"]))
        if changed:
            found.append(f"stage '{name}' was rebuilt from the same inputs and parameters as the lock file records, "
                         f"but its output {', '.join(changed)} has different bytes: the stage is not reproducible")
    return found


def referenced(lock: dict[str, Any]) -> tuple[set[str], set[str], list[dict[str, Any]]]:
    """(cache keys, object digests, host-specific entries) a lock file needs kept; a run record matching a
    host-specific entry (store.keys.lock_entry_matches) is kept too."""
    keys, digests, host_specific = set(), set(), []
    for entry in lock.get("stages", {}).values():
        if "key" in entry:
            keys.add(entry["key"])
        else:
            host_specific.append(entry)
        digests.update(out["digest"] for out in (entry.get("outputs") or {}).values())
    return keys, digests, host_specific


def locked_outputs(lock: dict[str, Any]) -> dict[str, dict[str, str]]:
    """{cache key: {output: digest}} for every stage entry of a lock file (measurements record none)."""
    return {entry["key"]: {port: out["digest"] for port, out in (entry.get("outputs") or {}).items()}
            for entry in lock.get("stages", {}).values() if isinstance(entry, dict) and "key" in entry}


def locked_values(lock: dict[str, Any]) -> dict[str, dict[str, str]]:
    """{cache key: {output: packed float values}} where the lock records values with an output."""
    found: dict[str, dict[str, str]] = {}
    for entry in lock.get("stages", {}).values():
        if not isinstance(entry, dict) or "key" not in entry:
            continue
        values = {port: out["values"] for port, out in (entry.get("outputs") or {}).items()
                  if isinstance(out, dict) and isinstance(out.get("values"), str)}
        if values:
            found[entry["key"]] = values
    return found
