"""The NVIDIA path on whatever machine runs the tests: TensorRT and CUDA stages fail clearly (or skip, when
optional) without a usable GPU, engines are keyed to the GPU they were built for, node placement is reported,
and on a machine with TensorRT the engine really builds and loads from its EP-context model."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import minilm_model, write

from ortflow.engine.leaves import environment
from ortflow.engine.ort.providers import resolve

TRT_USABLE = (
    "TensorrtExecutionProvider"
    in resolve(
        ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    ).usable
)
needs_tensorrt = pytest.mark.skipif(
    not TRT_USABLE,
    reason="no usable TensorRT provider (no NVIDIA GPU, driver or "
    "TensorRT libraries on this machine)",
)
PROFILES = (
    "profiles: {input_ids: {min: [1, 16], opt: [1, 128], max: [2, 128]}, "
    "attention_mask: {min: [1, 16], opt: [1, 128], max: [2, 128]}}"
)


def trt_recipe(project, optional: bool, extra: str = ""):
    shutil.copy(minilm_model(), project / "model.onnx")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: trt
        inputs:
          model: model.onnx
        datasets:
          feeds: {{loader: random, with: {{samples: 4, dims: {{batch_size: 1, sequence_length: 128}},
                                          ranges: {{input_ids: [0, 30000], attention_mask: [1, 2]}}}}}}
        stages:
          engine:
            uses: tensorrt_engine
            in: {{model: inputs.model}}
            with: {{fp16: true, {PROFILES}{extra}}}
            optional: {str(optional).lower()}
          timed:
            uses: benchmark
            in: {{models: [engine.context_model], data: datasets.feeds}}
            with: {{providers: [TensorrtExecutionProvider, CUDAExecutionProvider, CPUExecutionProvider], runs: 20, rounds: 2}}
            optional: true
          cpu:
            uses: benchmark
            in: {{models: [inputs.model], data: datasets.feeds}}
            with: {{runs: 4, rounds: 2, warmup: 1, profile: true, io_binding: [false, true], peak_memory: false}}
    """,
    )


@pytest.mark.skipif(TRT_USABLE, reason="TensorRT is usable here: nothing is missing to report")
def test_required_tensorrt_stage_fails_with_what_is_missing(project, cli):
    code, out, err = cli("run", trt_recipe(project, optional=False))
    assert code == 1
    assert (
        "stage 'engine' (tensorrt_engine) failed: building TensorRT engines needs TensorrtExecutionProvider"
        in err
    )
    assert "nvidia-smi is missing" in err or "libnvinfer" in err or "did not load" in err


@pytest.mark.skipif(TRT_USABLE, reason="TensorRT is usable here: nothing would be skipped")
def test_optional_tensorrt_stage_is_skipped_with_its_dependents_and_the_rest_runs(project, cli):
    code, out, err = cli("run", trt_recipe(project, optional=True))
    assert code == 0, out + err
    report = json.loads((project / "out/trt/report.json").read_text())
    status = {s["stage"]: (s["status"], s["error"]) for s in report["stages"]}
    assert status["engine"][0] == "skipped" and "TensorrtExecutionProvider" in status["engine"][1]
    assert status["timed"] == ("skipped", "upstream 'engine' skipped")
    assert status["cpu"][0] == "ran"
    # The CPU benchmark measured with and without IO binding, and says where every node ran.
    results = json.loads((project / "out/trt/cpu/benchmark.json").read_text())
    assert sorted(r["io_binding"] for r in results["results"]) == [False, True]
    placement = results["profiles"]["model"]["placement"]
    assert placement["requested"] == "CPUExecutionProvider" and placement["fallback_nodes"] == 0
    assert placement["nodes_by_provider"]["CPUExecutionProvider"] > 20


def test_engines_are_keyed_to_the_gpu_tensorrt_and_cuda(project, cli, monkeypatch):
    from ortflow.engine.pipeline import Workspace, plan

    recipe = trt_recipe(project, optional=True)

    def engine_key(**machine: str) -> str:
        for name, value in machine.items():
            monkeypatch.setitem(environment.FACTS, name, lambda value=value: value)
        environment.fact.cache_clear()
        try:
            return next(p.key for p in plan(Workspace.open(recipe)) if p.name == "engine")
        finally:
            environment.fact.cache_clear()

    h100 = engine_key(
        gpu="NVIDIA H100 80GB HBM3, 9.0, 550.54",
        tensorrt="tensorrt 10.4.0",
        cuda="cuda runtime 12.4",
    )
    assert (
        engine_key(
            gpu="NVIDIA A100-SXM4-40GB, 8.0, 550.54",
            tensorrt="tensorrt 10.4.0",
            cuda="cuda runtime 12.4",
        )
        != h100
    )
    assert (
        engine_key(
            gpu="NVIDIA H100 80GB HBM3, 9.0, 550.54",
            tensorrt="tensorrt 10.5.0",
            cuda="cuda runtime 12.4",
        )
        != h100
    )
    assert (
        engine_key(
            gpu="NVIDIA H100 80GB HBM3, 9.0, 550.54",
            tensorrt="tensorrt 10.4.0",
            cuda="cuda runtime 12.6",
        )
        != h100
    )
    assert (
        engine_key(
            gpu="NVIDIA H100 80GB HBM3, 9.0, 550.54",
            tensorrt="tensorrt 10.4.0",
            cuda="cuda runtime 12.4",
        )
        == h100
    )


