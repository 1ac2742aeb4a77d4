"""A `file://` remote (a folder, a mounted share) under the local store's rules: the store's own modes whatever
the umask, and a FIFO or a link to /dev/zero in place of an object refused unread (quickly) by `cache verify
--remote`, `cache pull` and a read-through `run --remote`."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import engine_process, two_stage_recipe

from ortflow.engine.contracts.types import lock_path_for
from ortflow.engine.publish.lock import Lock


@pytest.fixture(autouse=True)
def _team_key(monkeypatch):
    """A shared remote serves only records signed with the team's key (docs/security.md): these tests are
    about the disk and the remote's files, so they hold one."""
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team-key-for-these-tests-" + "0" * 16)


GUARD_S = 120  # a hang guard only: each command returns in a few seconds when the objects are refused unread


def _pushed(project: Path, cli) -> tuple[Path, str, Lock]:
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    share = project / "share"  # this test's own: the basetemp above is shared by every test
    url = f"file://{share}"
    code, out, err = cli("cache", "push", recipe, "--remote", url)
    assert code == 0, out + err
    return share, url, Lock.read(lock_path_for(recipe))


def _object(share: Path, lock: Lock, stage: str) -> Path:
    digest = next(iter(lock.stages[stage].digests.values()))
    return share / "objects" / digest[:2] / digest[2:]


def test_a_folder_remote_is_written_with_the_stores_modes_under_umask_000(project, cli):
    old = os.umask(0)
    try:
        share, _, _ = _pushed(project, cli)
    finally:
        os.umask(old)
    entries = [share, *share.rglob("*")]
    assert len(entries) > 10
    writable_by_all = [str(p) for p in entries if stat.S_IMODE(p.stat().st_mode) & stat.S_IWOTH]
    assert writable_by_all == []
    files = [p for p in entries if p.is_file()]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o444 for p in files)


def _fresh_clone(project: Path, where: Path) -> Path:
    where.mkdir()
    for name in ("recipe.yaml", "recipe.yaml.lock", "seed.txt"):
        shutil.copyfile(project / name, where / name)
    return where / "recipe.yaml"


def _engine(*args: str, cwd: Path) -> tuple[int, str]:
    import subprocess

    child = engine_process(*args, cwd=cwd)
    try:
        out, err = child.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        raise AssertionError(
            f"`engine {' '.join(args)}` did not return within {GUARD_S} s"
        ) from None
    return child.returncode, out + err


def test_a_fifo_or_a_link_to_dev_zero_on_the_remote_is_refused_unread(project, cli, tmp_path):
    share, url, lock = _pushed(project, cli)
    fifo, zero = _object(share, lock, "first"), _object(share, lock, "second")
    fifo.unlink()
    os.mkfifo(fifo)
    zero.unlink()
    zero.symlink_to("/dev/zero")

    code, said = _engine("cache", "verify", "--remote", url, cwd=project)
    assert code == 1, said
    assert "is a FIFO (named pipe), not a regular file, refused unread" in said
    assert "is a symbolic link leading out of the remote (to /dev/zero)" in said

    fresh = _fresh_clone(project, tmp_path / "laptop")
    code, said = _engine("cache", "pull", fresh, "--remote", url, cwd=fresh.parent)
    assert code == 1 and "went missing" not in said, said
    assert f"object {fifo.parent.name}{fifo.name} is a FIFO (named pipe)" in said
    assert (
        f"object {zero.parent.name}{zero.name} is a symbolic link leading out of the remote" in said
    )

    code, said = _engine("run", fresh, "--remote", url, cwd=fresh.parent)
    assert code == 0, said  # refused, so built here
    assert "is a FIFO (named pipe), not a regular file, refused unread" in said
    assert "building it here" in said

    code, said = _engine("cache", "verify", "--remote", url, "--remove", cwd=project)
    assert code == 0 and not fifo.exists() and not zero.is_symlink(), said


def test_a_linked_folder_on_the_remote_is_not_walked(project, cli, tmp_path):
    """A link to `/` (or back to the remote) where a shard folder belongs: listing the remote must not walk the
    whole disk or loop; the link is not followed, and the remote's own records and objects still check."""
    share, url, _ = _pushed(project, cli)
    outside = tmp_path / "elsewhere"
    (outside / "objects").mkdir(parents=True)
    (outside / "objects" / "planted.bin").write_text("not the remote's")
    (share / "runs" / "zz").symlink_to("/")
    (share / "objects" / "zz").symlink_to(share)
    (share / "trees").mkdir(exist_ok=True)
    (share / "trees" / "zz").symlink_to(outside)

    code, said = _engine("cache", "verify", "--remote", url, cwd=project)
    assert code == 0 and "intact" in said, said
    fresh = _fresh_clone(project, tmp_path / "laptop")
    code, said = _engine("cache", "pull", fresh, "--remote", url, cwd=fresh.parent)
    assert code == 0, said
