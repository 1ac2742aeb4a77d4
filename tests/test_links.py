"""Folders that cannot be turned against the user (issue 39): a symbolic link ortflow did not make, at any
level of out/ or of the cache, is refused with one line naming it and the fix, before anything is written or
deleted through it; and a cache object that is not a regular file (a FIFO, a link to /dev/zero) is damage,
found without reading it, removed by `cache verify --remove` and rebuilt by a run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import engine_process, two_stage_recipe

from ortflow.engine.contracts.types import lock_path_for
from ortflow.engine.publish.lock import Lock

GUARD_S = 120  # a hang guard only: each command returns in seconds when nothing blocks


def _outside(tmp_path: Path) -> Path:
    """A folder outside the workspace and the cache, holding a file nobody may delete or change."""
    outside = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    (outside / "keep").mkdir(parents=True)
    (outside / "precious.txt").write_text("the user's own file")
    (outside / "keep" / "also.txt").write_text("another of the user's files")
    return outside


def _snapshot(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): (p.read_text() if p.is_file() else "/")
        for p in sorted(folder.rglob("*"))
    }


def _engine(*args: str, cwd: Path) -> tuple[int, str]:
    child = engine_process(*args, cwd=cwd)
    try:
        out, err = child.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise AssertionError(
            f"`engine {' '.join(map(str, args))}` did not return within {GUARD_S} s"
        ) from None
    return child.returncode, out + err


def _digest(recipe: Path, stage: str) -> str:
    return next(iter(Lock.read(lock_path_for(recipe)).stages[stage].digests.values()))


def _refused_one_line(err: str, link: Path) -> None:
    lines = [line for line in err.strip().splitlines() if "symbolic link" in line]
    assert len(lines) == 1, err
    assert str(link) in lines[0] and "remove it" in lines[0], err


@pytest.mark.parametrize("level", ["out", "out/twostep", "out/twostep/first", "marker"])
def test_a_link_anywhere_in_out_is_refused_and_nothing_outside_changes(
    project, cli, tmp_path, level
):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    outside = _outside(tmp_path)
    if level == "marker":  # a file inside a stage's folder, which ortflow rewrites on each run
        link = project / "out/twostep/first/.ortflow-stage"
        link.unlink()
        link.symlink_to(outside / "precious.txt")
    else:
        link = project / level
        shutil.rmtree(link)
        link.symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)

    code, out, err = cli("run", recipe)
    assert code == 2, out + err
    _refused_one_line(err, link)
    assert _snapshot(outside) == before
    assert link.is_symlink()  # left for the user to look at and remove


def test_a_link_in_out_is_refused_by_a_first_run_too(project, cli, tmp_path):
    recipe = two_stage_recipe(project)
    outside = _outside(tmp_path)
    (project / "out").symlink_to(outside, target_is_directory=True)
    code, out, err = cli("run", recipe)
    assert code == 2, out + err
    _refused_one_line(err, project / "out")
    assert _snapshot(outside) == {
        "keep": "/",
        "keep/also.txt": "another of the user's files",
        "precious.txt": "the user's own file",
    }


def _cache_link(cache: Path, level: str, digest: str) -> Path:
    return {
        "objects shard": cache / "objects" / digest[:2],
        "objects": cache / "objects",
        "tmp": cache / "tmp",
        "runs": cache / "runs",
        "cache": cache,
    }[level]


@pytest.mark.parametrize("level", ["objects shard", "objects", "tmp", "runs", "cache"])
def test_a_link_in_the_cache_is_refused_and_nothing_outside_changes(project, cli, tmp_path, level):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    digest = _digest(recipe, "first")
    cache = project / ".ortflow"
    shutil.rmtree(cache)
    shutil.rmtree(project / "out")
    outside = _outside(tmp_path)
    link = _cache_link(cache, level, digest)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)

    code, out, err = cli("run", recipe)
    assert code == 2, out + err
    _refused_one_line(err, link)
    assert _snapshot(outside) == before


def test_gc_and_verify_do_not_walk_a_linked_shard(project, cli, tmp_path):
    """gc removes what no lock file names: through a linked shard it would delete the user's files."""
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    outside = _outside(tmp_path)
    (outside / ("e" * 62)).write_text("named like an object")
    link = project / ".ortflow" / "objects" / "zz"
    link.symlink_to(outside, target_is_directory=True)
    before = _snapshot(outside)

    code, out, err = cli("cache", "verify", recipe)
    assert code == 1, out + err
    assert f"damaged entry objects/zz: is a symbolic link (to {outside})" in out + err
    code, out, err = cli("cache", "gc", recipe)
    assert code == 0, out + err
    assert _snapshot(outside) == before
    code, out, err = cli("cache", "verify", recipe, "--remove")
    assert code == 0 and not link.is_symlink(), out + err
    assert _snapshot(outside) == before


