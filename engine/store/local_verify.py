"""`engine cache verify` of the local store: every object re-hashed from its bytes (ignoring the state table),
every run record checked, and (for the recipes named) records against lock files. A name that is not what the
store put there (a shard folder that is a link, an object or a record that is a FIFO, a device or a link to
/dev/zero) is damage found from lstat alone: it is never opened, so verify cannot hang on it, and `--remove`
takes away the name itself, never what a link points to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.store.hashing import hash_file, hash_tree
from ortflow.engine.store.links import odd_kind, real_folder
from ortflow.engine.store.records import checked_record, lock_disagreement, output_digests

ArtifactStore = Any  # engine.store.artifacts.ArtifactStore, which imports this module


@dataclass(frozen=True)
class Damage:
    what: str  # "object", "run", "folder" (a remote's folder manifest) or "entry" (an odd name in the store)
    name: str
    reason: str


def odd_entries(store: ArtifactStore) -> Iterator[tuple[str, str]]:
    """(path under the store's root, what it is) for each shard folder that is not a real folder and each
    run record that is not a regular file."""
    for folder in (store.objects, store.runs):
        for prefix in sorted(folder.iterdir()):
            kind = odd_kind(prefix) or (None if real_folder(prefix) else "not a folder")
            if kind is not None:
                yield prefix.relative_to(store.root).as_posix(), kind
            elif folder == store.runs:
                for entry in sorted(prefix.iterdir()):
                    entry_kind = odd_kind(entry, folder_ok=False)
                    if entry_kind is not None:
                        yield entry.relative_to(store.root).as_posix(), entry_kind


def verify_store(
    store: ArtifactStore, locked: dict[str, tuple[str, dict[str, str]]] | None = None
) -> list[Damage]:
    """The damage in `store`, and against `locked` ({key: (lock file, {port: digest})}) what lock files say
    those keys produced."""
    damage = [
        Damage("entry", name, f"is {kind}, not followed or read")
        for name, kind in odd_entries(store)
    ]
    for digest in store.iter_objects():
        path = store.object_path(digest)
        kind = odd_kind(path)
        if kind is not None:
            damage.append(
                Damage("object", digest, f"is {kind}, not a regular file, refused unread")
            )
            continue
        actual = hash_tree(path) if path.is_dir() else hash_file(path)
        if actual != digest:
            damage.append(Damage("object", digest, f"content hashes to {actual}"))
    broken = {d.name for d in damage if d.what == "object"}
    for key, record in store.iter_runs():
        found = checked_record(
            key, record, lambda d: d not in broken and os.path.lexists(store.object_path(d))
        )
        problem = found if isinstance(found, str) else None
        if locked and key in locked and not isinstance(found, str):
            problem = _lock_problem(found, *locked[key])
        if problem:
            damage.append(Damage("run", key, problem))
    return damage


def _lock_problem(record: RunDocument, lock_name: str, digests: dict[str, str]) -> str | None:
    differs = lock_disagreement(output_digests(record), digests)
    if not differs:
        return None
    return (
        f"disagrees with {lock_name}: its output '{differs[0]}' is object {differs[1]}, the lock file "
        f"records {differs[2]}"
    )