@pytest.mark.parametrize(
    "profile, message",
    [
        ("{min: [1, 16], opt: [1, 128], max: [1, 64]}", "min <= opt <= max"),
        ("{min: [1], opt: [1, 128], max: [1, 128]}", "same rank"),
    ],
)
def test_bad_shape_profiles_are_refused_before_anything_runs(project, cli, profile, message):
    recipe = trt_recipe(project, optional=False)
    write(
        recipe,
        recipe.read_text().replace(
            "input_ids: {min: [1, 16], opt: [1, 128], max: [2, 128]}", f"input_ids: {profile}"
        ),
    )
    code, _, err = cli("validate", recipe)
    assert code == 2 and message in err and "profiles.input_ids" in err


@needs_tensorrt
def test_engine_builds_and_loads_from_its_ep_context_model(project, cli):
    code, out, err = cli(
        "run", trt_recipe(project, optional=False, extra=", max_fallback_nodes: 20")
    )
    assert code == 0, out + err
    metrics = json.loads((project / "out/trt/engine/metrics.json").read_text())
    assert metrics["engines"] and metrics["placement"]["nodes_by_provider"].get(
        "TensorrtExecutionProvider"
    )
    assert (project / "out/trt/engine/model_ctx.onnx").exists()
    timed = json.loads((project / "out/trt/timed/benchmark.json").read_text())
    assert timed["results"][0]["providers_used"][0] == "TensorrtExecutionProvider"


def test_calibration_table_is_converted_to_symmetric_tensorrt_bounds(tmp_path):
    """TensorRT reads one bound per tensor: an asymmetric range must keep its larger magnitude, not be clipped."""
    import numpy as np
    from onnxruntime.quantization.calibrate import (
        CalibrationMethod,
        TensorData,
        TensorsData,
        save_tensors_data,
    )

    from ortflow.stages.tensorrt_engine import _trt_calibration

    table = tmp_path / "table.json"
    save_tensors_data(
        TensorsData(
            CalibrationMethod.MinMax,
            {
                "skewed": TensorData(lowest=np.float32(-8.0), highest=np.float32(1.0)),
                "negative": TensorData(lowest=np.float32(-8.0), highest=np.float32(-0.5)),
            },
        ),
        str(table),
    )
    options = _trt_calibration(table, tmp_path)
    assert options["trt_int8_calibration_table_name"] == "calibration.flatbuffers"
    assert (tmp_path / "calibration.flatbuffers").stat().st_size > 0
    bounds = json.loads((tmp_path / "calibration.json").read_text())
    for name in ("skewed", "negative"):
        assert abs(float(np.asarray(bounds[name]["highest"]).max()) - 8.0) < 1e-6
        assert abs(float(np.asarray(bounds[name]["lowest"]).min()) + 8.0) < 1e-6


def test_the_provider_options_come_from_the_typed_settings_as_from_the_keys(tmp_path):
    """TensorrtSettings stands for the params (no GPU needed): a workspace left out is TensorRT's own (no
    trt_max_workspace_size), one given is in bytes; profiles and extra options reach the provider as written."""
    from ortflow.api import settings_of
    from ortflow.engine.contracts.params import fill_defaults
    from ortflow.stages.tensorrt_engine import TensorrtEngine, TensorrtSettings

    def options(**given):
        params = fill_defaults(given, TensorrtEngine.params_schema)
        read = settings_of(TensorrtSettings, params)
        return TensorrtEngine._provider_options(read, tmp_path, None, tmp_path / "m.onnx")

    plain = options()
    assert "trt_max_workspace_size" not in plain and plain["trt_builder_optimization_level"] == 3
    shaped = options(
        fp16=True,
        workspace_mb=64,
        profiles={"ids": {"min": [1, 4], "opt": [2, 8], "max": [4, 16]}},
        options={"trt_layer_norm_fp32_fallback": True},
    )
    assert (
        shaped["trt_max_workspace_size"] == 64 * 1024 * 1024 and shaped["trt_fp16_enable"] is True
    )
    assert shaped["trt_profile_opt_shapes"] == "ids:2x8" and shaped["trt_layer_norm_fp32_fallback"]
