"""Where stages execute. The scheduler hands each stage's job to an executor and waits on the futures it
returns, so a thread pool here and a Dask cluster (engine.run.dask_executor) are interchangeable."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from ortflow.engine.contracts.types import StageJob, StageOutcome
    from ortflow.engine.store.base import Store


class Executor(Protocol):
    @property
    def slots(self) -> int:
        """Stages that may run at once (read-only: a cluster's count changes as its workers come and go)."""

    # Whether the scheduler may answer a stage from the cache with this machine's environment facts. Off
    # where stages run elsewhere: the key is then computed, and the cache read, where the stage would run.
    local_cache_lookup: bool

    def run_stage(
        self, store: Store, job: "StageJob", log: Callable[[str], None]
    ) -> "Future[StageOutcome]": ...

    def shutdown(self, cancel: bool = False) -> None: ...


class LocalExecutor:
    """A thread pool: ONNX Runtime and NumPy release the GIL, so stages really overlap."""

    local_cache_lookup = True
    # Libraries stages import lazily; numpy in particular fails ("cannot import name '__cpu_features__'")
    # when two threads import it for the first time at once, so the pool imports them up front.
    PRELOAD = ("numpy", "onnx", "onnxruntime")

    def __init__(self, jobs: int = 1):
        self.slots = max(1, jobs)
        if self.slots > 1:
            import importlib

            for module in self.PRELOAD:
                importlib.import_module(module)
        self._pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="stage")

    def run_stage(
        self, store: Store, job: "StageJob", log: Callable[[str], None]
    ) -> "Future[StageOutcome]":
        from ortflow.engine.run.runner import (
            execute,
        )  # here, not at the top: a fully cached run never needs it

        return self._pool.submit(execute, store, job, log)

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)
