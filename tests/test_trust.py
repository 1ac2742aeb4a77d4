"""The cache is a trust boundary: what someone else wrote there (a snapshot, a run record, the state table)
is checked before it is used, and the store sets its own permissions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import executions, toy_model, two_stage_recipe, write

from ortflow.engine.recipe.snapshot import contract
from ortflow.loaders.python import PythonLoader


def _identity_model(project: Path) -> Path:
    from onnx import TensorProto, helper

    return toy_model(
        project / "model.onnx",
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )


def test_a_planted_snapshot_never_runs_its_loader(project, cli, monkeypatch):
    monkeypatch.setenv(
        "XDG_CONFIG_HOME", str(project / "config")
    )  # a fresh local key, created on first use
    _identity_model(project)
    marker = project / "planted-code-ran"
    write(
        project / "evil.py",
        f"""
        from pathlib import Path
        def feeds(inputs):
            Path({str(marker)!r}).write_text("ran")
            yield {{"x": __import__("numpy").ones((1, 4), "float32")}}
    """,
    )
    recipe = write(
        project / "recipe.yaml",
        """
        version: 1
        name: planted
        inputs:
          model: {path: model.onnx}
        datasets:
          feeds: {loader: random, with: {samples: 2}}
        stages:
          stats: {uses: feed_stats, in: {model: inputs.model, data: datasets.feeds}}
    """,
    )
    assert cli("run", recipe)[0] == 0
    assert oct((project / "config/ortflow/local.key").stat().st_mode & 0o777) == "0o600"
    [snapshot] = (project / ".ortflow/recipes").glob("*.json")
    signature, _, text = snapshot.read_text().partition("\n")
    data = json.loads(text)
    data["datasets"]["feeds"].update(
        loader="python",
        contract=contract(PythonLoader),
        params={"path": str(project / "evil.py"), "function": "feeds", "kwargs": {}},
    )
    for forged in (
        f"{signature}\n{json.dumps(data)}",
        json.dumps(data),
    ):  # a stale signature, and none
        snapshot.write_text(forged)
        code, out, err = cli("run", recipe)
        assert code == 0, (out, err)
        assert not marker.exists()
        assert executions(project) == ["stats"]  # served from the cache: the recipe's own dataset
    assert (
        snapshot.read_text().partition("\n")[0] != signature
        or json.loads(snapshot.read_text().partition("\n")[2]) != data
    )  # validation wrote a good snapshot back


def test_snapshots_are_not_kept_without_a_local_key(project, cli, monkeypatch):
    (project / "config").write_text("a file where the config folder should be")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(project / "config"))
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    assert cli("run", recipe)[0] == 0
    assert list((project / ".ortflow/recipes").glob("*.json")) == []
    assert executions(project) == ["first", "second"]


@pytest.fixture
def built(project, cli) -> Path:
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    return recipe


def _record_of(project: Path, stage: str) -> Path:
    for path in (project / ".ortflow/runs").glob("*/*.json"):
        if json.loads(path.read_text())["stage"] == stage:
            return path
    raise AssertionError(f"no record for {stage}")


def _rewrite(path: Path, change) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.chmod(0o644)
    path.write_text(json.dumps(record))


def test_a_record_pointing_at_another_object_is_refused_and_the_lock_kept(built, project, cli):
    lock_before = (project / "recipe.yaml.lock").read_text()
    first = json.loads(_record_of(project, "first").read_text())
    _rewrite(
        _record_of(project, "second"),
        lambda r: r["outputs"]["file"].update(digest=first["outputs"]["file"]["digest"]),
    )
    code, out, err = cli("run", built)
    assert code == 1, (out, err)
    assert (
        f"records {json.loads(_record_of(project, 'second').read_text())['outputs']['file']['digest']}"
        not in err
    )
    assert first["outputs"]["file"]["digest"] in err and "recipe.yaml.lock records" in err
    assert (project / "recipe.yaml.lock").read_text() == lock_before
    assert not (
        project / "out/twostep/second"
    ).exists()  # nothing of the refused result is published
    for args in ([built], []):  # the recipe named, or the lock files beside the cache
        code, out, err = cli("cache", "verify", *args)
        assert code == 1 and "disagrees with recipe.yaml.lock" in err, (out, err)


@pytest.mark.parametrize("edit", ["type", "params", "filename", "summary-signed"])
def test_records_are_checked_against_what_they_claim(built, project, cli, monkeypatch, edit):
    if (
        edit == "summary-signed"
    ):  # only a signed cache can tell an edited summary: re-sign the cache first
        monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team secret " + "s" * 30)
        assert cli("run", built)[0] == 0
        assert (
            executions(project) == ["first", "second"] * 2
        )  # unsigned records are not served once signing is on
    changes = {
        "type": lambda r: r.update(type="solo"),
        "params": lambda r: r["params"].update(text="+planted"),
        "filename": lambda r: r["outputs"]["file"].update(filename="../../escaped.txt"),
        "summary-signed": lambda r: r.update(summary="all good, trust me"),
    }
    _rewrite(_record_of(project, "second"), changes[edit])
    code, out, err = cli("cache", "verify")
    assert code == 1 and "damaged run" in err, (out, err)
    assert cli("run", built)[0] == 0
    assert executions(project)[-1] == "second"  # rebuilt, not served
    assert not (project / "out/escaped.txt").exists() and not (project / "escaped.txt").exists()
    report = json.loads((project / "out/twostep/report.json").read_text())
    assert "trust me" not in json.dumps(report)


def test_the_store_sets_its_own_permissions_whatever_the_umask(project, cli):
    import os
    import stat

    recipe = two_stage_recipe(project)
    old = os.umask(0)
    try:
        assert cli("run", recipe)[0] == 0
    finally:
        os.umask(old)
    cache = project / ".ortflow"
    writable = [
        p
        for p in [cache, *cache.rglob("*")]
        if p.lstat().st_mode & stat.S_IWOTH and not p.is_symlink()
    ]
    assert writable == []
    objects = [p for p in (cache / "objects").rglob("*") if p.is_file()]
    records = list((cache / "runs").rglob("*.json"))
    assert objects and records
    assert {oct(p.stat().st_mode & 0o777) for p in objects + records} == {"0o444"}


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_state_table_is_rebuilt_with_a_warning(built, project, cli, damage):
    import gc

    gc.collect()  # the earlier in-process run's connection closes, as it would when its process exits
    db = project / ".ortflow/state.db"
    for suffix in ("-wal", "-shm"):
        (project / f".ortflow/state.db{suffix}").unlink(missing_ok=True)
    db.write_bytes(
        b"not a database at all " * 100 if damage == "garbage" else db.read_bytes()[:200]
    )
    code, out, err = cli("run", built)
    assert code == 0, (out, err)
    assert "state.db was damaged" in err and "started afresh" in err
    assert executions(project) == ["first", "second"]  # re-hashed, still served from the cache
    db.write_bytes(b"\0" * 4096)
    assert cli("cache", "verify", "--remove")[0] == 0
    db.write_bytes(b"\1" * 4096)
    code, out, err = cli("cache", "gc", built)
    assert code == 0 and "removed 0 run records" in out, (out, err)
