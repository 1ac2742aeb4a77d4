"""A search's budget: at most so many candidates built, and (optionally) no new one started past a time limit.
A count budget keeps a search's result the same on every machine; a time budget does not (a slow machine stops
sooner), so a search says when time, not the count, ended it, and never caches that stop as a verdict."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Budget:
    max_candidates: int
    seconds: float | None = (
        None  # None: no time limit (the result does not depend on the machine's speed)
    )
    started: float = field(default_factory=time.monotonic)
    stopped: str = ""  # why the search ended early, if it did
    out_of_time: bool = False  # a time-budget stop is no verdict: it must not be cached as one

    def over(self, built: int) -> bool:
        """Whether another candidate may not start, `built` candidates in; sets `stopped` when so."""
        elapsed = time.monotonic() - self.started
        if built >= self.max_candidates:
            self.stopped = f"max_candidates ({self.max_candidates}) reached"
        # a candidate takes about the mean so far: none ends past the limit
        elif self.seconds is not None and elapsed + elapsed / max(built, 1) > self.seconds:
            self.stopped, self.out_of_time = f"the {self.seconds} s budget ran out", True
        return bool(self.stopped)
