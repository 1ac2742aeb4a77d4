"""The few calls engine.run.dask_executor makes into Dask distributed, typed. Dask ships no type information, so
every call into its Client or futures would be unchecked (Any in, Any out); naming here what the executor uses,
with the types it relies on, lets mypy check the executor strictly and says what an upgrade of Dask must keep."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping, Protocol, TypedDict

from ortflow.engine.leaves.json_types import Json, number

if TYPE_CHECKING:
    from ortflow.engine.contracts.types import StageOutcome


class WorkerInfo(TypedDict, total=False):
    """What placement reads of one worker in Dask's scheduler_info()."""

    name: str | int
    host: str
    resources: dict[str, float]


class DaskFuture(Protocol):
    """A task submitted to the cluster (distributed.Future)."""

    def done(self) -> bool: ...

    def result(self) -> StageOutcome: ...  # the task is run_on_worker: a StageOutcome

    def add_done_callback(self, callback: Callable[[DaskFuture], None]) -> None: ...


class DaskClient(Protocol):
    """A connection to a Dask scheduler (distributed.Client)."""

    def nthreads(self) -> dict[str, int]: ...

    def subscribe_topic(self, topic: str, handler: Callable[[tuple[float, str]], None]) -> None: ...

    def unsubscribe_topic(self, topic: str) -> None: ...

    def submit(
        self, func: Callable[..., StageOutcome], *args: object, **kwargs: object
    ) -> DaskFuture:
        """Run func(*args) on a worker; kwargs are Dask's own (key, pure, resources, workers...)."""

    def cancel(self, futures: list[DaskFuture], *, force: bool = False) -> None: ...

    def scheduler_info(self, *, n_workers: int = 5) -> Mapping[str, Json]:
        """What the scheduler tells of itself and its workers: read through workers_of."""

    def close(self) -> None: ...


def connect(scheduler: str, timeout_s: float) -> DaskClient:
    """A client of the scheduler at `scheduler` (ImportError without distributed; OSError or TimeoutError when
    it cannot be reached): Client is taken as the protocol above, the one place its untyped form is seen."""
    from distributed import Client

    make: Callable[..., DaskClient] = Client
    return make(scheduler, timeout=timeout_s, set_as_default=False)


def workers_of(info: Mapping[str, Json]) -> dict[str, WorkerInfo]:
    """The workers in what scheduler_info() returned, by address, each as placement reads it."""
    workers = info.get("workers")
    if not isinstance(workers, dict):
        return {}
    return {
        address: _worker(found) for address, found in workers.items() if isinstance(found, dict)
    }


def _worker(found: dict[str, Json]) -> WorkerInfo:
    worker = WorkerInfo()
    name, host, resources = found.get("name"), found.get("host"), found.get("resources")
    if isinstance(name, (str, int)):
        worker["name"] = name
    if isinstance(host, str):
        worker["host"] = host
    if isinstance(resources, dict):
        offered = {r: number(n) for r, n in resources.items()}
        worker["resources"] = {r: n for r, n in offered.items() if n is not None}
    return worker
