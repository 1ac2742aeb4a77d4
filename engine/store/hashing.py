"""Content hashes of files and folders, remembered by (inode, mtime, size) so unchanged files are not re-read."""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import stat
import threading
from pathlib import Path
from typing import Callable

from ortflow.engine.leaves.errors import OrtflowError

CHUNK = 1 << 20


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def hash_tree(path: Path, file_hash: Callable[[Path], str] = hash_file) -> str:
    """A folder's hash: the hash of its sorted (relative path, file hash) manifest."""
    manifest = {
        f.relative_to(path).as_posix(): file_hash(f) for f in sorted(path.rglob("*")) if f.is_file()
    }
    return hash_bytes(json.dumps(manifest, sort_keys=True).encode())


class HashCache:
    """A state table like DVC's: path -> (inode, mtime, ctime, size, hash) in SQLite, safe across processes.
    The ctime catches an edit whose writer restored the old mtime (it cannot be set from user space)."""

    def __init__(self, db_path: Path):
        self._db_path = db_path
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            from filelock import FileLock

            # Switching to WAL and creating the table fail at once (not after the busy timeout) when another
            # process does the same at the same moment, so set-up is serialised with a file lock.
            with FileLock(str(self._db_path) + ".lock", mode=0o644):
                try:
                    conn = self._open()
                except sqlite3.DatabaseError as exc:
                    self._rebuild(exc)
                    conn = self._open()
            self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._db_path, timeout=60, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, inode INTEGER, mtime_ns INTEGER,"
                " ctime_ns INTEGER, size INTEGER, digest TEXT)"
            )
            conn.execute("CREATE TABLE IF NOT EXISTS derived (key TEXT PRIMARY KEY, value TEXT)")
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _rebuild(self, exc: sqlite3.DatabaseError) -> None:
        """The table only remembers hashes, so a damaged one is started afresh (everything is re-hashed once)."""
        logging.getLogger("ortflow").warning(
            "%s was damaged (%s); it only remembers file hashes, so it was started afresh",
            self._db_path,
            exc,
        )
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self._db_path}{suffix}").unlink(missing_ok=True)

    def _execute(self, sql: str, args: tuple[object, ...]) -> sqlite3.Cursor:
        try:
            return self._conn().execute(sql, args)
        except sqlite3.OperationalError:
            raise  # busy or locked: the timeout already waited, and the file is not damaged
        except (
            sqlite3.DatabaseError
        ) as exc:  # damaged after it was opened ("malformed", "not a database")
            from filelock import FileLock

            self._local.conn.close()
            self._local.conn = None
            with FileLock(str(self._db_path) + ".lock", mode=0o644):
                self._rebuild(exc)
            return self._conn().execute(sql, args)

    def hash_path(self, path: Path) -> str:
        path = Path(path)
        if path.is_dir():
            return hash_tree(path, self._hash_file)
        return self._hash_file(path)

    def derived(self, key: str, compute: Callable[[], str]) -> str:
        """A value computed from content, remembered under a key that includes the content's digest."""
        row = self._execute("SELECT value FROM derived WHERE key = ?", (key,)).fetchone()
        if row:
            return str(row[0])
        value = compute()
        self._execute("INSERT OR REPLACE INTO derived VALUES (?, ?)", (key, value))
        return value

    def remember(self, path: Path, digest: str) -> None:
        """Record the digest of a file the caller has just hashed from its bytes (a download, checked)."""
        st = Path(path).stat()
        self._execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (
                str(Path(path).resolve()),
                st.st_ino,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_size,
                digest,
            ),
        )

    def _hash_file(self, path: Path) -> str:
        st = path.stat()
        if not stat.S_ISREG(
            st.st_mode
        ):  # a device or FIFO swapped in after validation: reading never ends
            raise OrtflowError(
                f"{path} is not a regular file (a device, FIFO or socket) — name a regular file"
            )
        key = str(path.resolve())
        row = self._execute(
            "SELECT inode, mtime_ns, ctime_ns, size, digest FROM files WHERE path = ?", (key,)
        ).fetchone()
        if row and tuple(row[:4]) == (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size):
            return str(row[4])
        digest = hash_file(path)
        self._execute(
            "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
            (key, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, digest),
        )
        return digest
