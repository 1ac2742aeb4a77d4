"""The measuring stages read their parameters typed end to end (issue 43): benchmark, validate_accuracy and the
model-making stages are SettingsStages whose hooks receive their settings, the measurement helpers (output
comparison, gates, session settings) take typed values instead of the parameters by key, and the built-in
metrics parse their `with:` block once into a settings dataclass that stands for their params_schema."""

from __future__ import annotations

import numpy as np
import pytest

from ortflow.api import Bounds, KnownMetrics, SettingsStage, metric_type, settings_problems
from ortflow.engine.contracts.params import KEYED_BUILTINS
from ortflow.engine.contracts.registry import installed_stages
from ortflow.stages.measurement.accuracy_gates import gate_failures
from ortflow.stages.measurement.accuracy_settings import AccuracySettings
from ortflow.stages.measurement.benchmark_settings import BenchmarkSettings, SessionConfig
from ortflow.stages.measurement.cuda_graph import session_settings
from ortflow.stages.measurement.output_comparison import compare

TYPED = (
    "benchmark",
    "validate_accuracy",
    "export",
    "specialize",
    "select",
    "tensorrt_engine",
    "transformer_fusion",
    "graph_optimization",
    "convert_float32",
    "quantization_debug",
)


@pytest.mark.parametrize("name", TYPED)
def test_a_measuring_or_model_making_stage_is_a_settings_stage_off_the_keyed_list(name):
    stage_cls = installed_stages().get(name)
    assert issubclass(stage_cls, SettingsStage) and stage_cls.settings is not None
    assert name not in KEYED_BUILTINS  # a read of ctx.params by key would now warn


def test_benchmark_and_validate_accuracy_hooks_judge_their_settings():
    benchmark, accuracy = (
        installed_stages().get("benchmark")(),
        installed_stages().get("validate_accuracy")(),
    )
    assert benchmark.problems(BenchmarkSettings(runs=2, rounds=5)) == [
        "runs (2) must be at least rounds (5)"
    ]
    assert benchmark.problems(BenchmarkSettings(runs=2, rounds=5, seconds=1.0)) == []
    problems = accuracy.problems(AccuracySettings(min={"f1_macro": 0.9}))
    assert problems == [
        "gates on accuracy or f1_macro need label_output (and a dataset with labels)"
    ]
    known = accuracy.metrics_known(AccuracySettings(), {})
    assert known is not None and "cosine_mean" in known
    wrong = accuracy.metric_problems(
        AccuracySettings(min={"cosine_meen": 0.99}), KnownMetrics(own=known)
    )
    assert wrong == ["min: no metric 'cosine_meen' — did you mean 'cosine_mean'?"]


def test_the_output_comparison_pools_by_the_typed_settings():
    """Masked mean pooling reads the mask input the settings name: a candidate that differs only where the
    mask is 0 is identical after pooling (cosine 1), and not without pooling."""
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((2, 4, 8)).astype(np.float32)
    cand = ref.copy()
    cand[:, 3] += 5.0  # the last position, masked out below
    feed = {"mask": np.array([[1, 1, 1, 0], [1, 1, 1, 0]], dtype=np.int64)}
    pooled = compare(
        [ref], [cand], [feed], AccuracySettings(pooling="masked_mean", mask_input="mask")
    )
    plain = compare([ref], [cand], [feed], AccuracySettings())
    assert pooled["cosine_mean"] == pytest.approx(1.0)
    assert plain["cosine_mean"] < 0.99
    assert pooled["max_abs"] == pytest.approx(5.0)  # errors are measured before pooling
    assert (
        compare([ref], [cand], [feed], AccuracySettings(top_k=1))["topk_agreement"]
        == (compare([ref], [cand], [feed], AccuracySettings())["top1_agreement"])
    )


def test_gates_are_judged_on_bounds():
    counted = {"int8": {"cosine_mean": (0.95, "out"), "max_abs": (0.2, "out")}}
    failures = gate_failures(counted, Bounds({"cosine_mean": 0.99}, {"max_abs": 0.1}))
    assert failures == ["int8 out: cosine_mean 0.95 < min 0.99", "int8 out: max_abs 0.2 > max 0.1"]
    assert gate_failures(counted, Bounds({"cosine_mean": 0.9}, {})) == []


def test_a_sweep_point_records_its_session_with_the_cuda_graph_option():
    settings = BenchmarkSettings(
        providers=({"name": "CUDAExecutionProvider", "options": {"device_id": 1}},),
        optimization_level="extended",
        inter_op_threads=2,
    )
    graphed = session_settings(SessionConfig.of(settings, io_binding=True, cuda_graph=True), 4)
    assert graphed.providers == [
        {"name": "CUDAExecutionProvider", "options": {"device_id": 1, "enable_cuda_graph": "1"}}
    ]
    assert (graphed.optimization_level, graphed.intra_op_threads, graphed.inter_op_threads) == (
        "extended",
        4,
        2,
    )
    plain = session_settings(SessionConfig.of(settings), 4)
    assert plain.providers == [{"name": "CUDAExecutionProvider", "options": {"device_id": 1}}]
    assert not plain.io_binding and not plain.cuda_graph


@pytest.mark.parametrize("name", ["exact", "dense_map", "detection"])
def test_a_built_in_metrics_settings_stand_for_its_params_schema(name):
    cls = metric_type(name)
    assert settings_problems(cls.settings, cls.params_schema) == []


def test_a_metric_parses_its_block_once_into_its_settings():
    exact = metric_type("exact")()
    both = {"outputs": ["tags"], "argmax_axis": -1, "threshold": 0.5}
    assert exact.check(both) == ["set one of argmax_axis and threshold, not both"]
    assert exact.reads({"outputs": ["tags", "mask"]}) == ("tags", "mask")
    labels = [np.array([[1, 2, 3]]), np.array([[1, 2, 3]])]
    changed = [np.array([[1, 2, 3]]), np.array([[1, 0, 3]])]
    values = exact.compute({"tags": labels}, {"tags": changed}, [{}, {}], {"outputs": ["tags"]})
    assert values == {"label_agreement": pytest.approx(5 / 6), "samples_unchanged": 0.5}
