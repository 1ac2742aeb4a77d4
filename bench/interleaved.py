"""Timing shared by the bench scripts: single-thread sessions, and every model timed in the same rounds,
interleaved, the median of each round's median kept (this machine drifts minute to minute)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import onnxruntime as ort


def sessions(paths: dict[str, Path]) -> dict[str, ort.InferenceSession]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return {k: ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"]) for k, p in paths.items()}


def latency_ms(found: dict[str, ort.InferenceSession], feed: dict, rounds: int = 7, runs: int = 20) -> dict[str, float]:
    """Median latency per model on `feed`, interleaved in rounds."""
    medians: dict[str, list[float]] = {k: [] for k in found}
    for _ in range(rounds):
        for name, session in found.items():
            session.run(None, feed)
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                session.run(None, feed)
                times.append((time.perf_counter() - start) * 1e3)
            medians[name].append(statistics.median(times))
    return {k: statistics.median(v) for k, v in medians.items()}
