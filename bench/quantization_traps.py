"""Quantization traps on two real models nobody here tuned for: naive, ortflow's default, and quantize_search.

- NudeNet's YOLOv8n detector (`nudenet` wheel): the output Concat joins pixel boxes and sigmoid scores.
- magika's file-type classifier (`magika` wheel): LayerNorm and softmax spelled as primitive ops.

Builds, with `engine run` on a scratch recipe, for each model: static QDQ of every op type with the trap
detection off (naive, the sanity check off so the model can be measured), the same with the sanity check on
(what a user gets: refused or not), the default `quantize_static` (traps kept in float), and a
`quantize_search` from naive settings with a task-metric target (det_f1 >= 0.8 on a group photo; files
whose type is unchanged >= 0.96), printing how many candidates it built and at which probe it found the
culprit. Then, in this process, times fp32 and each model interleaved in rounds (1 thread, median per round)
and checks the task metric on held-out data: the detector's recall of the float model's detections on
held-out photos, the classifier's top-1 agreement on held-out files of 25 kinds.

    python bench/quantization_traps.py
    python bench/quantization_traps.py --quick   # the classifier alone, a search of 2 candidates, 4 held-out files
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import textwrap
from importlib.metadata import distribution
from pathlib import Path

import onnxruntime as ort
import quick
from interleaved import latency_ms, sessions

REPO = Path(__file__).resolve().parent.parent
PHOTOS = REPO / "recipes" / "data" / "images" / "photos"
DATA = REPO / "tests" / "data"

RECIPE = """
version: 1
name: traps
inputs:
  detector: {{package: nudenet, file: nudenet/320n.onnx}}
  classifier: {{package: magika, file: magika/models/standard_v3_3/model.onnx}}
datasets:
  photos: {{loader: images, with: {{path: {photos}, size: [320, 320], resize: letterbox}}}}
  files: {{loader: python, with: {{path: {features}, function: feeds, data: {recipes}}}}}
  people: {{loader: images, with: {{path: {people}, size: [320, 320], resize: letterbox}}}}
stages:
{stages}
"""
STAGES = """
  {name}_table: {{uses: calibrate, in: {{model: inputs.{name}, data: datasets.{data}}}}}
  {name}_naive:
    uses: quantize_static
    in: {{model: inputs.{name}, calibration: {name}_table.table}}
    with: {{avoid_traps: false, sanity_check: false}}
  {name}_checked:
    uses: quantize_static
    in: {{model: inputs.{name}, calibration: {name}_table.table, data: datasets.{data}}}
    with: {{avoid_traps: false}}
  {name}_default: {{uses: quantize_static, in: {{model: inputs.{name}, calibration: {name}_table.table, data: datasets.{data}}}}}
  {name}_search:
    uses: quantize_search
    in: {{reference: inputs.{name}, models: [inputs.{name}], data: datasets.{selection}, calibrations: [{name}_table.table]}}
    with:
      families: [static]
      static: {{avoid_traps: false, per_channel: {per_channel}, op_types_to_quantize: [[], [Conv, Gemm, MatMul]]}}
      accuracy: {{metrics: {metric}, min: {target}}}
      benchmark: {{runs: {runs}, rounds: {rounds}, peak_memory: false}}
      max_candidates: {max_candidates}
