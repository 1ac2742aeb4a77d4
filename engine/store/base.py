"""What the engine needs from an artifact store, as three small interfaces (after Hamilton's caching: results
and metadata are separate concerns), so another backend (an object store, a remote cache) can be added
without touching the runner, the scheduler or the records. `ArtifactStore` (engine.store.artifacts) is the
folder implementation."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Iterator, Protocol

from ortflow.engine.contracts.builds import RunRecord
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.hashing import HashCache
from ortflow.engine.store.records import Unsigned


class Objects(Protocol):
    """Immutable content-addressed files and folders, named by the sha256 of their bytes."""

    def object_path(self, digest: str) -> Path:
        """Where a stage reads the object (stages hand ORT local paths)."""

    def holds(self, path: Path) -> bool:
        """`path` is inside one of the store's objects (immutable: no need to re-hash it)."""

    def object_intact(self, digest: str) -> bool: ...

    def add(self, path: Path) -> str:
        """Store a file or folder; returns its digest (adding what is already there is a no-op)."""

    def materialize(self, digest: str, dest: Path) -> None:
        """Place a copy (or link) of the object at `dest`, e.g. under out/."""

    def iter_objects(self) -> Iterator[str]: ...


class RunRecords(Protocol):
    """What one stage execution produced, by cache key. The store keeps each as a JSON document and hands it
    out typed: the JSON is parsed into a RunRecord in the store (RunRecord.from_json), nowhere else."""

    def read_run(self, key: str, stage: str = "") -> RunRecord | None:
        """The record if it exists and every object it names is intact, else None (`stage`: who asks, for messages)."""

    def write_run(self, record: RunRecord) -> None:
        """Written last, atomically, under `record.key`: a record exists only once all its objects do."""

    def has_run(self, key: str) -> bool:
        """A record file exists for `key`, intact or not (a damaged entry, to be reported as such)."""

    def unsigned_run(self, key: str) -> Unsigned | None:
        """An Unsigned (engine.store.records) when the record for `key` fails only for want of the team's
        signature (written before the key was set), else None."""

    def iter_runs(self) -> Iterator[tuple[str, Json]]:
        """Every record file as the unchecked JSON it holds (None when it is not JSON), for those that judge
        it (engine.store.records.checked_record) or parse it leniently (engine.contracts.builds.parse_record)."""


class Mutexes(Protocol):
    """Concurrency: one builder per key, runs against gc, private work folders."""

    def key_mutex(self, key: str) -> AbstractContextManager[Any]: ...

    def in_use(self) -> Any:
        """A shared mutex a run holds throughout (`.held()`), which gc takes exclusively."""

    def workdir(self, label: str) -> AbstractContextManager[Path]: ...

    def remove_stale_tmp(self, dry_run: bool = False) -> dict[str, int]: ...

    def refuse_links(self) -> None:
        """LinkRefused for a folder of the store that is a symbolic link (engine.store.links)."""


class Snapshots(Protocol):
    """Validated-recipe snapshots (engine.recipe.snapshot) by their key: disposable text the store keeps for
    the recipe loader, which signs and checks what it writes; gc removes them all."""

    def read_snapshot(self, key: str) -> str | None:
        """The text stored under `key`, or None when there is none (or it cannot be read)."""

    def write_snapshot(self, key: str, text: str) -> None:
        """Written atomically (a reader sees the old text or the new, never part of it)."""


class Store(Objects, RunRecords, Snapshots, Mutexes, Protocol):
    """An artifact store: objects, run records, recipe snapshots and mutexes, plus the hash cache of source
    files."""

    root: Path
    hashes: HashCache
