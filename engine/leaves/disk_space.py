"""A full disk said as what it is: which disk filled (the folder ortflow was writing and the mount point
holding it) and the fix that applies there, exit code 5. The fix differs by side: the cache's disk (a run, a
pull), the outputs folder's (out/) and a folder remote's (a push)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ortflow.engine.leaves.errors import EXIT_NO_SPACE, OrtflowError, no_space

CACHE_FIX = (
    "free space there (or point ORTFLOW_CACHE / --cache at a bigger disk) and run again: finished stages are "
    "cached and recorded in the lock file, and nothing partial was kept"
)
OUT_FIX = (
    "free space there (or give --out a folder on a bigger disk) and run again: every stage that finished is "
    "cached and recorded in the lock file, so the next run only copies its outputs; no half-copied output was kept"
)
PULL_FIX = (
    "free space there (or pull into a cache on a bigger disk with --cache / ORTFLOW_CACHE) and pull again: what "
    "was pulled is kept, nothing partial was, and the remote is unchanged"
)
PUSH_FIX = (
    "free space on the remote's disk and push again: what was pushed is kept, no partial file was left on the "
    "remote, and the local cache is unchanged"
)


class DiskFull(OrtflowError):
    """A disk filled up: the machine, not the recipe, stopped the command."""

    exit_code = EXIT_NO_SPACE


def mount_point(path: Path) -> Path:
    """The mount point of the file system holding `path` (the nearest existing folder above it, if it is gone)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def disk_full_message(what: str, path: Path, fix: str) -> str:
    """One line: `what` is what ortflow was writing (the cache, the outputs folder, the remote)."""
    return f"no space left on the disk holding {what} ({path}; the file system mounted at {mount_point(path)}) — {fix}"


@contextmanager
def said_when_full(what: str, path: Path, fix: str) -> Iterator[None]:
    """A full disk met inside the block (an ENOSPC or EDQUOT anywhere in the error's causes, however a library
    wrapped it) leaves as DiskFull naming `path`'s disk and `fix`; other errors pass unchanged."""
    try:
        yield
    except Exception as exc:
        if no_space(exc) is None:
            raise
        raise DiskFull(disk_full_message(what, path, fix)) from exc
