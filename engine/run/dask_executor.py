"""Runs each stage as a task on a Dask distributed cluster, with the artifact store on a path every worker
and the client can reach (a shared filesystem).

A worker computes the stage's cache key with its own environment facts, reads the cache under the key's
lock and builds in a private work folder that is committed atomically, exactly as a local run does; a
worker killed mid-stage leaves only a work folder the next run removes, and Dask runs the task again on
another worker. Stages with `resources:` or `workers:` in the recipe run only where those are offered.
"""

from __future__ import annotations

import ctypes
import logging
import os
import socket
import sys
import threading
import time
import uuid
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ortflow.engine.contracts.types import StageOutcome, Status
from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.run.dask_client import DaskFuture, WorkerInfo, connect, workers_of
from ortflow.engine.store.shared import SharedStore

if TYPE_CHECKING:
    from ortflow.engine.contracts.types import StageJob
    from ortflow.engine.store.base import Store

PINNED_WORKER_GRACE_S = (
    60.0  # how long a stage pinned to a worker that left waits for it to come back
)
INSTALL = "pip install 'ortflow[dask]' (or dask[distributed]) on the client and every worker"


class DaskExecutor:
    local_cache_lookup = False  # the worker that would run a stage decides whether it is cached

    def __init__(self, scheduler: str, jobs: int | None = None, timeout_s: float = 10):
        try:
            import distributed  # noqa: F401 - said before connecting, where it is not installed
        except ImportError:
            raise OrtflowError(f"--executor dask needs Dask distributed — {INSTALL}") from None
        logging.getLogger("distributed").setLevel(
            logging.WARNING
        )  # its INFO lines would bury the run's
        try:
            self.client = connect(scheduler, timeout_s)
        except (OSError, TimeoutError) as exc:
            raise OrtflowError(
                f"cannot reach the Dask scheduler at {scheduler}: {exc} — start one with "
                f"`dask scheduler` and workers with `dask worker {scheduler}`, or check --scheduler"
            ) from None
        self.jobs = jobs
        self._topic = f"ortflow-stage-log-{uuid.uuid4().hex}"  # this run's log lines only, on a shared cluster
        self._subscribed = False
        self._lock = threading.Lock()
        # Dask futures in flight by key, to cancel on Ctrl-C
        self._tasks: dict[str, DaskFuture] = {}
        self._pinned: dict[
            str, _Submission
        ] = {}  # tasks restricted to named workers, watched for worker restarts
        self._replaced: set[str] = (
            set()
        )  # keys of pinned tasks submitted again elsewhere: their end means nothing
        self._watcher: threading.Thread | None = None
        self._closed = threading.Event()
        self._slots = (0, 0.0)
        self._published: set[str] = (
            set()
        )  # recipe input files already on the remote (engine.run.remote_worker)

    @property
    def slots(self) -> int:
        """Threads across the cluster's workers (refreshed every few seconds, as workers come and go)."""
        count, when = self._slots
        if time.monotonic() - when > 3:
            count = sum(self.client.nthreads().values())
            self._slots = (count, time.monotonic())
        return max(1, min(count, self.jobs) if self.jobs else count)

    def run_stage(
        self, store: Store, job: "StageJob", log: Callable[[str], None]
    ) -> "Future[StageOutcome]":
        result: Future[StageOutcome] = Future()
        if not self._subscribed:  # worker log lines stream back while stages run
            self._subscribed = True
            self.client.subscribe_topic(self._topic, lambda event: log(event[1]))
        # with a remote, workers need no shared disk (engine.run.remote_worker)
        remote = store.remote if isinstance(store, SharedStore) else None
        if isinstance(store, SharedStore):
            self._publish_inputs(store, job, log)
        self._submit(
            _Submission(
                str(store.root),
                job,
                result,
                (remote.url, remote.options, remote.allow_unsigned) if remote else None,
            )
        )
        return result

    def _publish_inputs(
        self, store: SharedStore, job: "StageJob", log: Callable[[str], None]
    ) -> None:
        from ortflow.engine.run.remote_worker import publish_inputs

        try:
            publish_inputs(store, job, self._published)
        except Exception as exc:  # noqa: BLE001 - boundary: remote store; workers that have the files still run it
            log(
                f"warning: could not upload the inputs of {job.spec.name} to {store.remote.shown}: {store.remote.failure(exc)}"
            )

    def _submit(self, item: "_Submission") -> None:
        spec = item.job.spec
        addresses, problem = self._placement(spec.resources, spec.workers)
        if problem:
            item.result.set_result(StageOutcome(spec.name, Status.FAILED, error=problem))
            return
        task_key = f"{spec.name}-{uuid.uuid4().hex}"  # a str (Dask's keys may be other types)
        task = self.client.submit(
            run_on_worker,
            item.store_root,
            item.job,
            self._topic,
            item.remote,
            pure=False,
            key=task_key,
            resources=spec.resources or None,
            workers=addresses,
            allow_other_workers=False,
        )
        item.task, item.addresses = task, set(addresses or ())
        with self._lock:
            self._tasks[task_key] = task
            if addresses:
                self._pinned[task_key] = item

        def settle(
            done: DaskFuture,
        ) -> None:  # called on a Dask thread once the task finished, failed or was lost
            if task_key in self._replaced:
                return
            try:
                # Stays watched meanwhile: if its worker dies before the result is fetched, Dask recomputes it,
                # and a pinned task must then be moved to the worker's new address.
                outcome = done.result()
            except Exception as exc:  # noqa: BLE001 - boundary: remote executor; every failure becomes the stage's one-line error
                outcome = StageOutcome(spec.name, Status.FAILED, error=_task_error(exc))
            with self._lock:
                self._tasks.pop(task_key, None)
                self._pinned.pop(task_key, None)
                if task_key in self._replaced or item.result.done():
                    return
                item.result.set_result(outcome)

        task.add_done_callback(settle)
        if addresses and self._watcher is None:
            self._watcher = threading.Thread(
                target=self._watch_pinned, name="ortflow-dask-pins", daemon=True
            )
            self._watcher.start()

    def _watch_pinned(self) -> None:
        """Dask turns a worker name into an address when a task is submitted; a worker that restarts (killed,
        out of memory) comes back under a new address, and a task pinned to the old one would wait forever.
        Such a task is submitted again to the worker's new address, or fails once it stays away."""
        said = ""
        while not self._closed.wait(1.0):
            try:
                self._check_pinned()
            except Exception as exc:  # noqa: BLE001 - boundary: a scheduler hiccup must not end the watch
                if self._closed.is_set():
                    return
                if str(exc) != said:  # say each new problem once, not every second
                    said = str(exc)
                    logging.getLogger("ortflow.dask").warning(
                        "watching pinned stages: %s: %s", type(exc).__name__, exc
                    )

    def _check_pinned(self) -> None:
        with self._lock:
            pinned = list(self._pinned.items())
        if not pinned:
            return
        live = set(self._workers())
        for key, item in pinned:
            if item.task is None or item.task.done() or item.addresses & live:
                item.gone_since = None
                continue
            item.gone_since = item.gone_since or time.monotonic()
            waited = time.monotonic() - item.gone_since
            back, _ = self._placement(item.job.spec.resources, item.job.spec.workers)
            if back is None and waited < PINNED_WORKER_GRACE_S:
                continue
            with self._lock:
                self._replaced.add(key)
                self._pinned.pop(key, None)
            self.client.cancel([item.task], force=True)
            if back is None or item.restarts >= 3:
                names = " or ".join(item.job.spec.workers)
                why = (
                    f"did not come back within {PINNED_WORKER_GRACE_S:.0f} s"
                    if back is None
                    else f"restarted {item.restarts + 1} times while running it"
                )
                failed = StageOutcome(
                    item.job.spec.name,
                    Status.FAILED,
                    error=(
                        f"the worker it is pinned to ({names}) left the cluster and {why} — nothing of it was kept; "
                        "check that worker, then run again"
                    ),
                )
                with self._lock:
                    if not item.result.done():
                        item.result.set_result(failed)
                continue
            item.restarts += 1
            item.gone_since = None
            self._submit(item)

    def _workers(self) -> dict[str, WorkerInfo]:
        return workers_of(
            self.client.scheduler_info(n_workers=-1)
        )  # every worker, not the first few

    def _placement(
        self, resources: dict[str, float], workers: list[str]
    ) -> tuple[list[str] | None, str | None]:
        """The addresses of the workers a stage may run on (None: any), or why none can: a task no worker can
        take would wait forever."""
        if not resources and not workers:
            return None, None
        info = self._workers()
        wanted = set(workers)
        allowed = [
            a
            for a, w in info.items()
            if not wanted or {a, str(w.get("name")), w.get("host")} & wanted
        ]
        if not allowed:
            names = sorted(str(w.get("name")) for w in info.values())
            return None, (
                f"no worker of the cluster is {' or '.join(workers)} (workers: {', '.join(names) or 'none'}) — "
                "fix `workers:` in the recipe or start that worker (`dask worker <scheduler> --name NAME`)"
            )
        fit = [
            a
            for a in allowed
            if all(info[a].get("resources", {}).get(r, 0) >= n for r, n in resources.items())
        ]
        if not fit:
            offer = " ".join(f"{r}={n:g}" for r, n in resources.items())
            return None, (
                f"no worker{' named ' + ' or '.join(workers) if workers else ''} offers the resources {offer} "
                f'— start one with `dask worker <scheduler> --resources "{offer}"`, or drop `resources:`'
            )
        return (fit if workers else None), None

    def shutdown(self, cancel: bool = False) -> None:
        """With `cancel`, queued stages never start; a stage already running on a worker cannot be stopped
        from here (Dask does not kill threads): it finishes, and its result is cached as usual."""
        self._closed.set()
        with self._lock:
            tasks = list(self._tasks.values())
        if cancel and tasks:
            self.client.cancel(tasks, force=True)
        if self._subscribed:
            self.client.unsubscribe_topic(self._topic)
        self.client.close()


