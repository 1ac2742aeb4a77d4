"""convert_float16 finds the nodes float16 cannot hold by running the float model on real samples: magika's
classifier computes its LayerNorm as E[x^2] - E[x]^2, and the sum of squares reaches ~1.9e5, past float16's
65504 (inf there, then NaN on a GPU)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import write

RECIPES = Path(__file__).parent.parent / "recipes"


def test_nodes_past_float16_range_are_found_on_real_data_and_kept_float32(project, cli):
    features = RECIPES / "data" / "magika_bytes.py"
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: half
        inputs:
          model: {{package: magika, file: magika/models/standard_v3_3/model.onnx}}
        datasets:
          files: {{loader: python, with: {{path: {features}, function: feeds, data: {RECIPES / "data/files/calibration"}}}}}
          held_out: {{loader: python, with: {{path: {features}, function: feeds, data: {RECIPES / "data/files/held-out"}}}}}
        stages:
          fp16: {{uses: convert_float16, in: {{model: inputs.model, data: datasets.files}}}}
          accuracy:
            uses: validate_accuracy
            in: {{reference: inputs.model, candidates: [fp16.model], data: datasets.held_out}}
            with: {{metrics: {{exact: {{outputs: [target_label], argmax_axis: -1}}}}, min: {{samples_unchanged: 0.98}}}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    kept = json.loads((project / "out/half/fp16/metrics.json").read_text())[
        "kept_float32_for_range"
    ]
    assert any(node.endswith("LayerNorm_1/Sum_1") for node in kept), kept
    assert all(peak > 65504 / 2 for peak in kept.values()) and "nodes kept float32" in out
