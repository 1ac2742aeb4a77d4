"""Temporary work where ortflow cleans it (issue 39): what ORT and libraries put in $TMPDIR during a run (ORT's
pre.quant.* folder, as big as the model) lives in a work folder under the cache's tmp/, so what a killed run
left is removed by the next run and counted by `engine cache gc`; a killed pull's partial download goes with
the next pull, and a killed push's staging file on a folder remote with the next push. Leftovers are planted
as a killed process leaves them (a work folder whose mutex nobody holds, a staging file naming a process that
is gone), not made by killing at the right moment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import engine_process, two_stage_recipe, write

GUARD_S = 120


@pytest.fixture(autouse=True)
def _team_key(monkeypatch):
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team-key-for-these-tests-0123456789abcdef")


def _engine(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    child = engine_process(*args, cwd=cwd, env=env)
    out, err = child.communicate(timeout=GUARD_S)
    return child.returncode, out + err


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    return int(done.stdout)


def _plant_work_folder(cache: Path, label: str, size: int = 1_000_000) -> Path:
    """A work folder as a killed process leaves it: its mutex file there, held by nobody."""
    folder = cache / "tmp" / f"{label}-0123456789abcdef"
    (folder / "pre.quant.abc123").mkdir(parents=True)
    (folder / "pre.quant.abc123" / "model.onnx").write_bytes(b"\0" * size)
    folder.with_name(folder.name + ".lock").touch()  # its mutex file, which no process holds
    return folder


def test_a_runs_temporary_files_are_made_in_the_caches_tmp_and_go_with_it(project):
    system_tmp = project / "system-tmp"
    system_tmp.mkdir()
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: leaving
        stages:
          leave: {uses: leaver}
    """,
    )
    code, said = _engine("run", "recipe.yaml", cwd=project, env={"TMPDIR": str(system_tmp)})
    assert code == 0, said
    made = (project / "out/leaving/leave/joined.txt").read_text().split()
    assert len(made) == 2  # one by the stage's own process, one by a child it started
    tmp = (project / ".ortflow" / "tmp").resolve()
    assert all(tmp in Path(path).parents for path in made), made
    assert not any(os.path.lexists(path) for path in made)
    assert list(system_tmp.iterdir()) == []


def test_a_killed_runs_temporary_folder_is_counted_by_gc_and_removed(project, cli):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    cache = project / ".ortflow"
    planted = _plant_work_folder(cache, "tmpdir")

    code, out, err = cli("cache", "gc", recipe, "--dry-run")
    assert code == 0, out + err
    assert "would remove 1 stale work folder" in out and "(1.0 MB of it)" in out, out
    assert planted.is_dir()
    code, out, err = cli("cache", "gc", recipe)
    assert code == 0 and "removed 1 stale work folder" in out, out + err
    assert not planted.exists() and not planted.with_name(planted.name + ".lock").exists()

    planted = _plant_work_folder(cache, "tmpdir")
    assert cli("run", recipe)[0] == 0
    assert not planted.exists()


def test_a_killed_pulls_partial_download_goes_with_the_next_pull(project, cli):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    url = f"file://{project / 'share'}"
    assert cli("cache", "push", recipe, "--remote", url)[0] == 0
    planted = _plant_work_folder(project / ".ortflow", "pull")
    code, out, err = cli("cache", "pull", recipe, "--remote", url)
    assert code == 0, out + err
    assert not planted.exists()


def test_a_killed_pushs_staging_file_goes_with_the_next_push(project, cli):
    from ortflow.engine.store.remote import Remote

    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    share = project / "share"
    url = f"file://{share}"
    staging = Path(Remote(url)._staging())
    leftover = staging.with_name(staging.name.replace(f".{os.getpid()}.", f".{_dead_pid()}."))
    leftover.write_bytes(b"half an object")
    assert cli("cache", "push", recipe, "--remote", url)[0] == 0
    assert not leftover.exists()
