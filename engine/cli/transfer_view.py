"""How a push or pull shows itself: in a terminal, a rich progress bar per phase with bytes, rate and time
left (these commands run no stage, so no other Live display competes for the terminal); piped, nothing
until the one-line summary."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator


class _Bars:
    def __init__(self, progress: Any):
        self.progress = progress
        self.task: Any = None

    def start(self, what: str, total_bytes: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=self.progress.tasks[-1].total)
        self.task = self.progress.add_task(what, total=max(total_bytes, 1) if total_bytes else 0)

    def advance(
        self, nbytes: int
    ) -> None:  # called from fsspec's I/O thread; rich's Progress takes a lock
        if self.task is not None:
            self.progress.advance(self.task, nbytes)


class _Silent:
    def start(self, what: str, total_bytes: int) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        pass


@contextmanager
def transfer_meter(console: Any, quiet: bool) -> Iterator[Any]:
    if quiet or not console.is_terminal:
        yield _Silent()
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )
    with progress:
        yield _Bars(progress)


def summary(verb: str, tally: Any, where: str, seconds: float) -> str:
    """'pushed 12 objects (45.3 MB, 120.4 MB/s) and 5 run records to s3://b/p; already there: ...'."""
    rate = f", {tally.bytes / 1e6 / seconds:.1f} MB/s" if tally.bytes and seconds > 0 else ""
    preposition = "to" if verb == "pushed" else "from"
    return (
        f"{verb} {tally.objects} objects ({tally.bytes / 1e6:.1f} MB{rate}) and {tally.records} run records "
        f"{preposition} {where} in {seconds:.2f} s; already there: {tally.skipped_objects} objects, "
        f"{tally.skipped_records} run records"
    )
