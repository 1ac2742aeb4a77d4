"""A convolution's batch norm and scalar scale and shift folded into its weights when a graph is folded
(stages/graphs/conv_affine.py, issue 41): PP-LCNetV3's "learnable affine blocks" (Mul then Add of a scalar around
each activation), which ORT runs as separate passes. A toy block for the rules and the guard, PP-OCRv4's recogniser
for the real case (28 -> 15.5 ms a line in float32, bench/README.md)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import corpus_file
from onnx import TensorProto, helper, numpy_helper

from ortflow.engine.ort.activation_facts import conv_scalings
from ortflow.stages.graphs.specialization import fold

RNG = np.random.default_rng(0)


def _array(*shape: int, low: float = -1.0) -> np.ndarray:
    return RNG.uniform(low, 1.0, size=shape).astype(np.float32)


def _block(scale_shape: tuple[int, ...] = (1,)) -> onnx.ModelProto:
    """x -> 3x3 Conv -> BatchNorm -> Mul(s, .) -> Add(., b) -> Relu -> Mul(s2, .) -> Add(., b2) -> 1x1 Conv, as
    paddle2onnx writes a PP-LCNetV3 block (the scalar first in the Mul)."""
    weights = {
        "w": _array(4, 3, 3, 3),
        "gamma": _array(4, low=0.5),
        "beta": _array(4),
        "mean": _array(4),
        "var": _array(4, low=0.5),
        "s": np.full(scale_shape, 1.7, np.float32),
        "b": np.full(scale_shape, -0.3, np.float32),
        "s2": np.full(scale_shape, 0.8, np.float32),
        "b2": np.full(scale_shape, 0.25, np.float32),
        "w2": _array(5, 4, 1, 1),
        "c2": _array(5),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["h"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["n"]),
        helper.make_node("Mul", ["s", "n"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["r"]),
        helper.make_node("Mul", ["s2", "r"], ["m2"]),
        helper.make_node("Add", ["m2", "b2"], ["a2"]),
        helper.make_node("Conv", ["a2", "w2", "c2"], ["y"], pads=[0, 0, 0, 0]),
    ]
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5, 8, 8])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_the_block_goes_into_the_convolutions():
    original = _block()
    assert conv_scalings(original.graph) == 1  # what init counts to write the spec stage
    folded = fold(original)
    assert [n.op_type for n in folded.graph.node] == ["Conv", "Relu", "Conv"]
    x = _array(1, 3, 8, 8)
    np.testing.assert_allclose(_run(folded, x), _run(original, x), rtol=1e-5, atol=1e-5)


def test_a_scale_that_would_widen_the_bias_is_left_alone():
    """A (1, 1, 1, 1) scale is one value, but folded as it is into a (C,) bias it makes a (1, 1, 1, C) bias ORT
    refuses: the model keeps its Mul and Add rather than become one ORT cannot load."""
    original = _block((1, 1, 1, 1))
    folded = fold(original)
    assert {"Mul", "Add"} <= {n.op_type for n in folded.graph.node}
    x = _array(1, 3, 8, 8)
    np.testing.assert_allclose(_run(folded, x), _run(original, x), rtol=1e-5, atol=1e-5)


@pytest.mark.corpus  # rapidocr-onnxruntime is a corpus wheel
def test_ppocr_v4_recogniser_loses_its_affine_nodes_and_keeps_its_text():
    path = corpus_file(
        "rapidocr-onnxruntime", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
    )
    original = onnx.load(str(path))
    assert conv_scalings(original.graph) == 28
    folded = fold(original)
    before = [n.op_type for n in original.graph.node]
    after = [n.op_type for n in folded.graph.node]
    assert after.count("BatchNormalization") == 0 < before.count("BatchNormalization")
    assert after.count("Mul") + after.count("Add") <= before.count("Mul") + before.count("Add") - 56
    x = np.random.default_rng(3).uniform(-1, 1, size=(1, 3, 48, 320)).astype(np.float32)
    reference, result = _run(original, x), _run(folded, x)
    np.testing.assert_allclose(result, reference, atol=1e-4)
    assert (result.argmax(-1) == reference.argmax(-1)).all()


def test_init_folds_the_blocks_of_a_model_of_any_size(tmp_path):
    """The blocks are counted (ModelFacts.conv_scalings) and, with real data, init writes the spec stage for them
    above the 1,000,000 weights under which only shape arithmetic gets it (PP-OCRv4's recogniser, 2.7M weights)."""
    from ortflow.engine.ort.model_facts import read_model_facts
    from ortflow.engine.starter.drafts import Target
    from ortflow.engine.starter.proposal import propose_stages
    from ortflow.engine.starter.roles import read_roles
    from ortflow.engine.starter.timing import SMALL_WEIGHTS

    model = _block()
    model.graph.initializer.append(
        numpy_helper.from_array(np.zeros(SMALL_WEIGHTS, np.float32), "unused_weights")
    )
    onnx.save(model, tmp_path / "block.onnx")
    facts = read_model_facts(tmp_path / "block.onnx")
    assert facts.conv_scalings == 1 and facts.hard_chains == 0
    assert facts.weight_total > SMALL_WEIGHTS
    candidates = propose_stages(read_roles(facts), Target.CPU, True, None).candidates
    assert candidates[:2] == ["inputs.model", "spec.model"], candidates
