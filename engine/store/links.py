"""No link followed that ortflow did not make: out/ and every folder of the cache are checked with lstat at the
boundary, so a symbolic link planted where ortflow writes (out/<stage> pointed at the user's home, a cache shard
pointed at another disk) is refused before anything is written or deleted through it, and a name that is not a
regular file (a FIFO, a device, a link to /dev/zero) is told apart without being opened: reading one never ends.

The folders the user named (the cache root, an --out outside the recipe's folder) are taken as given: a link
there is the user's own choice, not something planted below it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ortflow.engine.leaves.errors import EXIT_USAGE, OrtflowError

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class LinkRefused(OrtflowError):
    """A symbolic link where ortflow writes, which it did not make: nothing ran through it (exit 2)."""

    exit_code = EXIT_USAGE


def link_target(path: Path) -> str | None:
    """Where `path` points if it is a symbolic link (lstat only), else None."""
    try:
        if not stat.S_ISLNK(os.lstat(path).st_mode):
            return None
        return os.readlink(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def refuse_link(path: Path) -> None:
    """Raise LinkRefused, naming `path` and the fix, if `path` is a symbolic link."""
    target = link_target(path)
    if target is not None:
        raise LinkRefused(
            f"{path} is a symbolic link (to {target}) that ortflow did not make and will not follow — "
            f"remove it (`rm {path}`) and run again"
        )


def refuse_links_below(base: Path, path: Path) -> None:
    """refuse_link() for each level of `path` below `base` (base itself is the user's: taken as given)."""
    if path != base and base not in path.parents:
        refuse_link(path)
        return
    levels = []
    level = path
    while level != base:
        levels.append(level)
        level = level.parent
    for level in reversed(levels):
        refuse_link(level)


def odd_kind(path: Path, folder_ok: bool = True) -> str | None:
    """What `path` is when it is neither a regular file nor (with `folder_ok`) a real folder: "a symbolic link
    (to ...)", "a FIFO (named pipe)", ... — decided from lstat alone, so it never blocks. None when it is
    plain, or absent (the caller says what is missing)."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(found.st_mode):
        return f"a symbolic link (to {os.readlink(path)})"
    if stat.S_ISDIR(found.st_mode):
        return None if folder_ok else "a folder"
    for test, kind in _KINDS:
        if test(found.st_mode):
            return kind
    return None


def plain_file(path: Path) -> bool:
    """A regular file, not a link (lstat only)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def real_folder(path: Path) -> bool:
    """A folder, not a link to one (lstat only)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