@dataclass
class _Submission:
    """A stage submitted to the cluster, with what it takes to submit it again."""

    store_root: str
    job: "StageJob"
    result: Future[StageOutcome]
    remote: tuple[str, dict[str, Json], bool] | None = (
        None  # the remote's URL, options and opt-in to unsigned records, when there is one
    )
    task: DaskFuture | None = None
    addresses: set[str] = field(default_factory=set)
    restarts: int = 0
    gone_since: float | None = None


def run_on_worker(
    store_root: str,
    job: "StageJob",
    topic: str,
    remote: tuple[str, dict[str, Json], bool] | None = None,
) -> "StageOutcome":
    """The task: run the stage with this worker's store handle, streaming its log lines to the client. With a
    remote, the store is the worker's own cache and objects move through the remote."""
    from distributed import get_worker

    from ortflow.engine.leaves.errors import StageError, StoreError
    from ortflow.engine.run.jobs import on_this_machine
    from ortflow.engine.run.runner import execute
    from ortflow.engine.store.artifacts import open_store

    _undo_malloc_trim_threshold()
    worker = get_worker()
    ran_on = {"host": socket.gethostname(), "worker": str(worker.name), "address": worker.address}
    try:
        job = on_this_machine(
            job
        )  # the worker's own environment facts (its CPU, its libraries) make the key
    except StageError as exc:
        return StageOutcome(job.spec.name, Status.FAILED, error=str(exc))
    store: Any = None
    if remote is not None:
        from ortflow.engine.run.remote_worker import localized, worker_store

        store = worker_store(remote[0], remote[1], worker.local_directory, remote[2])
        try:
            job = localized(store, job)
        except StoreError as exc:
            return StageOutcome(
                job.spec.name, Status.FAILED, error=f"on worker {worker.name}: {exc}"
            )
    problem = _inputs_missing(job, worker.name, ran_on["host"])
    if problem:
        return StageOutcome(job.spec.name, Status.FAILED, error=problem)

    def log(message: str) -> None:
        worker.log_event(topic, message)

    if store is None:
        return execute(open_store(Path(store_root)), job, log, ran_on)
    from ortflow.engine.run.remote_worker import published

    return published(store, execute(store, job, log, ran_on))