def _odd_objects(project: Path, recipe: Path) -> tuple[Path, Path]:
    """The first stage's object made a FIFO, the second's a link to /dev/zero."""
    paths = []
    for stage in ("first", "second"):
        digest = _digest(recipe, stage)
        path = project / ".ortflow" / "objects" / digest[:2] / digest[2:]
        path.unlink()
        paths.append(path)
    os.mkfifo(paths[0])
    paths[1].symlink_to("/dev/zero")
    return paths[0], paths[1]


def test_a_fifo_or_a_link_to_dev_zero_in_the_cache_is_damage_found_unread(project, cli):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    fifo, zero = _odd_objects(project, recipe)

    code, said = _engine("cache", "verify", recipe, cwd=project)
    assert code == 1, said
    assert f"{fifo.parent.name}{fifo.name}: is a FIFO (named pipe), not a regular file" in said
    assert f"{zero.parent.name}{zero.name}: is a symbolic link (to /dev/zero)" in said

    code, said = _engine("cache", "verify", recipe, "--remove", cwd=project)
    assert code == 0, said
    assert not os.path.lexists(fifo) and not os.path.lexists(zero)


def test_a_run_rebuilds_a_stage_whose_object_is_a_fifo_or_a_link(project, cli):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    fifo, zero = _odd_objects(project, recipe)

    code, said = _engine("run", recipe, cwd=project)
    assert code == 0, said
    assert fifo.is_file() and not fifo.is_symlink() and zero.is_file() and not zero.is_symlink()
    assert (project / "out/twostep/second/joined.txt").read_text().endswith("+2")


def test_a_push_says_what_it_cannot_push_and_does_not_hang_on_odd_objects(
    project, cli, monkeypatch
):
    monkeypatch.setenv(
        "ORTFLOW_SIGNING_KEY", "team-key-for-this-test-" + "0" * 16
    )  # the records are signed
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    _odd_objects(project, recipe)
    share = project / "share"
    code, said = _engine("cache", "push", recipe, "--remote", f"file://{share}", cwd=project)
    assert code == 1, said
    assert "not a regular file" not in said
    assert "not in the local cache, so not pushed: first, second" in said
    assert not [p for p in share.rglob("*") if p.is_file()]


def test_a_run_record_that_is_a_fifo_is_damage_found_unread_and_rebuilt(project, cli):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    key = Lock.read(lock_path_for(recipe)).stages["first"].key
    record = project / ".ortflow" / "runs" / key[:2] / f"{key}.json"
    record.unlink()
    os.mkfifo(record)

    code, said = _engine("cache", "verify", recipe, cwd=project)
    assert code == 1, said
    assert f"damaged entry runs/{key[:2]}/{key}.json: is a FIFO (named pipe)" in said
    code, said = _engine("run", recipe, cwd=project)
    assert code == 0, said
    assert record.is_file()


def test_a_key_mutex_planted_as_a_link_is_named_with_the_fix(project, cli, tmp_path):
    """The per-key mutex file is opened for writing: a planted link there is refused, named, with the fix
    (filelock's own O_NOFOLLOW already kept it from being followed; it failed the stage with a bare ELOOP)."""
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    key = Lock.read(lock_path_for(recipe)).stages["first"].key
    shutil.rmtree(project / ".ortflow" / "runs")
    outside = _outside(tmp_path)
    link = project / ".ortflow" / "locks" / f"{key}.lock"
    link.unlink(missing_ok=True)
    link.symlink_to(outside / "precious.txt")

    code, out, err = cli("run", recipe)
    assert code != 0 and str(link) in out + err and "remove it" in out + err, out + err
    assert (outside / "precious.txt").read_text() == "the user's own file"
