"""`engine init` then `engine run`, with no edits, on four real models from their PyPI wheels, in one run: what
`pick` chose for each, its speedup over fp32 measured by the recipe's own benchmark (side by side with fp32,
interleaved), its accuracy on the recipe's held-out feeds, and the run's wall time. Prints the host's ISA.

    python bench/init_models.py            # from an empty cache in a temporary folder, about a minute on 2 cores
    python bench/init_models.py --quick    # magika alone, with bench/corpus.py's short benchmark
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import quick  # noqa: E402
from corpus import QUICK_RUN, by_stage_type  # noqa: E402
from test_init import MODELS  # noqa: E402  (the same models the acceptance tests use)

from ortflow.engine.leaves.environment import fact  # noqa: E402

DATA = {"nudenet": ["--data", str(REPO / "recipes" / "data" / "images" / "people")]}


def one(model: str, folder: Path, run_args: tuple[str, ...] = ()) -> list[str]:
    recipe = folder / f"{model}.yaml"
    subprocess.run(
        ["engine", "init", str(MODELS[model]()), "-o", str(recipe), *DATA.get(model, [])],
        check=True,
        capture_output=True,
    )
    started = time.perf_counter()
    done = subprocess.run(
        ["engine", "run", "-q", str(recipe), *by_stage_type(recipe, run_args)],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        return [model, "failed", "", "", done.stderr.strip()[:80], f"{seconds:.0f} s"]
    name = next(
        line.split(": ", 1)[1]
        for line in recipe.read_text().splitlines()
        if line.startswith("name: ")
    )
    selection = json.loads((folder / "out" / name / "pick" / "selection.json").read_text())
    chosen = next(c for c in selection["candidates"] if c["chosen"])
    metric, threshold = next(iter(selection["constraints"]["min"].items()))
    data = "real" if model in DATA else "random"
    return [
        model,
        data,
        chosen["id"],
        f"{chosen['values']['speedup']:.2f}x",
        f"{metric} {chosen['values'][metric]:.4f} (>= {threshold})",
        f"{seconds:.0f} s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    args = parser.parse_args()
    models, run_args = (
        (("magika",), QUICK_RUN) if args.quick else (("minilm", "nudenet", "magika", "vad"), ())
    )
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for model in models:
            rows.append(one(model, Path(folder), run_args))
    print(f"host: {fact('isa')}, {fact('cpu')}, {fact('onnxruntime')}")
    print("| model | data | chosen | speedup vs fp32 | accuracy | run |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
