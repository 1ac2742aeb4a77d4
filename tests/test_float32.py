"""convert_float32 and init's float32 source for float16 models on a CPU (issue 41): paraphrase-MiniLM-L3-v2 made
float16 by ORT's own converter (float16 weights, Casts to float16 at its float32 boundary: the float16 islands
a converter leaves), back to float32 with no float16 left and the outputs of the float32 original; init's
recipe for it converts first and builds INT8 from the float32 copy. The real float16 model of the corpus
(digits-gray, a Keras LSTM that casts to float16 inside a Loop) is in tests/test_corpus_float32.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import yaml
from conftest import minilm_model, write

from ortflow.engine.ort.model_facts import read_model_facts
from ortflow.stages.graphs.float32 import float16_count, to_float32

VALIDATION = Path(__file__).parent.parent / "recipes" / "data" / "validation.npz"


def _half(folder: Path, keep_io_types: bool) -> Path:
    """MiniLM in float16, as onnxruntime.transformers.float16 writes it for a GPU."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    model = convert_float_to_float16(onnx.load(str(minilm_model())), keep_io_types=keep_io_types)
    path = folder / f"minilm-half-{keep_io_types}.onnx"
    onnx.save(model, str(path))
    return path


def _outputs(path: Path, samples: int = 4) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    data = np.load(VALIDATION)
    names = [i.name for i in session.get_inputs()]
    floats = [
        o.name for o in session.get_outputs() if "float" in o.type
    ]  # not its token ids passed on
    return [
        out
        for i in range(samples)
        for out in session.run(floats, {n: data[n][i : i + 1] for n in names})
    ]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_float16_model_back_in_float32_holds_no_float16_and_the_original_outputs(tmp_path):
    half = onnx.load(str(_half(tmp_path, keep_io_types=True)))
    assert float16_count(half) > 0
    counts = to_float32(half)
    assert float16_count(half) == 0 and counts.weights > 0 and counts.casts > 0
    onnx.checker.check_model(half)
    path = tmp_path / "float32.onnx"
    onnx.save(half, str(path))
    for got, wanted in zip(_outputs(path), _outputs(minilm_model())):
        assert got.dtype == np.float32 and _cosine(got, wanted) > 0.999


def test_float16_outputs_keep_their_type_behind_a_cast(tmp_path):
    half = _half(tmp_path, keep_io_types=False)  # the token ids stay int64; the output is float16
    model = onnx.load(str(half))
    counts = to_float32(model)
    assert counts.boundary == [
        o.name for o in model.graph.output if o.type.tensor_type.elem_type == 10
    ]
    # the float16 left: each such output's declared type and the Cast that makes it
    assert model.graph.node[-1].op_type == "Cast" and float16_count(model) == 2 * len(
        counts.boundary
    )
    path = tmp_path / "float32.onnx"
    onnx.save(model, str(path))
    for got, wanted in zip(_outputs(path), _outputs(half)):
        assert got.dtype == np.float16 and _cosine(got, wanted) > 0.999


def _branches(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    found = []
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                found += [attribute.g, *_branches(attribute.g)]
    return found


def test_float16_inside_if_branches_is_converted_too(tmp_path):
    """Silero VAD's default file (its network inside an If on `sr`), made float16 by ORT's converter: the
    branches' Constants and Casts are float32 again, and the outputs match the float32 original's on real
    held-out chunks."""
    from importlib.metadata import distribution

    from onnxruntime.transformers.float16 import convert_float_to_float16

    dist = distribution("silero-vad")
    source = Path(dist.locate_file("silero_vad/data/silero_vad.onnx"))
    model = convert_float_to_float16(onnx.load(str(source)), keep_io_types=True)
    assert any(float16_count(_as_model(b)) for b in _branches(model.graph))
    to_float32(model)
    assert _branches(model.graph) and not any(
        float16_count(_as_model(b)) for b in _branches(model.graph)
    )
    path = tmp_path / "vad.onnx"
    onnx.save(model, str(path))
    chunks = np.load(Path(__file__).parent.parent / "recipes/data/audio/vad-held-out.npz")
    sessions = [
        ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (source, path)
    ]
    for i in range(4):
        feed = {
            "input": chunks["input"][i : i + 1],
            "state": chunks["state"][i][:, None, :],
            "sr": np.array(16000, np.int64),
        }
        wanted, got = (s.run(None, feed) for s in sessions)
        assert all(np.abs(w - g).max() < 1e-2 for w, g in zip(wanted, got))


def _as_model(graph: onnx.GraphProto) -> onnx.ModelProto:
    return onnx.helper.make_model(graph)


RECIPE = """
version: 1
name: up
inputs:
  model: {path: MODEL}
datasets:
  text: {loader: npz, with: {path: DATA, limit: 8}}
stages:
  fp32: {uses: convert_float32, in: {model: inputs.model, data: datasets.text}, with: {samples: 4}}
"""


def _recipe(project: Path, model: Path) -> Path:
    text = RECIPE.replace("MODEL", str(model)).replace("DATA", str(VALIDATION))
    return write(project / "up.yaml", text)


def test_the_stage_checks_the_float32_model_on_real_data(project, cli):
    code, out, err = cli("run", _recipe(project, _half(project, keep_io_types=True)))
    assert code == 0, out + err
    metrics = json.loads((project / "out/up/fp32/metrics.json").read_text())
    assert metrics["check"]["data"] == "real" and metrics["check"]["feeds"] == 4
    assert metrics["converted"]["weights"] > 0 and metrics["check"]["max_abs"] < 1e-2
    assert float16_count(onnx.load(str(project / "out/up/fp32/model.onnx"))) == 0


def test_a_model_without_float16_is_refused_saying_so(project, cli):
    code, out, err = cli("run", _recipe(project, minilm_model()))
    assert code != 0 and "holds no float16 tensor" in out + err, out + err


def test_init_converts_a_float16_model_first_and_builds_int8_from_the_copy(project, cli):
    half = _half(project, keep_io_types=True)
    assert (
        read_model_facts(half).float16_parts > 0
        and read_model_facts(minilm_model()).float16_parts == 0
    )
    recipe = project / "half.yaml"
    code, out, err = cli("init", half, "-o", recipe)
    assert code == 0, out + err
    stages = yaml.safe_load(recipe.read_text())["stages"]
    assert stages["fp32"]["uses"] == "convert_float32" and "optional" not in stages["fp32"]
    int8 = [s for s in stages.values() if s["uses"].startswith("quantize_")]
    assert int8 and all(s["in"]["model"] in ("fp32.model", "fused.model") for s in int8)
    assert (
        stages["fused"]["in"]["model"] == "fp32.model"
    )  # the fusion too: nothing builds on float16
    assert stages["pick"]["in"]["models"][:2] == ["inputs.model", "fp32.model"]
    code, out, err = cli("validate", recipe)
    assert code == 0, out + err


def test_init_leaves_a_float32_model_as_it_was(project, cli):
    recipe = project / "plain.yaml"
    code, out, err = cli("init", minilm_model(), "-o", recipe)
    assert code == 0, out + err
    assert "fp32" not in yaml.safe_load(recipe.read_text())["stages"]
