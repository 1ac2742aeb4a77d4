"""The benchmark init writes: a time budget for a small model, a run count otherwise (engine/starter/timing.py)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ortflow.engine.ort.model_facts import read_model_facts
from ortflow.engine.starter.drafts import Target
from ortflow.engine.starter.proposal import propose_stages
from ortflow.engine.starter.roles import read_roles
from ortflow.engine.starter.timing import BENCHMARK, SMALL_WEIGHTS, benchmark_with
from ortflow.engine.starter.write import evaluation_stages


def _matmul_model(path, rows: int):
    weight = numpy_helper.from_array(np.ones((rows, 64), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path.write_bytes(model.SerializeToString())
    return path


def test_the_rule_reads_the_weight_count():
    assert benchmark_with(SMALL_WEIGHTS) == BENCHMARK and "seconds" not in BENCHMARK
    small = benchmark_with(SMALL_WEIGHTS - 1)
    assert small["seconds"] > 0 and "runs" not in small and small["rounds"] == BENCHMARK["rounds"]


def test_a_small_models_recipe_times_it_for_a_budget_a_larger_ones_for_a_count(tmp_path):
    """A 0.1 ms model timed 30 runs a round (3 ms) had `pick` keep or take INT8 by chance; the written speed stage
    now gives a model under SMALL_WEIGHTS a budget of seconds, and one above it the run count as before."""
    for rows, expect_budget in ((64, True), (SMALL_WEIGHTS // 64 + 1, False)):
        model = _matmul_model(tmp_path / f"m{rows}.onnx", rows)
        roles = read_roles(read_model_facts(model))
        proposal = propose_stages(roles, Target.CPU, real_data=False, min_accuracy=None)
        speed = next(s for s in evaluation_stages(proposal, Target.CPU) if s.uses == "benchmark")
        assert ("seconds" in speed.params) is expect_budget
        assert ("runs" in speed.params) is not expect_budget
        assert any("budget" in line for line in speed.comments) is expect_budget
