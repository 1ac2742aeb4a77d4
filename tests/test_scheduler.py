"""Execution order, parallelism, failure handling and exit codes, with the test plugin's stages."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import executions, write


def chain_recipe(project: Path, extra: str = "") -> Path:
    (project / "seed.txt").write_text("seed;")
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: chain
        inputs:
          seed: {path: seed.txt}
        stages:
          a: {uses: concat, in: {parts: inputs.seed}, with: {text: "a;"}}
          b: {uses: concat, in: {parts: [a.file]}, with: {text: "b;"}}
          c: {uses: concat, in: {parts: [inputs.seed, b.file]}, with: {text: "c;"}}
    """
        + extra,
    )


def test_runs_in_dependency_order_and_second_run_executes_nothing(project, cli):
    path = chain_recipe(project)
    code, out, _ = cli("run", path)
    assert code == 0
    assert executions(project) == ["a", "b", "c"]
    assert (project / "out/chain/c/joined.txt").read_text() == "seed;seed;a;b;c;"
    code, out, _ = cli("run", path)
    assert code == 0
    assert executions(project) == ["a", "b", "c"]  # nothing new started
    report = json.loads((project / "out/chain/report.json").read_text())
    assert [s["status"] for s in report["stages"]] == ["cached", "cached", "cached"]
    assert "cached" in out


def test_independent_stages_run_in_parallel(project, cli):
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: par
        stages:
          left: {uses: concat, with: {sleep: 0.8, text: L}}
          right: {uses: concat, with: {sleep: 0.8, text: R}}
          join: {uses: concat, in: {parts: [left.file, right.file]}}
    """,
    )
    code, _, _ = cli("run", "recipe.yaml", "--jobs", "2")
    assert code == 0
    times: dict[str, dict[str, float]] = {}
    for line in (project / "executions.log").read_text().splitlines():
        name, event, stamp = line.split()
        times.setdefault(name, {})[event] = float(stamp)
    assert (
        times["left"]["start"] < times["right"]["end"]
        and times["right"]["start"] < times["left"]["end"]
    )
    assert times["join"]["start"] >= max(times["left"]["end"], times["right"]["end"])
    assert (project / "out/par/join/joined.txt").read_text() == "LR"


def test_exclusive_stage_runs_alone_even_with_free_slots(project, cli):
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: solo
        stages:
          a: {uses: concat, with: {sleep: 0.3, text: a}}
          bench: {uses: solo, with: {sleep: 0.3, text: b}}
          c: {uses: concat, with: {sleep: 0.3, text: c}}
    """,
    )
    assert cli("run", "recipe.yaml", "--jobs", "3")[0] == 0
    spans: dict[str, list[float]] = {}
    for line in (project / "executions.log").read_text().splitlines():
        name, _, stamp = line.split()
        spans.setdefault(name, []).append(float(stamp))
    start, end = spans.pop("bench")
    for other_start, other_end in spans.values():
        assert other_end <= start or other_start >= end
    assert spans["a"][0] < spans["c"][1] and spans["c"][0] < spans["a"][1]  # the others did overlap


def test_one_job_runs_one_stage_at_a_time(project, cli):
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: serial
        stages:
          left: {uses: concat, with: {sleep: 0.2, text: L}}
          right: {uses: concat, with: {sleep: 0.2, text: R}}
    """,
    )
    assert cli("run", "recipe.yaml")[0] == 0
    events = [line.split()[:2] for line in (project / "executions.log").read_text().splitlines()]
    assert [e[1] for e in events] == ["start", "end", "start", "end"]


def test_failure_skips_dependents_and_keep_going_finishes_other_branches(project, cli):
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: fail
        stages:
          bad: {uses: explode}
          after_bad: {uses: concat, in: {parts: [bad.file]}}
          good: {uses: concat, with: {text: ok}}
          after_good: {uses: concat, in: {parts: [good.file]}}
    """,
    )
    code, out, err = cli("run", "recipe.yaml")
    assert code == 1
    assert (
        "error: recipe.yaml:4:3: stage 'bad' (explode) failed: the input is unusable — give it a better one"
        in err
    )
    report = json.loads((project / "out/fail/report.json").read_text())
    status = {s["stage"]: s["status"] for s in report["stages"]}
    assert status["bad"] == "failed" and status["after_bad"] == "skipped"
    assert "not run" in status.values()  # without --keep-going nothing new starts after the failure

    code, out, err = cli("run", "recipe.yaml", "--keep-going")
    assert code == 1
    report = json.loads((project / "out/fail/report.json").read_text())
    status = {s["stage"]: s["status"] for s in report["stages"]}
    assert status == {
        "bad": "failed",
        "after_bad": "skipped",
        "good": status["good"],
        "after_good": "ran",
    }
    assert status["good"] in ("ran", "cached")
    # The failed stage wrote a partial file; nothing of it reached the store or the outputs.
    assert not (project / "out/fail/bad").exists()
    assert list((project / ".ortflow/tmp").iterdir()) == []


def test_crash_shows_one_line_and_traceback_only_with_debug(project, cli):
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: crash
        stages:
          boom: {uses: explode, with: {how: crash}}
    """,
    )
    code, _, err = cli("run", "recipe.yaml")
    assert code == 1
    assert "stage 'boom' (explode) failed: ZeroDivisionError: division by zero" in err
    assert "Traceback" not in err and "--debug" in err
    code, _, err = cli("--debug", "run", "recipe.yaml")
    assert code == 1
    assert "Traceback (most recent call last)" in err


def test_gate_failure_has_its_own_exit_code(project, cli):
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: gate
        stages:
          check: {uses: explode, with: {how: gate}}
          deploy: {uses: concat, in: {parts: [check.file]}}
    """,
    )
    code, _, err = cli("run", "recipe.yaml")
    assert code == 3
    assert "stage 'check' (explode) gate failed: cosine 0.91 < min 0.99" in err
    report = json.loads((project / "out/gate/report.json").read_text())
    assert [s["status"] for s in report["stages"]] == ["gate failed", "skipped"]


def test_run_selected_stage_runs_only_it_and_its_upstream(project, cli):
    path = chain_recipe(project, "      other: {uses: concat, with: {text: x}}\n")
    code, _, err = cli("run", path, "b")
    assert code == 0, err
    assert executions(project) == ["a", "b"]
    code, _, err = cli("run", path, "bb")
    assert code == 2 and "the recipe has no stage 'bb' — did you mean 'b'?" in err
