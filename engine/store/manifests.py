"""A folder object on a remote is a manifest {relative path: file digest}, named by the hash of its JSON; its
files are objects of their own. What a manifest must be before a folder is rebuilt from it."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from ortflow.engine.store.hashing import hash_bytes
from ortflow.engine.store.records import DIGEST

DAMAGED = "the remote copy is damaged — run `engine cache verify --remote --remove`, then push it again from a good cache"


def manifest_problem(digest: str, manifest: Any) -> str | None:
    if manifest is None:
        return "is not on the remote"
    if not isinstance(manifest, dict) or not all(
        isinstance(v, str) and DIGEST.match(v) for v in manifest.values()
    ):
        return f"has an unreadable folder manifest; {DAMAGED}"
    for rel in manifest:
        parts = PurePosixPath(rel).parts
        if not parts or rel.startswith("/") or ".." in parts or "\\" in rel:
            return f"names the file {rel!r}, which is not inside its folder; {DAMAGED}"
    clash = _file_and_folder(manifest)
    if clash:
        return f"names {clash[0]!r} both as a file and as the folder of {clash[1]!r}; {DAMAGED}"
    if hash_bytes(json.dumps(manifest, sort_keys=True).encode()) != digest:
        return f"has a folder manifest that does not hash to its name; {DAMAGED}"
    return None


def _file_and_folder(manifest: dict[str, str]) -> tuple[str, str] | None:
    """A name that is a file and, in another entry, a folder (`a` and `a/b.onnx`): no folder holds both."""
    for rel in sorted(manifest):
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts)):
            folder = PurePosixPath(*parts[:depth]).as_posix()
            if folder in manifest:
                return folder, rel
    return None
