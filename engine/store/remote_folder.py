"""A remote that is a plain folder (file://, a share every machine mounts), held to the local store's own rules:
written with the store's modes whatever the umask (folders never writable by everyone, objects and records
read-only), a write that fails (a full disk) leaves no staging file, and nothing is read from a name that is
not a regular file inside the folder: a FIFO blocks a read forever and a link to /dev/zero never ends one."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable

from ortflow.engine.store.atomic import store_folder

READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH  # as the local store's objects and records

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def make_folders(folder: Path) -> None:
    """mkdir -p of `folder`, each level it creates with the store's modes, not the umask's. Folders already
    there are left as they are: a share's root may belong to someone else, who chose its modes."""
    missing = []
    level = folder
    while not level.exists() and level != level.parent:
        missing.append(level)
        level = level.parent
    for path in reversed(missing):
        try:
            store_folder(path)
        except PermissionError:  # another user's push created it at the same moment: theirs to set
            pass


def written(staging: str, write: Callable[[], None]) -> None:
    """Run `write` (which fills `staging`), then make the file read-only; a write that fails, a full disk
    included, takes its staging file with it."""
    try:
        write()
        os.chmod(staging, READ_ONLY)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def refusal(root: str, name: str) -> str | None:
    """Why `name` must not be read, or None (a regular file inside `root`, or nothing there: the caller says
    what is missing). Decided from lstat/stat alone, so it never blocks."""
    path = Path(name)
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(found.st_mode) or any(p.is_symlink() for p in path.parents):
        target = path.resolve()
        if not target.is_relative_to(Path(root).resolve()):
            return f"is a symbolic link leading out of the remote (to {target})"
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return "is a symbolic link to nothing"
    for test, kind in _KINDS:
        if test(found.st_mode):
            return f"is {kind}, not a regular file"
    return None
