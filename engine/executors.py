"""Where stages execute. The scheduler only submits callables and waits on futures, so this can be swapped."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Protocol


class Executor(Protocol):
    slots: int

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future: ...

    def shutdown(self, cancel: bool = False) -> None: ...


class LocalExecutor:
    """A thread pool: ONNX Runtime and NumPy release the GIL, so stages really overlap."""

    def __init__(self, jobs: int = 1):
        self.slots = max(1, jobs)
        self._pool = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="stage")

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self._pool.submit(fn, *args)

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)
