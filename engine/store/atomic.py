"""Writes that are all-or-nothing, and process mutexes that die with their process (flock)."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import socket
import stat
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from ortflow.engine.store.links import real_folder, refuse_link

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock; mutexes become no-ops there
    fcntl = None  # type: ignore[assignment]

STAGING_SUFFIX = ".ortflow-tmp"
_NOFOLLOW = getattr(
    os, "O_NOFOLLOW", 0
)  # a mutex file planted as a link is refused (ELOOP), not opened


def staging_path(dest: Path) -> Path:
    """A hidden sibling of `dest` (same file system, so the final rename is atomic), named after this host and
    process so that a later run can tell a killed writer's leftover from a live writer's file."""
    return dest.with_name(
        f".{dest.name}.{_HOST}.{os.getpid()}.{uuid.uuid4().hex[:8]}{STAGING_SUFFIX}"
    )


_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def write_text(dest: Path, text: str, mode: int = 0o644) -> None:
    """Write `dest` all at once, with permissions `mode` whatever the umask (never writable by everyone)."""
    store_folder(dest.parent)
    staging = staging_path(dest)
    try:
        staging.write_text(text, encoding="utf-8")
        staging.chmod(mode)
        os.replace(staging, dest)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def store_folder(path: Path) -> Path:
    """mkdir -p, then take away write permission for others whatever the umask: a cache may be shared with a
    group (who can then write it), never with everyone on the machine. A link there is refused, not followed
    (engine.store.links): what is written below would land wherever it points."""
    refuse_link(path)
    path.mkdir(parents=True, exist_ok=True)
    refuse_link(path)
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & stat.S_IWOTH:
        path.chmod(mode & ~stat.S_IWOTH)
    return path


def replace(staging: Path, dest: Path) -> None:
    """Move a staged file or folder onto `dest`. A folder cannot be renamed over another, so the old one
    is first renamed aside; a reader sees the old or the new folder, or briefly none, never a mixture."""
    if staging.is_dir() and real_folder(dest):
        aside = staging_path(dest)
        os.replace(dest, aside)
        os.replace(staging, dest)
        shutil.rmtree(aside, ignore_errors=True)
    else:
        if real_folder(dest):
            shutil.rmtree(dest)
        os.replace(staging, dest)  # a link at `dest` is replaced itself, never followed


def remove_stale_staging(folder: Path, older_than_s: float = 3600) -> None:
    """Staging leftovers of killed processes: those of a process of this host that is gone, and any older
    than a write takes (from another host sharing the folder)."""
    if not folder.is_dir():
        return
    cutoff = time.time() - older_than_s
    for entry in folder.glob(f".*{STAGING_SUFFIX}"):
        try:
            if _writer_gone(entry.name) or entry.lstat().st_mtime < cutoff:
                shutil.rmtree(entry) if real_folder(entry) else entry.unlink()
        except OSError:
            pass


def _writer_gone(name: str) -> bool:
    parts = name[: -len(STAGING_SUFFIX)].split(".")
    if len(parts) < 4 or parts[-3] != _HOST or not parts[-2].isdigit():
        return False  # another host's, or an older name: only its age can tell
    try:
        os.kill(int(parts[-2]), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, under another user
    return False


class ProcessMutex:
    """An exclusive or shared flock on a file. The kernel drops it when the process dies, so a mutex held
    by a dead process (or by a live one in another PID namespace) is never mistaken for the other."""

    def __init__(self, path: Path, shared: bool = False):
        self.path = path
        self.shared = shared
        self._handle: IO[bytes] | None = None

    def acquire(self, blocking: bool = True) -> bool:
        # 0644 whatever the umask: a mutex file anyone could write is one anyone could fill or replace
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                refuse_link(self.path)
            raise
        self._handle = os.fdopen(fd, "r+b")
        if fcntl is None:
            return True
        mode = fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX
        try:
            fcntl.flock(self._handle.fileno(), mode | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            self._handle.close()
            self._handle = None
            return False
        return True

    def still_current(self) -> bool:
        """False if someone removed or replaced the mutex file while we waited for it."""
        assert self._handle is not None
        try:
            return os.fstat(self._handle.fileno()).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing drops the flock
            self._handle = None

    @contextmanager
    def held(self) -> Iterator["ProcessMutex"]:
        self.acquire()
        try:
            yield self
        finally:
            self.release()
