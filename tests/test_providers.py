"""Provider resolution tells the truth on this machine, and optional stages skip instead of failing."""

from __future__ import annotations

import shutil

import onnxruntime as ort
import pytest
from conftest import minilm_model, write

from ortflow.engine.leaves.errors import StageError
from ortflow.engine.ort.providers import resolve

GPU_USABLE = (
    "CUDAExecutionProvider" in resolve(["CUDAExecutionProvider", "CPUExecutionProvider"]).usable
)


def test_listed_is_not_usable():
    check = resolve(["CUDAExecutionProvider", "TensorrtExecutionProvider", "CPUExecutionProvider"])
    assert "CPUExecutionProvider" in check.usable
    listed = set(ort.get_available_providers())
    for provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider"):
        if provider in check.usable:
            continue
        # The GPU wheel may list it; the session did not get it, and the reason says what to install.
        assert provider in check.missing and check.missing[provider]
        if provider in listed:
            assert "NVIDIA" in check.missing[provider] or "install" in check.missing[provider]
    with pytest.raises(StageError, match="unknown execution provider CUDAExecutionProviderr"):
        resolve(["CUDAExecutionProviderr"])


@pytest.mark.skipif(
    GPU_USABLE, reason="a usable CUDA device is present: nothing is missing to report"
)
def test_required_gpu_stage_fails_and_optional_one_is_skipped_with_its_dependents(project, cli):
    shutil.copy(minilm_model(), project / "model.onnx")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: gpu
        inputs:
          model: model.onnx
        stages:
          gpu_opt:
            uses: graph_optimization
            in: {model: inputs.model}
            with: {providers: [CUDAExecutionProvider, CPUExecutionProvider]}
            optional: true
          after_gpu: {uses: graph_optimization, in: {model: gpu_opt.model}}
          cpu_opt: {uses: graph_optimization, in: {model: inputs.model}}
    """,
    )
    code, out, err = cli("run", path)
    assert code == 0, err
    import json

    report = json.loads((project / "out/gpu/report.json").read_text())
    status = {s["stage"]: (s["status"], s["error"]) for s in report["stages"]}
    assert status["gpu_opt"][0] == "skipped" and "optional stage skipped" in status["gpu_opt"][1]
    assert "CUDAExecutionProvider" in status["gpu_opt"][1]
    assert (
        status["after_gpu"] == ("skipped", "upstream 'gpu_opt' skipped")
        and status["cpu_opt"][0] == "ran"
    )
    path.write_text(path.read_text().replace("    optional: true\n", ""))
    code, _, err = cli("run", path)
    assert (
        code == 1
        and "stage 'gpu_opt' (graph_optimization) failed: optimizing for these providers needs"
        in err
    )