"""
FULL = {
    "models": (("detector", "photos"), ("classifier", "files")),
    "per_channel": "[false, true]",
    "runs": 20,
    "rounds": 2,
    "max_candidates": 80,
    "held_out": None,
    "timing": (7, 20),
}
# --quick: the classifier alone; its 2 grid candidates and at most 2 repair probes (a 3-run benchmark is noise,
# and when it makes the failing candidate look fastest the repair probes node after node: 68 candidates, 4 minutes)
QUICK = {
    "models": (("classifier", "files"),),
    "per_channel": "false",
    "runs": 3,
    "rounds": 1,
    "max_candidates": 4,
    "held_out": 4,
    "timing": (1, 3),
}
SEARCHES = {  # selection data, task metric and target of each model's search
    "detector": ("people", "{detection: {output: output0}}", "{det_f1: 0.8}"),
    "classifier": (
        "files",
        "{exact: {outputs: [target_label], argmax_axis: -1}}",
        "{samples_unchanged: 0.96}",
    ),
}


def _module(name: str):
    folder = DATA if (DATA / f"{name}.py").exists() else REPO / "recipes" / "data"
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(scratch: Path, mode: dict = FULL) -> dict[str, str]:
    """Runs the recipe; returns each checked stage's verdict (the first line of its error, or 'ran')."""
    stages = "".join(
        STAGES.format(
            name=n,
            data=d,
            selection=SEARCHES[n][0],
            metric=SEARCHES[n][1],
            target=SEARCHES[n][2],
            per_channel=mode["per_channel"],
            runs=mode["runs"],
            rounds=mode["rounds"],
            max_candidates=mode["max_candidates"],
        )
        for n, d in mode["models"]
    )
    recipe = scratch / "traps.yaml"
    recipe.write_text(
        textwrap.dedent(
            RECIPE.format(
                photos=PHOTOS / "calibration",
                features=REPO / "recipes" / "data" / "magika_bytes.py",
                recipes=REPO / "recipes" / "data" / "files" / "calibration",
                people=REPO / "recipes" / "data" / "images" / "people",
                stages=stages,
            )
        )
    )
    subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "--quiet", "run", str(recipe), "-k"],
        check=False,
        stderr=subprocess.DEVNULL,
    )
    report = json.loads((scratch / "out" / "traps" / "report.json").read_text())
    return {stage["stage"]: stage["status"] for stage in report["stages"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick.add_flag(parser)
    mode = QUICK if parser.parse_args().quick else FULL
    yolo, magika = _module("yolo_detections"), _module("magika_bytes")
    detector = Path(distribution("nudenet").locate_file("nudenet/320n.onnx"))
    classifier = Path(distribution("magika").locate_file("magika/models/standard_v3_3/model.onnx"))
    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        status = build(scratch, mode)
        out = scratch / "out" / "traps"
        held_out = [
            f
            for f in sorted((REPO / "recipes" / "data" / "files" / "held-out").iterdir())
            if f.is_file() and f.stat().st_size >= 8
        ][: mode["held_out"]]
        print(
            f"{'model':<11} {'variant':<8} {'verdict / search':<24} {'task metric (held-out)':<26} {'p50 ms':>7} {'vs fp32':>8}"
        )
        built = {name for name, _ in mode["models"]}
        for name, fp32, data in (
            m
            for m in (("detector", detector, None), ("classifier", classifier, held_out))
            if m[0] in built
        ):
            paths = {
                "fp32": fp32,
                **{v: out / f"{name}_{v}" / "model.onnx" for v in ("naive", "default", "search")},
            }
            feed = (
                {"images": yolo.letterboxed(PHOTOS / "held-out" / "camera.jpg")}
                if data is None
                else {"bytes": magika.features(held_out[0])}
            )
            times = latency_ms(sessions(paths), feed, *mode["timing"])
            for variant, path in paths.items():
                if data is None:
                    found, total = yolo.recall(fp32, path, PHOTOS / "held-out")
                    metric = f"recall {found}/{total}"
                else:
                    metric = f"top-1 agreement {_agreement(fp32, path, data, magika):.3f}"
                verdict = {
                    "fp32": "",
                    "naive": f"checked: {status.get(f'{name}_checked')}",
                    "default": status.get(f"{name}_default", ""),
                    "search": _searched(out / f"{name}_search"),
                }[variant]
                print(
                    f"{name:<11} {variant:<8} {verdict:<24} {metric:<26} {times[variant]:7.2f} {times['fp32'] / times[variant]:7.2f}x"
                )


def _searched(folder: Path) -> str:
    """How the search went: the candidates it built, and for a repaired pick, at which probe of its base."""
    search = json.loads((folder / "search.json").read_text())
    rows = {c["id"]: c for c in search["candidates"]}
    chosen = rows.get(search["chosen"] or "")
    if chosen is None:
        return f"none of {len(rows)}"
    probes = [
        c for c in search["candidates"] if c["role"] == "probe" and c["knobs"] == chosen["knobs"]
    ]
    found = f", probe {probes.index(chosen) + 1}" if chosen in probes else ""
    return f"{chosen['id']} of {len(rows)}{found}"


def _agreement(reference: Path, candidate: Path, files: list[Path], magika) -> float:
    ours = ort.InferenceSession(str(reference), providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(str(candidate), providers=["CPUExecutionProvider"])
    same = [
        ours.run(None, {"bytes": magika.features(f)})[0].argmax()
        == theirs.run(None, {"bytes": magika.features(f)})[0].argmax()
        for f in files
    ]
    return sum(same) / len(same)


if __name__ == "__main__":
    main()
