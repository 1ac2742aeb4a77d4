"""File operations the folder store is built from: hard links where possible, read-only objects, removal of a
file or a folder alike, and sizes."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from ortflow.engine.store.links import plain_file, real_folder

READ_ONLY = (
    stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
)  # objects and records are never changed in place


def link_or_copy(source: Path | str, dest: Path | str) -> None:
    """A hard link where the file system allows one (no bytes copied), else a copy."""
    try:
        os.link(source, dest)
    except OSError:  # another file system, or one without hard links
        shutil.copyfile(source, dest)


def make_read_only(path: Path) -> None:
    """What the store holds is never edited in place: a changed file would no longer be what its name says."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for f in files:
        f.chmod(READ_ONLY)


def remove_path(path: Path) -> None:
    """A file, a folder, or a link (the link itself, never what it points to)."""
    if real_folder(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def tree_size(path: Path) -> int:
    """Bytes in a file, or in all files under a folder (lstat only: a link or a FIFO counts 0)."""
    if plain_file(path):
        return path.stat().st_size
    if not real_folder(path):
        return 0
    return sum(p.lstat().st_size for p in path.rglob("*") if plain_file(p))
