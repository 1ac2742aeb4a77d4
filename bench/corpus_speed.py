"""The corpus table's speed claim (issue 41): the model `engine optimize` delivered, timed in this process in rounds
interleaved with the original and a byte-copy of the original (the control), with ORT's default threads as
optimize's benchmark uses. optimize's own speedup is one benchmark's ratio on a shared machine; here each round
gives a ratio (original p50 / delivered p50) and the control's (original p50 / copy p50), so the noise shows.

The counting rule (`counts_faster`): a model counts "faster" only when its speedup's LOW end over the rounds is
above the control's HIGH end: even its worst round beats the largest difference two identical files showed in the
same rounds. A median above the control's maximum would count a model whose rounds straddle the noise (vit-focus's
static INT8 timed 0.69-2.57x in bench/README.md's op-table run); the rule asks for no round inside it.

The rounds' cost is bounded per model (`plan_runs`): a 1.4 s vision transformer gets fewer runs a round than a
0.1 ms VAD, so the full corpus run stays within its 12 minutes (bench/README.md)."""

from __future__ import annotations

import shutil
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import onnxruntime as ort
from onnxruntime.capi.onnxruntime_pybind11_state import Fail, InvalidArgument, RuntimeException

ORT_ERRORS = (
    Fail,
    InvalidArgument,
    RuntimeException,
)  # a session that refuses a feed or fails a run

ROUNDS = (
    5  # rounds per model: the spread needs several; each round times original, copy and delivered
)
MAX_RUNS = 2000  # runs per round for a fast model (20 gave a 0.1 ms VAD 2 ms rounds, a control of 0.85-1.20x)
BUDGET_S = 5.0  # timed seconds per model (warm-up apart), shared out over the rounds and the three sessions
MODELS = ("original", "copy", "delivered")


def counts_faster(speedups: Sequence[float], controls: Sequence[float]) -> bool:
    """Whether the delivered model is faster above the noise: its slowest round's ratio beats the control's
    highest. No rounds (nothing delivered, or untimed) claims nothing."""
    return bool(speedups) and bool(controls) and min(speedups) > max(controls)


def plan_runs(latency_ms: float, rounds: int = ROUNDS, budget_s: float = BUDGET_S) -> int:
    """Runs per round for a model whose one run takes `latency_ms`: the budget over rounds x 3 sessions, at least
    1 (a slow model's round is then one run of each, still interleaved), at most MAX_RUNS."""
    per_run_s = max(latency_ms, 1e-3) / 1e3
    return max(1, min(MAX_RUNS, int(budget_s / (rounds * len(MODELS) * per_run_s))))


@dataclass(frozen=True)
class SpeedClaim:
    """Per-round ratios of the original's p50 to the delivered model's and to the control's."""

    speedups: tuple[float, ...] = ()
    controls: tuple[float, ...] = ()
    runs: int = 0  # runs per round
    note: str = ""  # why there is no claim (optimize delivered the original, no data to time on)

    @property
    def faster(self) -> bool:
        return counts_faster(self.speedups, self.controls)

    def text(self) -> str:
        if self.note:
            return self.note
        median = statistics.median(self.speedups)
        return (
            f"{median:.2f}x ({min(self.speedups):.2f}-{max(self.speedups):.2f}), control "
            f"{min(self.controls):.2f}-{max(self.controls):.2f}x; {len(self.speedups)} rounds of "
            f"{self.runs}" + ("" if self.faster else "; not above the control")
        )


def ratios(medians: dict[str, list[float]]) -> SpeedClaim:
    """Each round's original/delivered and original/copy p50 ratios."""
    original = medians["original"]
    return SpeedClaim(
        tuple(o / d for o, d in zip(original, medians["delivered"])),
        tuple(o / c for o, c in zip(original, medians["copy"])),
    )


def round_medians(
    found: dict[str, ort.InferenceSession], feed: dict, rounds: int, runs: int
) -> dict[str, list[float]]:
    """Each session's p50 (ms) per round, the sessions interleaved within every round."""
    medians: dict[str, list[float]] = {k: [] for k in found}
    feeds = {k: own_inputs(session, feed) for k, session in found.items()}
    for _ in range(rounds):
        for name, session in found.items():
            laps = []
            for _ in range(runs):
                started = time.perf_counter()
                session.run(None, feeds[name])
                laps.append((time.perf_counter() - started) * 1e3)
            medians[name].append(statistics.median(laps))
    return medians


def own_inputs(session: ort.InferenceSession, feed: dict) -> dict:
    """The feed's entries the session takes: a delivered model may have folded an input the original takes (a
    constant sample rate specialized away)."""
    names = {i.name for i in session.get_inputs()}
    return {k: v for k, v in feed.items() if k in names}


def default_sessions(paths: dict[str, Path]) -> dict[str, ort.InferenceSession]:
    """ORT's default session options and threads: what optimize's benchmark and a user's session use."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return {
        k: ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"])
        for k, p in paths.items()
    }


def time_delivered(
    original: Path, delivered: Path, feed: dict, scratch: Path, rounds: int = ROUNDS
) -> SpeedClaim:
    """The delivered model against the original and a byte-copy of it written in `scratch` (the original's own
    folder where its weights sit beside it as external data): one warm-up run each, one run each to plan the runs
    per round, then the interleaved rounds."""
    copy = scratch / f"control-copy-{original.name}"
    shutil.copyfile(original, copy)
    try:
        found = default_sessions({"original": original, "copy": copy, "delivered": delivered})
        for session in found.values():
            session.run(None, own_inputs(session, feed))
        probe = round_medians(found, feed, 1, 1)
        runs = plan_runs(max(v[0] for v in probe.values()), rounds)
        claim = ratios(round_medians(found, feed, rounds, runs))
    finally:
        copy.unlink()
    return SpeedClaim(claim.speedups, claim.controls, runs)


def summary(claims: dict[str, SpeedClaim], fixed: Sequence[str]) -> str:
    """The table's closing count over the fixed denominator (the manifest's first models; those added later are
    counted apart)."""
    counted = [i for i in fixed if i in claims and claims[i].faster]
    added = [i for i, c in claims.items() if i not in fixed and c.faster]
    ran = sum(i in claims for i in fixed)
    line = f"{len(counted)} of {len(fixed)} faster above the control's spread"
    if ran < len(fixed):
        line += f" ({ran} of them run here)"
    return line + (
        f"; added later: {len(added)} of {len(claims) - ran}" if claims.keys() - set(fixed) else ""
    )