def _inputs_missing(job: "StageJob", worker: str, host: str) -> str | None:
    for port, value in job.input_paths.items():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, Path) and not item.exists():
                return (
                    f"input '{port}' ({item}) does not exist on worker {worker} ({host}) — the recipe's files "
                    "must be on every worker at the same path, and so must the cache unless a remote is given "
                    "(--remote)"
                )
    return None


_MALLOC_TUNED = False


def _undo_malloc_trim_threshold() -> None:
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536 (to hand memory back to the OS). With
    any fixed trim threshold glibc stops adapting its mmap threshold, so every buffer over 128 KiB is a fresh
    mmap: measured here, that makes an entropy calibration of MiniLM 2.1x slower (14.4 s vs 6.9 s) and the
    quantize stages 1.4x. Setting both thresholds back to generous fixed values restores local speed."""
    global _MALLOC_TUNED
    if (
        _MALLOC_TUNED
        or not os.environ.get("MALLOC_TRIM_THRESHOLD_")
        or not sys.platform.startswith("linux")
    ):
        return
    _MALLOC_TUNED = True
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return  # not glibc (musl ignores the variable anyway)
    libc.mallopt(-1, 128 * 2**20)  # M_TRIM_THRESHOLD
    libc.mallopt(-3, 32 * 2**20)  # M_MMAP_THRESHOLD: glibc's own ceiling for its adaptive threshold


def _task_error(exc: BaseException) -> str:
    name = type(exc).__name__
    if name == "KilledWorker":
        return (
            "every worker that ran it died (killed, or out of memory) — nothing of it was kept in the cache; "
            "check the workers' memory and logs, then run again"
        )
    if isinstance(exc, CancelledError):
        return "cancelled (the Dask scheduler or client went away) — run again"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"the Dask task failed: {name}: {text}" + (
        " — is ortflow installed on the workers?" if "No module" in text else ""
    )
