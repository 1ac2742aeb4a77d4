"""Transfer progress (push, pull): where it goes, and what a backend that reports no bytes leaves to top up."""

from __future__ import annotations

from typing import Protocol


class Meter(Protocol):
    """Where transfer progress goes (the console's progress bar, or nothing)."""

    def start(self, what: str, total_bytes: int) -> None: ...

    def advance(self, nbytes: int) -> None: ...


class NoMeter:
    def start(self, what: str, total_bytes: int) -> None:
        pass

    def advance(self, nbytes: int) -> None:
        pass


class Counted:
    """Passes bytes on to the meter and tops up what a backend did not report (a local copy reports none)."""

    def __init__(self, meter: Meter):
        self.meter = meter
        self.seen = 0

    def __call__(self, nbytes: int) -> None:
        self.seen += nbytes
        self.meter.advance(nbytes)

    def top_up(self, total: int) -> None:
        if total > self.seen:
            self.meter.advance(total - self.seen)
            self.seen = total
