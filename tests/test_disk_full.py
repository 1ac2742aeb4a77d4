"""A full disk on each of the four sides a command writes (the cache in a run, out/, the cache in a pull, a folder
remote in a push), filled for real on a 1 MB tmpfs: exit code 5, the disk that filled named (the folder and
its mount point) with the fix that applies there, nothing partial left, and the lock file listing every stage
that finished."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import write

from ortflow.engine.contracts.types import lock_path_for
from ortflow.engine.publish.lock import Lock
from ortflow.engine.store.atomic import STAGING_SUFFIX


@pytest.fixture(autouse=True)
def _team_key(monkeypatch):
    """A shared remote serves only records signed with the team's key (docs/security.md): these tests are
    about the disk and the remote's files, so they hold one."""
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team-key-for-these-tests-" + "0" * 16)


def _recipe(project: Path) -> Path:
    """first (a few bytes), then second (3 MB: more than the small disk holds), then third (a few bytes)."""
    (project / "seed.txt").write_text("seed")
    (project / "big.bin").write_bytes(b"x" * 3_000_000)
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: sides
        inputs:
          seed: {path: seed.txt}
          big: {path: big.bin}
        stages:
          first: {uses: concat, in: {parts: inputs.seed}, with: {text: "+1"}}
          second: {uses: concat, in: {parts: [first.file, inputs.big]}}
          third: {uses: concat, in: {parts: [second.file]}, with: {text: "+3"}}
    """,
    )


def _locked(recipe: Path) -> list[str]:
    return sorted(Lock.read(lock_path_for(recipe)).stages)


def _leftovers(folder: Path) -> list[str]:
    """Staging files and work folders: what a failed write would leave half-done."""
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.name.endswith(STAGING_SUFFIX)
        or (p.parent.name == "tmp" and not p.name.endswith(".lock"))
    )


def _disk(what: str, folder: Path, mount: Path) -> str:
    return f"no space left on the disk holding {what} ({folder}; the file system mounted at {mount}) — "


def test_a_full_cache_disk_names_it_and_the_lock_keeps_what_finished(
    project, cli, small_disk, monkeypatch
):
    cache = small_disk / "cache"
    monkeypatch.setenv("ORTFLOW_CACHE", str(cache))
    recipe = _recipe(project)
    code, out, err = cli("run", recipe)
    assert code == 5, out + err
    assert _disk("the cache", cache, small_disk) + "free space there (or point ORTFLOW_CACHE" in err
    assert _locked(recipe) == ["first"]
    assert len(list((cache / "runs").rglob("*.json"))) == 1 and _leftovers(cache) == []


def test_a_full_outputs_disk_names_it_prints_the_table_and_the_lock_keeps_every_stage(
    project, cli, small_disk
):
    recipe = _recipe(project)
    out_dir = small_disk / "out"
    code, out, err = cli("run", recipe, "--out", out_dir)
    assert code == 5, out + err
    assert (
        _disk("the outputs folder", out_dir, small_disk) + "free space there (or give --out" in err
    )
    assert (
        "big.bin" not in err and str(project / ".ortflow") not in err
    )  # not the copy's source, nor the cache
    assert all(name in out for name in ("first", "second", "third"))  # the run's table
    assert _locked(recipe) == ["first", "second", "third"]  # all were built and cached
    assert not (out_dir / "sides" / "second").exists() and _leftovers(out_dir) == []
    code, out, err = cli("run", recipe)  # room again (the default out/): nothing is built twice
    assert code == 0 and out.count("cached") >= 3, out + err


def _pushed(project: Path, cli, share: Path) -> Path:
    recipe = _recipe(project)
    assert cli("run", recipe)[0] == 0
    code, out, err = cli("cache", "push", recipe, "--remote", f"file://{share}")
    assert code == 0, out + err
    return recipe


def test_a_full_local_disk_in_a_pull_names_the_cache_not_the_remote(
    project, cli, small_disk, tmp_path, monkeypatch
):
    share = tmp_path / "share"
    recipe = _pushed(project, cli, share)
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    for name in ("recipe.yaml", "recipe.yaml.lock", "seed.txt", "big.bin"):
        shutil.copyfile(recipe.parent / name, laptop / name)
    cache = small_disk / "cache"
    monkeypatch.setenv("ORTFLOW_CACHE", str(cache))
    code, out, err = cli("cache", "pull", laptop / "recipe.yaml", "--remote", f"file://{share}")
    assert code == 5, out + err
    assert _disk("the cache", cache, small_disk) + "free space there (or pull into a cache" in err
    assert "check the URL" not in err
    assert list((cache / "runs").rglob("*.json")) == [] and _leftovers(cache) == []


def test_a_full_folder_remote_in_a_push_names_its_disk_and_keeps_no_partial_file(
    project, cli, small_disk
):
    share = small_disk / "share"
    recipe = _recipe(project)
    assert cli("run", recipe)[0] == 0
    code, out, err = cli("cache", "push", recipe, "--remote", f"file://{share}")
    assert code == 5, out + err
    assert (
        _disk(f"the remote file://{share}", share, small_disk) + "free space on the remote's disk"
        in err
    )
    assert _leftovers(share) == [] and list((share / "runs").rglob("*")) == []
