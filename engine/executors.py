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

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self._pool.submit(fn, *args)

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)
