"""Real processes: a run killed mid-stage resumes cleanly; two runs sharing one cache never collide."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
import yaml
from conftest import CEILING, engine_process, executions, two_stage_recipe, write


def wait_for(predicate, timeout: float = CEILING) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def test_killed_run_leaves_no_partial_entry_and_resumes(project, cli):
    path = two_stage_recipe(project)
    proc = engine_process("run", path, env={"ORTFLOW_TEST_SLEEP": "second=60"})
    try:
        wait_for(lambda: executions(project) == ["first", "second"])
        time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=CEILING)
    assert proc.returncode == -signal.SIGKILL
    store = project / ".ortflow"
    records = [json.loads(p.read_text()) for p in store.glob("runs/*/*.json")]
    assert [r["stage"] for r in records] == ["first"]  # the killed stage left no run record
    assert list((store / "tmp").iterdir())  # only its private work folder, which nothing reads
    assert cli("cache", "verify", path)[0] == 0

    code, out, _ = cli("run", path)
    assert code == 0
    assert executions(project) == ["first", "second", "second"]  # first came from the cache
    assert (project / "out/twostep/second/joined.txt").read_text() == "seed+1+2"
    assert list((store / "tmp").iterdir()) == []  # the dead process's work folder was cleaned up


def test_ctrl_c_exits_130_with_a_resume_hint(project):
    path = two_stage_recipe(project)
    proc = engine_process("run", path, env={"ORTFLOW_TEST_SLEEP": "second=60"})
    wait_for(lambda: executions(project) == ["first", "second"])
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=CEILING)
    assert proc.returncode == 130
    assert "interrupted: finished stages are cached; run the same command again to resume" in err
    assert "Traceback" not in err


def test_two_concurrent_runs_share_one_cache(project, cli):
    path = two_stage_recipe(project)
    env = {"ORTFLOW_TEST_SLEEP": "first=1.5"}
    procs = [engine_process("run", path, "--out", project / f"out{i}", env=env) for i in range(2)]
    results = [p.communicate(timeout=CEILING) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert sorted(executions(project)) == [
        "first",
        "second",
    ]  # each stage built once, the other run waited
    for i in range(2):
        assert (project / f"out{i}/second/joined.txt").read_text() == "seed+1+2"
    statuses = [
        json.loads((project / f"out{i}/report.json").read_text())["stages"][0]["status"]
        for i in range(2)
    ]
    assert sorted(statuses) == ["cached", "ran"]
    assert cli("cache", "verify", path)[0] == 0


def test_input_edited_while_a_stage_reads_it_is_not_cached(project, cli):
    path = two_stage_recipe(project)
    proc = engine_process("run", path, env={"ORTFLOW_TEST_SLEEP": "first=1.5"})
    wait_for(lambda: executions(project) == ["first"])
    (project / "seed.txt").write_text("edited")
    _, err = proc.communicate(timeout=CEILING)
    assert proc.returncode == 1
    assert (
        "input 'parts'" in err and "changed while the stage ran, so its result was not kept" in err
    )
    assert not list((project / ".ortflow/runs").glob("*/*.json"))
    (project / "seed.txt").write_text("seed")
    assert cli("run", path)[0] == 0
    assert (project / "out/twostep/second/joined.txt").read_text() == "seed+1+2"


def test_gc_refuses_while_a_run_uses_the_cache(project, cli):
    path = two_stage_recipe(project)
    assert cli("run", path)[0] == 0
    path.write_text(path.read_text().replace('"+2"', '"+3"'))
    proc = engine_process("run", path, env={"ORTFLOW_TEST_SLEEP": "second=2"})
    wait_for(lambda: executions(project)[-1:] == ["second"] and len(executions(project)) == 3)
    code, _, err = cli("cache", "gc", path)
    assert code == 2 and "is in use by a running `engine run` — run gc when it has finished" in err
    assert proc.wait(timeout=CEILING) == 0
    assert cli("cache", "gc", path)[0] == 0
    assert cli("cache", "verify", path)[0] == 0


def test_concurrent_runs_of_different_stages_both_reach_the_lock_file(project, cli):
    (project / "seed.txt").write_text("seed")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: split
        inputs:
          seed: {path: seed.txt}
        stages:
          left: {uses: concat, in: {parts: inputs.seed}, with: {sleep: 1}}
          right: {uses: concat, in: {parts: inputs.seed}, with: {sleep: 1.2}}
    """,
    )
    procs = [engine_process("run", path, stage) for stage in ("left", "right")]
    assert [p.wait(timeout=CEILING) for p in procs] == [0, 0]
    code, out, _ = cli("status", path)
    assert code == 0 and out.count("up to date") == 2


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_parallel_run_of_the_real_quickstart(tmp_path):
    """Several real stages at once in a fresh interpreter: lazy imports and library output must not race."""
    root = Path(__file__).parent.parent / "recipes"
    import shutil

    shutil.copy(root / "quickstart.yaml", tmp_path / "quickstart.yaml")
    shutil.copytree(root / "data", tmp_path / "data")
    proc = engine_process("run", tmp_path / "quickstart.yaml", "--jobs", "3", cwd=tmp_path)
    out, err = proc.communicate(timeout=CEILING)
    assert proc.returncode == 0, err
    stages = len(yaml.safe_load((root / "quickstart.yaml").read_text())["stages"])
    assert out.count(" ran ") == stages and "outputs and report" in out
    assert (
        "Collecting tensor data" not in out + err and "WARNING" not in err
    )  # library chatter stays captured
