"""Per-thread capture of what libraries print while a stage runs (ORT's quantizer prints progress and logs
warnings). Swapping sys.stdout per call is process-wide and races when stages run in parallel, so the
streams are replaced once by routers that send each thread's writes to that thread's buffer."""

from __future__ import annotations

import io
import sys
import threading
from contextlib import contextmanager
from typing import Iterator, TextIO

_sinks: dict[int, io.StringIO] = {}
_install_lock = threading.Lock()


class _Router(io.TextIOBase):
    def __init__(self, original: TextIO):
        self.original = original

    def write(self, text: str) -> int:
        sink = _sinks.get(threading.get_ident())
        return (sink or self.original).write(text)

    def flush(self) -> None:
        if threading.get_ident() not in _sinks:
            self.original.flush()

    def isatty(self) -> bool:
        return self.original.isatty()

    def fileno(self) -> int:
        return self.original.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.original, "encoding", "utf-8")


def _install() -> None:
    with _install_lock:
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router(sys.stdout)
        if not isinstance(sys.stderr, _Router):
            sys.stderr = _Router(sys.stderr)


@contextmanager
def captured_output() -> Iterator[io.StringIO]:
    """Everything this thread writes to stdout or stderr (print, logging's last-resort handler) lands in
    the yielded buffer instead of the terminal."""
    _install()
    buffer = io.StringIO()
    thread = threading.get_ident()
    outer = _sinks.get(
        thread
    )  # a stage running steps (engine.run.steps) captures inside its own capture
    _sinks[thread] = buffer
    try:
        yield buffer
    finally:
        if outer is None:
            _sinks.pop(thread, None)
        else:
            _sinks[thread] = outer
