"""How busy the machine was while a benchmark timed: CPU time other processes used during the timing (from
/proc/stat, less this process's own), the load average, and on a VM the time the hypervisor stole, so noisy
timings are flagged instead of trusted. The load average alone would count this run's own earlier stages."""

from __future__ import annotations

import os
import time
from typing import TypedDict

BUSY_OTHERS_PERCENT = 20.0  # other processes used a fifth of the machine or more while timing
BUSY_STEAL_PERCENT = 5.0


def _cpu_ticks() -> tuple[int, int, int] | None:
    """(busy, steal, total) CPU ticks since boot from /proc/stat, or None where it is not readable."""
    try:
        with open("/proc/stat", encoding="utf-8") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, (fields[7] if len(fields) > 7 else 0), sum(fields)


def _own_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


class Load(TypedDict):
    """The benchmark document's `load` (its schema's MachineLoad): None where the platform does not tell."""

    cpus: int
    load_1min: float | None
    others_percent: float | None
    steal_percent: float | None


class LoadWatch:
    """Started before the timings, finished after them."""

    def __init__(self) -> None:
        self.cpus = os.cpu_count() or 1
        self.started = time.monotonic()
        self.own = _own_cpu_s()
        self.ticks = _cpu_ticks()

    def finish(self) -> Load:
        wall, ticks = time.monotonic() - self.started, _cpu_ticks()
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        found: Load = {
            "cpus": self.cpus,
            "load_1min": load,
            "others_percent": None,
            "steal_percent": None,
        }
        if ticks and self.ticks and ticks[2] > self.ticks[2] and wall > 0:
            hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
            others_s = (ticks[0] - self.ticks[0]) / hz - (_own_cpu_s() - self.own)
            found["others_percent"] = round(
                min(100.0, max(0.0, 100 * others_s / (wall * self.cpus))), 1
            )  # ticks round
            found["steal_percent"] = round(
                100 * (ticks[1] - self.ticks[1]) / (ticks[2] - self.ticks[2]), 1
            )
        return found

    @staticmethod
    def warning(load: Load) -> str:
        """A warning for the summary when the machine was busy, else ""."""
        if load["others_percent"] is not None and load["others_percent"] >= BUSY_OTHERS_PERCENT:
            return f"machine busy: other processes used {load['others_percent']}% of the CPU while timing; timings are noisy"
        if load["steal_percent"] is not None and load["steal_percent"] >= BUSY_STEAL_PERCENT:
            return f"the hypervisor took {load['steal_percent']}% of the CPU while timing; timings are noisy"
        return ""
