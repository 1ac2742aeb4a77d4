"""Quantize stages never hand over a collapsed model as a success, and say where the error entered."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import minilm_model, toy_model, write
from onnx import TensorProto, helper, numpy_helper


def _detector_head(path: Path, anchors: int = 100) -> Path:
    """A detector's output head in miniature (a toy graph for the engine's own logic): one Conv, boxes scaled
    to pixels, class scores through a Sigmoid, both joined by one Concat, as YOLO-style exports do."""
    rng = np.random.default_rng(0)
    constants = {
        "w": rng.standard_normal((8, 8, 1)).astype(np.float32),
        "s0": np.array([0], np.int64),
        "s4": np.array([4], np.int64),
        "s8": np.array([8], np.int64),
        "axis": np.array([1], np.int64),
        "pixels": np.array(100.0, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["feat", "w"], ["h"], name="head_conv"),
        helper.make_node("Slice", ["h", "s0", "s4", "axis"], ["box_raw"], name="box_slice"),
        helper.make_node("Slice", ["h", "s4", "s8", "axis"], ["cls_raw"], name="cls_slice"),
        helper.make_node("Mul", ["box_raw", "pixels"], ["boxes"], name="box_scale"),
        helper.make_node("Sigmoid", ["cls_raw"], ["scores"], name="cls_sigmoid"),
        helper.make_node("Concat", ["boxes", "scores"], ["out"], axis=1, name="head_concat"),
    ]
    return toy_model(
        path,
        nodes,
        [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, 8, anchors])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8, anchors])],
        [numpy_helper.from_array(v, k) for k, v in constants.items()],
    )


def test_a_collapsed_slice_fails_the_stage_naming_the_culprit_and_keeping_it_float_fixes_it(
    project, cli
):
    _detector_head(project / "head.onnx")
    recipe = write(
        project / "recipe.yaml",
        """
        version: 1
        name: head
        inputs:
          model: {path: head.onnx}
        datasets:
          feats: {loader: random, with: {samples: 8, ranges: {feat: [-1, 1]}}}
        stages:
          table: {uses: calibrate, in: {model: inputs.model, data: datasets.feats}}
          naive:
            uses: quantize_static
            in: {model: inputs.model, calibration: table.table, data: datasets.feats}
            with: {avoid_traps: false}
          fixed:
            uses: quantize_static
            in: {model: inputs.model, calibration: table.table, data: datasets.feats}
            with: {avoid_traps: false, nodes_to_exclude: [head_concat]}
          default: {uses: quantize_static, in: {model: inputs.model, calibration: table.table, data: datasets.feats}}
          kept:
            uses: quantize_static
            in: {model: inputs.model, calibration: table.table}
            with: {sanity_check: false, avoid_traps: false}
    """,
    )
    code, out, err = cli("run", recipe, "-k")
    assert code == 3, (out, err)
    line = next(x for x in err.splitlines() if "stage 'naive'" in x)
    assert "4 of 8 channels along axis 1 (4-7) lost their signal" in line
    assert (
        "Where the error enters: head_concat (Concat" in line
    )  # the culprit first, by its nodes_to_exclude name
    measured = {
        s["stage"]: s["metrics"]
        for s in json.loads((project / "out/head/report.json").read_text())["stages"]
    }
    fixed = measured[
        "fixed"
    ]  # the sanity numbers are this machine's: in the run record, not metrics.json
    assert (
        fixed["sanity"]["outputs"]["out"]["problems"] == []
        and fixed["sanity"]["outputs"]["out"]["cosine_mean"] > 0.99
    )
    assert fixed["sanity"]["synthetic_inputs"] is False
    default = json.loads(
        (project / "out/head/default/metrics.json").read_text()
    )  # the trap, seen before quantizing
    assert list(default["traps_kept_float"]["mixed_range_concats"]) == ["head_concat"]
    assert default["traps_kept_float"]["mixed_range_concats"]["head_concat"] > 50
    assert (
        measured["default"]["sanity"]["outputs"]["out"]["cosine_mean"] > 0.99
        and "sanity" not in default
    )
    assert "sanity" not in measured["kept"]  # turned off: the broken model is the user's call


@pytest.mark.e2e  # a real model's search/init end to end: CI's e2e step (README: the everyday suite under 10 min)
def test_quantization_debug_ranks_the_nodes_of_a_real_model(project, cli):
    data = Path(__file__).parent.parent / "recipes" / "data" / "calibration.npz"
    recipe = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: debug
        inputs:
          model: {{path: {minilm_model()}}}
        datasets:
          calib: {{loader: npz, with: {{path: {data}, limit: 8}}}}
        stages:
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.calib}}}}
          int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table, data: datasets.calib}}}}
          debug: {{uses: quantization_debug, in: {{reference: inputs.model, model: int8.model, data: datasets.calib}},
                  with: {{samples: 2, top: 5}}}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, (out, err)
    sanity = next(
        s["metrics"]["sanity"]
        for s in json.loads((project / "out/debug/report.json").read_text())["stages"]
        if s["stage"] == "int8"
    )
    assert sanity["samples"] == 8 and not sanity["synthetic_inputs"]
    assert all(not o["problems"] for o in sanity["outputs"].values())
    assert (
        0.5 < sanity["outputs"]["461"]["cosine_mean"] < 0.999
    )  # the embeddings: measured, not assumed
    report = json.loads((project / "out/debug/debug/debug.json").read_text())
    import onnx

    names = {n.name for n in onnx.load(str(minilm_model()), load_external_data=False).graph.node}
    assert len(report["nodes"]) == 5 and report["nodes_compared"] > 50
    assert all(n["node"] in names for n in report["nodes"])
    jumps = [n["jump_db"] for n in report["nodes"]]
    assert jumps == sorted(jumps, reverse=True) and jumps[0] > 10


def test_layernorm_and_softmax_exported_as_primitive_ops_are_found_and_nothing_else():
    """E[x^2] - E[x]^2 LayerNorm and Exp/ReduceSum/Div softmax between two MatMuls (a toy graph: the graph
    logic only). The MatMuls and the residual Add before the norm are not part of what is kept in float."""
    from ortflow.stages.quantization.traps import find_traps

    make = helper.make_node
    nodes = [
        make("MatMul", ["x", "w1"], ["h"], name="mm1"),
        make("Add", ["h", "x"], ["r"], name="residual"),
        make("ReduceMean", ["r"], ["mean"], name="mean"),
        make("Mul", ["r", "r"], ["sq"], name="square"),
        make("ReduceMean", ["sq"], ["mean_sq"], name="mean_sq"),
        make("Mul", ["mean", "mean"], ["mean2"], name="mean2"),
        make("Sub", ["mean_sq", "mean2"], ["var"], name="var"),
        make("Add", ["var", "eps"], ["var_eps"], name="eps"),
        make("Sqrt", ["var_eps"], ["std"], name="std"),
        make("Sub", ["r", "mean"], ["centred"], name="centre"),
        make("Div", ["centred", "std"], ["normed"], name="normed"),
        make("MatMul", ["normed", "w2"], ["logits"], name="mm2"),
        make("Exp", ["logits"], ["e"], name="exp"),
        make("ReduceSum", ["e"], ["total"], name="total"),
        make("Div", ["e", "total"], ["probs"], name="probs"),
    ]
    found = find_traps(nodes, {}, 50)
    assert found.decomposed == {
        "LayerNorm at std": [
            "centre",
            "eps",
            "mean",
            "mean2",
            "mean_sq",
            "normed",
            "square",
            "std",
            "var",
        ],
        "Softmax at total": ["exp", "probs", "total"],
    }
    assert not {"mm1", "residual", "mm2"} & found.nodes()


def _probability_map(path: Path) -> Path:
    """A segmentation-like head in miniature (a toy graph for the message logic): one Conv, a Sigmoid, a map of
    probabilities (no box coordinates anywhere)."""
    weights = np.random.default_rng(0).standard_normal((8, 8, 1)).astype(np.float32)
    return toy_model(
        path,
        [
            helper.make_node("Conv", ["feat", "w"], ["logits"], name="head_conv"),
            helper.make_node("Sigmoid", ["logits"], ["prob"], name="head_sigmoid"),
        ],
        [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, 8, 100])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 8, 100])],
        [numpy_helper.from_array(weights, "w")],
    )


def test_a_collapsed_probability_map_is_told_as_such_and_the_advice_fits_the_quantized_ops(
    project, cli
):
    """Issue 35: the message spoke of box coordinates on a probability map, and advised quantizing fewer op
    types (`[MatMul, Gemm, Conv]`) where only Conv was quantized, which changes nothing."""
    _probability_map(project / "head.onnx")
    datasets = "feats: {loader: random, with: {samples: 8, ranges: {feat: [-1, 1]}}}"
    table = "table: {uses: calibrate, in: {model: inputs.model, data: datasets.feats}}"
    lines = ["version: 1", "name: map", "inputs:", "  model: {path: head.onnx}", "datasets:"]
    write(
        project / "recipe.yaml",
        "\n".join([*lines, f"  {datasets}", "stages:", f"  {table}"]) + "\n",
    )
    code, out, err = cli("run", project / "recipe.yaml")
    assert code == 0, out + err
    ranges = json.loads((project / "out/map/table/calibration.json").read_text())
    logits = ranges["data"]["logits"]
    logits["lowest"], logits["highest"] = (
        -1000.0,
        1000.0,
    )  # one inflated range: every logit rounds to 0
    (project / "planted.json").write_text(json.dumps(ranges))
    flow = "{model: inputs.model, calibration: inputs.planted, data: datasets.feats}"
    stages = [
        f"  conv_only: {{uses: quantize_static, in: {flow}, with: {{op_types_to_quantize: [Conv]}}}}",
        f"  all_ops: {{uses: quantize_static, in: {flow}}}",
    ]
    inputs = [*lines[:4], "  planted: {path: planted.json}", "datasets:", f"  {datasets}"]
    write(project / "recipe.yaml", "\n".join([*inputs, "stages:", *stages]) + "\n")
    code, out, err = cli("run", project / "recipe.yaml", "-k")
    assert code == 3, out + err
    conv_only = next(x for x in err.splitlines() if "stage 'conv_only'" in x)
    assert "lost their signal" in conv_only and "probabilities" in conv_only, conv_only
    assert "box coordinates" not in conv_only
    assert (
        "op_types_to_quantize" not in conv_only
    )  # only Conv was quantized: fewer op types is no fix
    all_ops = next(x for x in err.splitlines() if "stage 'all_ops'" in x)
    assert "quantize fewer op types (op_types_to_quantize: [Conv])" in all_ops, all_ops
