"""The content-addressed artifact store: objects by the hash of their bytes, run records by cache key.

Layout under the store root (default `.ortflow/` beside the recipe, or $ORTFLOW_CACHE):
  objects/ab/cdef...      a file or a folder, named by its sha256 (full length, never shortened)
  runs/ab/<key>.json      what one stage execution produced: output digests, params, inputs, timing
  recipes/                validated-recipe snapshots (engine.recipe.snapshot), disposable
  tmp/                    work folders of running stages, each guarded by a flock held while it is in use
  locks/                  one mutex file per cache key, so concurrent runs never build the same thing twice (the
                          on-disk names of mutex files stay as ortflow 0.1 wrote them, so that two versions
                          sharing a cache still exclude each other)
  store.lock              a mutex runs hold shared, gc exclusive: gc never removes what a running stage uses
  state.db                hashes of files already seen, keyed by inode, mtime, ctime and size
Every write lands in tmp/ first and is renamed into place, so a killed run never leaves half an entry.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.contracts.builds import RunRecord, parse_record
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store import atomic
from ortflow.engine.store.adoption import locally_signed, written_here
from ortflow.engine.store.atomic import ProcessMutex, store_folder
from ortflow.engine.store.collection import Collected, collectable
from ortflow.engine.store.files import (
    READ_ONLY,
    link_or_copy,
    make_read_only,
    remove_path,
    tree_size,
)
from ortflow.engine.store.hashing import HashCache, hash_file, hash_tree
from ortflow.engine.store.links import (
    plain_file,
    real_folder,
    refuse_link,
)
from ortflow.engine.store.local_verify import Damage as Damage  # where remote_verify has it from
from ortflow.engine.store.local_verify import verify_store
from ortflow.engine.store.records import (
    Origin,
    Signature,
    Unsigned,
    checked_record,
    signature_of,
    signed,
)
from ortflow.engine.store.run_document import (
    fits_run_schema,
    redacted,
    run_schema_problem,
)

if TYPE_CHECKING:
    from filelock import FileLock


class ArtifactStore:
    """The folder store (engine.store.base.Store): a local disk or a share every machine mounts."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.objects = self.root / "objects"
        self.runs = self.root / "runs"
        self.tmp = self.root / "tmp"
        self.mutexes = self.root / "locks"
        for folder in (self.root, self.objects, self.runs, self.tmp, self.mutexes):
            store_folder(folder)
        for name in (
            "state.db",
            "state.db.lock",
            "store.lock",
        ):  # opened for writing (a lock truncates)
            refuse_link(self.root / name)
        self.hashes = HashCache(self.root / "state.db")

    # -- objects -----------------------------------------------------------------------------

    def object_path(self, digest: str) -> Path:
        return self.objects / digest[:2] / digest[2:]

    def holds(self, path: Path) -> bool:
        return self.objects in path.parents

    def object_intact(self, digest: str) -> bool:
        """Cheap check (hash remembered by inode/mtime/size): the object exists and was not modified. One that
        is not a regular file or a real folder (a FIFO, a link) is not intact, and is never opened."""
        path = self.object_path(digest)
        plain = real_folder(path.parent) and (plain_file(path) or real_folder(path))
        return plain and self.hashes.hash_path(path) == digest

    def add(self, path: Path) -> str:
        """Move `path` (a file or folder inside tmp/) into the store; returns its digest."""
        return self.adopt(
            path, hash_tree(path) if path.is_dir() else hash_file(path), trusted=False
        )

    def adopt(self, path: Path, digest: str, trusted: bool = True) -> str:
        """add() for a file or folder whose digest the caller has just computed from its bytes (a download
        checked against the name it was fetched by, written and closed by ortflow itself), so it is not read a
        second time. Untrusted (a stage's output, which a thread the stage left behind could still be
        writing), it is hashed again in place, and a late change shows as damage instead of being served."""
        target = self.object_path(digest)
        store_folder(target.parent)
        if os.path.lexists(target) and not self.object_intact(digest):
            remove_path(target)  # a damaged copy: replace it with the good bytes
        if target.exists():
            remove_path(path)
            return digest
        make_read_only(path)
        try:
            os.replace(path, target)
        except OSError:
            if not target.exists():  # a folder rename loses only to a concurrent identical one
                raise
            remove_path(path)
        if trusted and target.is_file():
            self.hashes.remember(target, digest)
        else:
            self.hashes.hash_path(target)
        return digest

    def materialize(self, digest: str, dest: Path) -> None:
        """Place an object at a readable place (out/...), atomically; skipped when already identical. Files are
        hard-linked where the file system allows (no copy of a large model; objects are read-only, so the
        link is too, and `cache verify` re-hashes them), else copied."""
        refuse_link(dest)  # out/<stage>/<file> as a link: neither read nor written through
        if (plain_file(dest) or real_folder(dest)) and self.hashes.hash_path(dest) == digest:
            return
        source = self.object_path(digest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = atomic.staging_path(dest)
        try:
            if source.is_dir():
                shutil.copytree(source, staging, copy_function=link_or_copy)
            else:
                link_or_copy(source, staging)
            atomic.replace(staging, dest)
        finally:
            remove_path(staging)
        self.hashes.hash_path(dest)

    # -- run records -------------------------------------------------------------------------

    def run_path(self, key: str) -> Path:
        return self.runs / key[:2] / f"{key}.json"

    def read_run(self, key: str, stage: str = "") -> RunRecord | None:
        """The run record for `key`, typed: the one place a served record's JSON becomes a RunRecord."""
        document = self.read_run_json(key, stage)
        return RunRecord.from_json(document) if document is not None else None

    def read_run_json(self, key: str, stage: str = "") -> RunDocument | None:
        """The run record for `key` as the JSON document it is stored as (what push and pull move verbatim,
        signature included), if it exists, holds what its key claims (engine.store.records) and every object
        it names is intact, else None. A record that is not a regular file is never opened."""
        path = self.run_path(key)
        if not (real_folder(path.parent) and plain_file(path)):
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            return None
        found = checked_record(key, record, self.object_intact)
        return None if isinstance(found, str) else found

    def has_run(self, key: str) -> bool:
        return self.run_path(key).exists()

    def unsigned_run(self, key: str) -> Unsigned | None:
        """Whether the record for `key` is what it claims with its objects intact, but unsigned while a team
        key is set (written before the key was set), and whether this machine wrote it (then `cache adopt`
        signs it). Not served, yet not damage: `status` says so rather than advising `cache verify --remove`,
        which would delete a good cache."""
        path = self.run_path(key)
        if not (real_folder(path.parent) and plain_file(path)):
            return None
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        found = checked_record(key, record, self.object_intact, Origin.REMOTE_UNSIGNED_OK)
        if isinstance(found, str) or signature_of(found) is not Signature.UNSIGNED:
            return None
        return Unsigned.HERE if written_here(found) else Unsigned.ELSEWHERE

    def write_run(self, record: RunRecord) -> None:
        document = record.to_json()
        if not fits_run_schema(
            document
        ):  # the engine's own record: a bug, said before it is stored
            raise StoreError(f"run record of {record.stage}: {run_schema_problem(document)}")
        self.write_run_json(record.key, document)

    def write_run_json(self, key: str, record: RunDocument, as_is: bool = False) -> None:
        """The document form of write_run (push, pull and `cache adopt` move records as documents). Signed
        when this machine holds the team's key; `as_is` keeps a checked record from a remote
        exactly as it came (its signature included, which this machine may not be able to make)."""
        store_folder(self.run_path(key).parent)
        if not as_is:  # without the team's key, signed with the local one: `cache adopt` (engine.store.adoption)
            record = signed(redacted(record))
            record = record if "signature" in record else locally_signed(record)
        text = json.dumps(record, indent=2, sort_keys=True)
        atomic.write_text(self.run_path(key), text, mode=READ_ONLY)

    def iter_runs(self) -> Iterator[tuple[str, Json]]:
        """Every run record that is a regular file in a real shard folder (odd_entries() names the rest), as
        unchecked documents: `cache verify` and `cache adopt` judge them, others parse them with
        engine.contracts.builds.parse_record."""
        for path in sorted(self._plain_entries(self.runs)):
            if path.suffix != ".json":
                continue
            try:
                yield path.stem, json.loads(path.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                yield path.stem, None

    # -- recipe snapshots (engine.recipe.snapshot) -----------------------------------------------

    def snapshot_path(self, key: str) -> Path:
        return self.root / "recipes" / f"{key}.json"

    def read_snapshot(self, key: str) -> str | None:
        try:
            return self.snapshot_path(key).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def write_snapshot(self, key: str, text: str) -> None:
        atomic.write_text(self.snapshot_path(key), text)

    # -- concurrency -------------------------------------------------------------------------

    def key_mutex(self, key: str) -> FileLock:
        from filelock import FileLock

        refuse_link(self.mutexes / f"{key}.lock")  # FileLock truncates what it opens
        return FileLock(str(self.mutexes / f"{key}.lock"), mode=0o644)  # not 0666 under umask 000

    def in_use(self) -> ProcessMutex:
        """Held (shared) for a whole run, so that gc, which needs it exclusively, waits for no one."""
        return ProcessMutex(self.root / "store.lock", shared=True)

    @contextmanager
    def workdir(self, label: str) -> Iterator[Path]:
        """A private folder under tmp/, held by a mutex while in use and removed afterwards."""
        label = re.sub(r"[^A-Za-z0-9_.=,\[\]-]", "_", label)[
            :100
        ]  # a matrix value may hold any character
        while True:
            name = f"{label}-{uuid.uuid4().hex[:16]}"
            mutex = ProcessMutex(self.tmp / f"{name}.lock")
            mutex.acquire()
            if mutex.still_current():  # a cleanup may have removed the mutex file as we took it
                break
            mutex.release()
        path = self.tmp / name
        try:
            path.mkdir(
                mode=0o700
            )  # a running stage's files: nobody else may change them before they are hashed
            yield path
        finally:
            remove_path(path)
            (self.tmp / f"{name}.lock").unlink(missing_ok=True)
            mutex.release()

    def refuse_links(self) -> None:
        """LinkRefused for a shard folder that is a link: checked before a run starts, so none of its stages
        writes through one (each write checks its own folder again: engine.store.atomic.store_folder)."""
        for folder in (self.objects, self.runs):
            for prefix in folder.iterdir():
                refuse_link(prefix)

    def remove_stale_tmp(self, dry_run: bool = False) -> dict[str, int]:
        """Work folders under tmp/ nobody holds, {name: bytes}; removed unless `dry_run` (engine.store.work)."""
        from ortflow.engine.store.work import stale_work

        return stale_work(self.tmp, dry_run)

    # -- maintenance -------------------------------------------------------------------------

    def iter_objects(self) -> Iterator[str]:
        """Every object's digest, in real shard folders only: a linked shard is never walked (gc would delete
        what it points to); odd_entries() names it. An object that is itself odd is listed (never read)."""
        for prefix in sorted(p for p in self.objects.iterdir() if real_folder(p)):
            for entry in sorted(prefix.iterdir()):
                yield prefix.name + entry.name

    def _plain_entries(self, folder: Path) -> Iterator[Path]:
        for prefix in folder.iterdir():
            if real_folder(prefix):
                yield from (entry for entry in prefix.iterdir() if plain_file(entry))

    def verify(self, locked: dict[str, tuple[str, dict[str, str]]] | None = None) -> list[Damage]:
        """Every object re-hashed from its bytes and every run record checked (engine.store.local_verify)."""
        return verify_store(self, locked)

    def remove_damaged(self, damage: list[Damage]) -> None:
        paths = {"object": self.object_path, "run": self.run_path, "entry": self.root.joinpath}
        for item in damage:
            remove_path(paths[item.what](item.name))

    @contextmanager
    def collecting(self) -> Iterator[None]:
        """The store mutex held exclusively, for the whole of a gc: the lock files that say what to keep must be
        read under it too, or a run that finishes (and writes its lock) between that read and the removal
        loses what it just built. Refused, not waited for, while any run holds the mutex (shared)."""
        exclusive = ProcessMutex(self.root / "store.lock")
        if not exclusive.acquire(blocking=False):
            raise StoreError(
                f"{self.root} is in use by a running `engine run` — run gc when it has finished"
            )
        try:
            yield
        finally:
            exclusive.release()

    def gc(
        self,
        keep_keys: set[str],
        keep_digests: set[str],
        dry_run: bool = False,
        keep: Callable[[RunRecord], bool] = lambda _record: False,
    ) -> Collected:
        """Remove run records not in `keep_keys` (nor accepted by `keep`) and objects no kept record or digest
        references (with `dry_run`, only say what would go). Refuses while any run is using the store."""
        with self.collecting():
            return self.collect(keep_keys, keep_digests, dry_run, keep)

    def collect(
        self,
        keep_keys: set[str],
        keep_digests: set[str],
        dry_run: bool = False,
        keep: Callable[[RunRecord], bool] = lambda _record: False,
    ) -> Collected:
        """gc() for a caller already inside collecting() (which read what to keep under the mutex). A file
        under runs/ that does not parse as a record keeps nothing, and goes."""
        records = {key: parse_record(document) for key, document in self.iter_runs()}
        wanted = set(keep_keys) | {
            key for key, record in records.items() if record is not None and keep(record)
        }
        collected = collectable(self, wanted, keep_digests, records)
        collected = replace(collected, stale=self.remove_stale_tmp(dry_run=True))
        if not dry_run:
            self._remove_collected(collected)
        return collected

    def _remove_collected(self, collected: Collected) -> None:
        for key in collected.runs:
            remove_path(self.run_path(key))
        for digest in collected.objects:
            remove_path(self.object_path(digest))
        self.remove_stale_tmp()
        for disposable in (
            self.root / "recipes",
            self.mutexes,
        ):  # no key mutex is held: no run is active
            shutil.rmtree(disposable, ignore_errors=True)
            store_folder(disposable)

    def size(self) -> int:
        return tree_size(self.objects)


def open_store(
    root: Path | str, make: Callable[[Path], ArtifactStore] = ArtifactStore
) -> ArtifactStore:
    """The store at `root` (a folder, or a file: URL); `make` builds it (a SharedStore that reads through to a remote)."""
    text = str(root)
    if text.startswith("file:"):
        root = Path(re.sub(r"^file:/*", "/", text))
    elif re.match(
        r"^[A-Za-z][A-Za-z0-9+.-]+:/", text
    ):  # s3://b/x (or s3:/b/x, once argparse made it a Path)
        raise StoreError(
            f"the cache must be a folder; object-store URLs ({text.split(':')[0]}://) are not supported "
            "yet — mount the bucket (s3fs, gcsfuse) and give the mounted path"
        )
    root = Path(root)
    try:
        return make(root)
    except OSError as exc:
        raise StoreError(
            f"cannot use the cache folder {root}: {exc} — set ORTFLOW_CACHE or --cache to a writable folder"
        ) from None
