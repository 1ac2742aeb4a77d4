"""A folder object on a remote is a manifest {relative path: file digest}, named by the hash of its JSON; its
files are objects of their own. What a manifest must be before a folder is rebuilt from it."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.hashing import hash_bytes
from ortflow.engine.store.records import DIGEST

DAMAGED = "the remote copy is damaged — run `engine cache verify --remote --remove`, then push it again from a good cache"


def checked_manifest(digest: str, manifest: Json) -> dict[str, str] | str:
    """The manifest as {relative path: file digest} if a folder may be rebuilt from it, else why not: the one
    place a manifest read from a remote becomes typed."""
    if manifest is None:
        return "is not on the remote"
    files = (
        {rel: v for rel, v in manifest.items() if isinstance(v, str) and DIGEST.match(v)}
        if isinstance(manifest, dict)
        else {}
    )
    if not isinstance(manifest, dict) or len(files) != len(manifest):
        return f"has an unreadable folder manifest; {DAMAGED}"
    for rel in files:
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or ".." in parts or "\\" in rel:
            return f"names the file {rel!r}, which is not inside its folder; {DAMAGED}"
    clash = _file_and_folder(files)
    if clash:
        return f"names {clash[0]!r} both as a file and as the folder of {clash[1]!r}; {DAMAGED}"
    if hash_bytes(json.dumps(files, sort_keys=True).encode()) != digest:
        return f"has a folder manifest that does not hash to its name; {DAMAGED}"
    return files


def _file_and_folder(manifest: dict[str, str]) -> tuple[str, str] | None:
    """A name that is a file and, in another entry, a folder (`a` and `a/b.onnx`): no folder holds both."""
    for rel in sorted(manifest):
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts)):
            folder = PurePosixPath(*parts[:depth]).as_posix()
            if folder in manifest:
                return folder, rel
    return None
