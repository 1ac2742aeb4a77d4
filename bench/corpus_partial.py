"""The corpus table's partial-INT8 cell: what init's `int8_partial` stage (quantize_partial) delivered for a model,
from its partial.json (the nodes kept float with their SQNR drop, the task metric on the held-out real data), and
its speed measured here in rounds interleaved with the original and a byte-copy of the original, the control: the
copy's ratio is the timing noise, so a speedup inside it is no speedup (bench/interleaved.py)."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from interleaved import latency_ms, sessions

from ortflow.engine.leaves.yamlsource import load_yaml

STAGE = "int8_partial"  # the stage engine init writes (engine.starter.proposal._partial_stage)


@dataclass(frozen=True)
class PartialCell:
    kept_float: list[str]  # "node (op, SQNR drop x dB)"
    metric: str  # the chosen candidate's gated values on the held-out data
    speedup: float | None = None
    control: float | None = None  # the byte-copy's ratio to the original: the noise
    note: str = ""  # why there is no partial model, when there is none

    def text(self) -> str:
        if self.note:
            return self.note
        floats = (
            "; ".join(self.kept_float) if self.kept_float else "nothing (whole-model INT8 met it)"
        )
        speed = (
            f"{self.speedup:.2f}x (control {self.control:.2f}x)"
            if self.speedup and self.control
            else "untimed"
        )
        return f"{speed}, {self.metric}; kept float: {floats}"


def partial_cell(
    recipe_path: Path, original: Path, rounds: int = 5, runs: int = 10
) -> PartialCell | None:
    """None where the recipe has no partial stage (random data, or a model init quantizes otherwise)."""
    recipe = load_yaml(recipe_path)[0]
    if STAGE not in recipe["stages"]:
        return None
    folder = recipe_path.parent / "out" / recipe["name"] / STAGE
    document = folder / "partial.json"
    if not document.exists():
        return PartialCell([], "", note="the stage did not run (see the run's log)")
    found = json.loads(document.read_text())
    if found["chosen"] is None:
        tried = len(found["candidates"])
        whole = found["candidates"][0] if found["candidates"] else {}
        why = found.get("stopped_early") or (
            "whole-model INT8 already keeps the metric (the int8 row)"
            if tried == 1 and whole.get("passed")
            else "no part of the model met the metric"
        )
        return PartialCell([], "", note=f"none: {why} ({tried} candidates tried)")
    chosen = next(c for c in found["candidates"] if c["id"] == found["chosen"])
    metric = ", ".join(f"{k} {v:.4f}" for k, v in chosen["values"].items())
    kept = [
        f"{k['node']} ({k['op_type']}, SQNR drop {k['sqnr_drop_db']:.1f} dB)"
        for k in found["kept_float"]
    ]
    speedup, control = timed(recipe_path, recipe, original, folder / "model.onnx", rounds, runs)
    return PartialCell(kept, metric, speedup, control)


def timed(
    recipe_path: Path, recipe: dict, original: Path, model: Path, rounds: int, runs: int
) -> tuple[float, float]:
    """(original / partial, original / its byte-copy) p50 latency, interleaved, on the first held-out sample."""
    feed = held_out_feed(recipe_path, recipe, original)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "control-copy.onnx"
        shutil.copyfile(original, copy)
        found = sessions({"fp32": original, "copy": copy, "partial": model})
        times = latency_ms(found, feed, rounds, runs)
    return times["fp32"] / times["partial"], times["fp32"] / times["copy"]


def held_out_feed(recipe_path: Path, recipe: dict, original: Path) -> dict:
    """The recipe's held_out dataset's first sample, read by the loader it names."""
    from ortflow.engine.contracts.dataset import Dataset, model_inputs
    from ortflow.engine.contracts.params import fill_defaults
    from ortflow.engine.contracts.registry import DATASETS, installed

    declared = recipe["datasets"]["held_out"]
    loader_cls = installed(DATASETS).get(declared["loader"])
    params = dict(declared.get("with") or {})
    for name in loader_cls.file_params:
        if isinstance(params.get(name), str):
            params[name] = recipe_path.parent / params[name]
    dataset = Dataset(
        "held_out", loader_cls(), fill_defaults(params, loader_cls.params_schema), "", "corpus"
    )
    return next(iter(dataset.feeds(list(model_inputs(original)), limit=1)))
