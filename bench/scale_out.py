"""Scale-out, measured side by side in one run: the minilm-cpu-sweep recipe (17 stages: 3 calibrations,
9 static and 2 dynamic INT8 variants, benchmark, accuracy, select) from an empty cache, on

  local -j1      the default thread pool, one stage at a time
  dask x1        a Dask LocalCluster with 1 worker process (loopback), shared cache folder
  dask x2        the same with 2 worker processes
  local -j2      the thread pool, two stages at a time

Configurations alternate round by round (this machine is noisy), each with a fresh cache; the wall times'
medians are compared. Every run must produce the same artifacts as the first (benchmark timings excepted).

Usage: python bench/scale_out.py [--rounds N] [--quick]
(--quick: one round of bench/quick.py's tiny recipe, local -j1 against dask x2)
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import quick

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "recipes" / "minilm-cpu-sweep.yaml"
MEASURED = (
    "benchmark",
    "select",
    "speed",
)  # timing results: their bytes differ from run to run by nature


def sweep_once(
    work: Path, executor: str, workers: int, recipe: Path = RECIPE
) -> tuple[float, dict[str, dict[str, str]]]:
    from ortflow.engine import pipeline

    run_dir = Path(tempfile.mkdtemp(dir=work))
    shutil.copy(recipe, run_dir / recipe.name)
    os.symlink(ROOT / "recipes" / "data", run_dir / "data")
    cluster = None
    if executor == "dask":
        from distributed import LocalCluster

        from ortflow.engine.run.dask_executor import DaskExecutor

        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
        cluster.wait_for_workers(workers)
    try:
        started = (
            time.perf_counter()
        )  # from opening the recipe to the report; the cluster is already up
        ws = pipeline.open_workspace(
            run_dir / recipe.name, cache_dir=run_dir / "cache", out_dir=run_dir / "out"
        )
        runner = DaskExecutor(cluster.scheduler_address) if cluster else None
        summary = pipeline.run(ws, jobs=workers, executor=runner)
        seconds = time.perf_counter() - started
    finally:
        if cluster is not None:
            cluster.close()
    if summary.exit_code != 0:
        failed = {n: o.error for n, o in summary.outcomes.items() if not o.succeeded}
        raise SystemExit(f"{executor} x{workers}: the sweep failed: {failed}")
    digests = {
        name: o.record.digests if o.record is not None else {}
        for name, o in summary.outcomes.items()
        if name not in MEASURED
    }
    shutil.rmtree(run_dir)
    return seconds, digests


def main() -> None:
    logging.getLogger("distributed").setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    quick.add_flag(parser)
    args = parser.parse_args()
    configs = [("local", 1), ("dask", 1), ("dask", 2), ("local", 2)]
    if args.quick:
        args.rounds, configs = 1, [("local", 1), ("dask", 2)]
    times: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        recipe = quick.tiny_recipe(Path(tmp) / "tiny") if args.quick else RECIPE
        for round_index in range(args.rounds):
            order = configs if round_index % 2 == 0 else configs[::-1]
            for executor, workers in order:
                seconds, digests = sweep_once(Path(tmp), executor, workers, recipe)
                reference = reference or digests
                if digests != reference:
                    raise SystemExit(
                        f"{executor} x{workers} built different artifacts than the first run"
                    )
                times[(executor, workers)].append(seconds)
                print(
                    f"round {round_index + 1}: {executor} x{workers}: {seconds:.1f} s", flush=True
                )
    median = {c: statistics.median(t) for c, t in times.items()}
    base = median[("local", 1)]
    print(f"\n{os.cpu_count()} CPU cores; medians of {args.rounds} rounds, fresh cache each run")
    for (executor, workers), seconds in median.items():
        label = f"{executor} -j{workers}" if executor == "local" else f"dask x{workers} workers"
        print(f"  {label:18} {seconds:7.1f} s   {base / seconds:.2f}x vs local -j1")
    if ("dask", 1) in median:
        print(
            f"scale_out: 2 vs 1 Dask workers {median[('dask', 1)] / median[('dask', 2)]:.2f}x wall time"
        )


if __name__ == "__main__":
    main()
