"""Dask workers without a shared disk: with a remote, each worker keeps a cache of its own, fetches the stage's
inputs from the remote by their hashes (an upstream stage may have run on another worker), looks the stage up
there before building it, and publishes what it built (objects first, then the record). The client fetches
the outputs it publishes under out/ from the remote as well (engine.store.shared)."""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from pathlib import Path

from ortflow.engine.contracts.dataset import Dataset
from ortflow.engine.contracts.types import StageJob, StageOutcome, Status
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.remote import Remote
from ortflow.engine.store.shared import SharedStore
from ortflow.engine.store.transfer import Tally, publish_run

_OPEN: dict[
    tuple[str, str, bool], SharedStore
] = {}  # one store (and one fsspec client) per worker process
_LOCK = threading.Lock()


def worker_store(
    url: str, options: dict[str, Json], local_directory: str, allow_unsigned: bool = False
) -> SharedStore:
    """This worker's own cache: $ORTFLOW_CACHE where the worker sets it (workers on one machine may share
    it: the store is safe for concurrent processes), else a folder in the worker's local directory. The
    client's opt-in to unsigned records travels with the task; the team's key never does (it is a secret,
    and Dask's messages may be unencrypted): each worker reads ORTFLOW_SIGNING_KEY from its own environment."""
    root = os.environ.get("ORTFLOW_CACHE") or str(Path(local_directory) / "ortflow-cache")
    with _LOCK:
        store = _OPEN.get((root, url, allow_unsigned))
        if store is None:
            remote = Remote(url, options, allow_unsigned)
            store = _OPEN[(root, url, allow_unsigned)] = SharedStore(Path(root), remote)
        return store


def localized(store: SharedStore, job: StageJob) -> StageJob:
    """The job with every input that is a store object (named by its digest in the client's store) pointed at
    this worker's copy, fetched from the remote when it is not here yet."""
    paths: dict[str, Path | list[Path] | Dataset] = {}
    for port, value in job.input_paths.items():
        digests = job.input_digests[port]
        if isinstance(value, list):
            paths[port] = [
                _local(store, item, digest) for item, digest in zip(value, digests, strict=False)
            ]
        elif isinstance(value, Path) and isinstance(digests, str):
            paths[port] = _local(store, value, digests)
        else:
            paths[port] = value  # a dataset: its files on the worker's disk at the same path
    return replace(job, input_paths=paths)


def _local(store: SharedStore, item: Path, digest: str) -> Path:
    is_object = item.parent.parent.name == "objects" and item.parent.name + item.name == digest
    if not is_object and item.exists():
        return item  # a recipe input the worker has at the same path
    if not store.object_intact(digest):
        try:
            store.fetch(digest)
        except StoreError:
            if is_object:
                raise
            return item  # a recipe input neither here nor on the remote: said as a missing input
    return store.object_path(digest)


def publish_inputs(store: SharedStore, job: StageJob, published_digests: set[str]) -> None:
    """The client's side: recipe input files a stage reads (plain files, named by their content hash) are
    uploaded once, so a worker without the file fetches it by hash like any object."""
    remote = store.remote
    for port, value in job.input_paths.items():
        digests = job.input_digests[port]
        pairs = zip(value, digests, strict=False) if isinstance(value, list) else [(value, digests)]
        for item, digest in pairs:
            if (
                not isinstance(item, Path)
                or not isinstance(digest, str)
                or digest in published_digests
                or store.holds(item)
                or not item.is_file()
                or store.hashes.hash_path(item) != digest
            ):
                continue  # a dataset, an object (published by the worker that built it), or a model with external data
            if remote.size(remote.object_name(digest)) is None:
                remote.upload([(item, remote.object_name(digest))], lambda _n: None)
            published_digests.add(digest)


def published(store: SharedStore, outcome: StageOutcome) -> StageOutcome:
    """Publish the stage's record and objects (unless the remote has them); a failure to publish fails the
    stage with the reason, since the client could not fetch its outputs."""
    if outcome.record is None or not outcome.key:
        return outcome
    tally = Tally()
    try:
        publish_run(store, store.remote, outcome.key, tally)
    except StoreError as exc:  # no team key on this worker: said as such, not as a transfer failure
        return StageOutcome(
            outcome.name,
            Status.FAILED,
            outcome.seconds,
            outcome.key,
            error=f"built, but not published: {exc}",
        )
    except Exception as exc:  # noqa: BLE001 - boundary: remote store; the client hears why, in one line
        return StageOutcome(
            outcome.name,
            Status.FAILED,
            outcome.seconds,
            outcome.key,
            error=f"built, but not published: {store.remote.failure(exc)}",
        )
    return outcome
