"""What a cache command covers: the keys the named recipes' lock files record (push, pull) and the outputs they
say each key produced (`cache verify` checks run records against them). Library verbs, so the CLI only parses,
calls and prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ortflow.engine.cli.command_base import open_workspace
from ortflow.engine.contracts.builds import parse_record
from ortflow.engine.contracts.types import lock_path_for
from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.pipeline import plan
from ortflow.engine.publish.lock import Lock


def locked_outputs(recipes: list[Path], store_root: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """What lock files say each key produced, for `cache verify` to check records against: the named
    recipes' lock files, or else those beside the cache (where a recipe's default cache lives)."""
    paths = [lock_path_for(Path(r)) for r in recipes] or sorted(store_root.parent.glob("*.lock"))
    locked = {}
    for lock_path in paths:
        try:
            lock = Lock.read(lock_path)
        except OrtflowError:
            if recipes:
                raise
            continue  # a *.lock of another tool beside the cache
        locked.update(
            {key: (lock_path.name, outputs) for key, outputs in lock.locked_outputs().items()}
        )
    return locked


def lock_keys(
    recipes: list[Path], store: Any, pulling: bool = False
) -> tuple[dict[str, str], set[str]]:
    """({cache key: stage name} of every stage the recipes' lock files record, the names of the host-specific
    ones among them). A host-specific entry (a benchmark, an accuracy check) records no key: pushing, this
    machine's records that match it go along; pulling, the key this machine would build it under."""
    keys: dict[str, str] = {}
    host_specific: set[str] = set()
    for recipe in recipes:
        lock_path = lock_path_for(recipe)
        if not lock_path.exists():
            raise OrtflowError(
                f"{lock_path}: no lock file — run the recipe first (push), or commit its lock file (pull)"
            )
        entries = Lock.read(lock_path).entries()
        keys.update({entry.key: name for name, entry in entries.items() if entry.key is not None})
        host_specific |= {name for name, entry in entries.items() if entry.key is None}
        if pulling:
            keys.update(planned_keys(recipe, store, host_specific))
        else:
            records = ((key, parse_record(document)) for key, document in store.iter_runs())
            keys.update(
                {
                    key: name
                    for key, record in records
                    if record is not None
                    for name in host_specific
                    if name in entries and entries[name].matches(record.identity)
                }
            )
    return keys, host_specific


def planned_keys(recipe: Path, store: Any, names: set[str]) -> dict[str, str]:
    """{key: stage} this machine would build the named stages under (their upstream known from the lock)."""
    ws = open_workspace(recipe, store.root)
    return {item.key: item.name for item in plan(ws) if item.name in names and item.key}
