"""Cache keys, resumption, damage detection, the lock file, status, plan reasons and gc."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml
from conftest import executions, write

from ortflow.engine.publish.lock import Lock
from ortflow.engine.store.hashing import HashCache


def pipeline(project: Path) -> Path:
    (project / "calib.txt").write_text("calibration v1")
    (project / "other.txt").write_text("unrelated")
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: keys
        inputs:
          calib: {path: calib.txt}
          other: {path: other.txt}
        stages:
          table: {uses: concat, in: {parts: inputs.calib}, with: {text: "+table"}}
          quant: {uses: concat, in: {parts: [table.file]}, with: {text: "+quant"}}
          side: {uses: concat, in: {parts: inputs.other}}
    """,
    )


def test_changed_data_reruns_exactly_the_downstream_stages(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    assert sorted(executions(project)) == ["quant", "side", "table"]
    # Same path, new content, same size: a path- or size-keyed cache would serve the stale result.
    (project / "calib.txt").write_text("calibration v2")
    assert cli("run", path)[0] == 0
    assert executions(project)[3:] == ["table", "quant"]
    assert (project / "out/keys/quant/joined.txt").read_text() == "calibration v2+table+quant"


def test_keys_depend_on_content_not_path(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    moved = project / "data" / "calib-copy.txt"
    moved.parent.mkdir()
    moved.write_text("calibration v1")
    assert cli("run", path, "--set", "inputs.calib.path=data/calib-copy.txt")[0] == 0
    assert len(executions(project)) == 3  # nothing re-ran


def test_param_override_reruns_only_the_changed_stage_and_downstream(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    code, out, _ = cli("plan", path, "--set", "table.with.text=+t2")
    assert code == 0
    assert "params changed: text" in out and "upstream 'table' will run" in out
    assert cli("run", path, "--set", "table.with.text=+t2")[0] == 0
    assert executions(project)[3:] == ["table", "quant"]
    # Defaults spelled out explicitly do not change the key.
    assert cli("run", path, "--set", "side.with.sleep=0")[0] == 0
    assert len(executions(project)) == 5


def test_plan_reasons(project, cli):
    path = pipeline(project)
    code, out, _ = cli("plan", path)
    assert code == 0 and out.count("new stage") == 2 and "3 of 3 stages would run" in out
    cli("run", path)
    (project / "other.txt").write_text("changed")
    code, out, _ = cli("plan", path)
    assert (
        "input changed: parts" in out and "up to date" in out and "1 of 3 stages would run" in out
    )


def test_lock_file_round_trip_and_status(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    lock_path = project / "recipe.yaml.lock"
    text = lock_path.read_text()
    lock = Lock.read(lock_path)
    assert set(lock.stages) == {"table", "quant", "side"}
    assert lock.stages["quant"].inputs["parts"] == [lock.stages["table"].outputs["file"].digest]
    assert len(lock.stages["table"].key) == 64  # full sha256, never shortened
    published = project / "out" / "keys" / "table" / "joined.txt"
    assert (
        lock.stages["table"].outputs["file"].size == published.stat().st_size > 0
    )  # measured before stored
    lock_path.write_text(yaml.safe_dump(yaml.safe_load(text)))  # same content, other bytes
    Lock.read(lock_path).write()
    assert lock_path.read_text() == text  # stable, sorted output: diffs stay small
    code, out, _ = cli("status", path)
    assert code == 0 and out.count("up to date") == 3
    code, out, _ = cli("status", path, "--set", "side.with.text=x")
    assert code == 1 and "changed" in out and "params changed: text" in out


def test_overrides_leave_the_lock_file_alone(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    before = (project / "recipe.yaml.lock").read_text()
    code, _, err = cli("run", path, "--set", "side.with.text=sweep")
    assert (
        code == 0
        and "recipe.yaml.lock was not updated: the run used --set/--params overrides" in err
    )
    assert (project / "recipe.yaml.lock").read_text() == before
    assert cli("status", path)[0] == 0  # the recipe and its lock still agree


def test_damaged_lock_file_is_an_error_not_ignored(project, cli):
    path = pipeline(project)
    (project / "recipe.yaml.lock").write_text("stages: [unterminated\n")
    code, _, err = cli("run", path)
    assert code == 2
    assert "recipe.yaml.lock" in err and "not valid YAML" in err and "restore it from git" in err
    assert executions(project) == []


def test_verify_catches_a_flipped_byte_and_the_run_rebuilds_it(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    record = json.loads(next((project / ".ortflow/runs").glob("*/*.json")).read_text())
    assert cli("cache", "verify", path)[0] == 0
    lock = Lock.read(project / "recipe.yaml.lock")
    digest = lock.stages["quant"].outputs["file"].digest
    obj = project / ".ortflow/objects" / digest[:2] / digest[2:]
    stat = obj.stat()
    obj.chmod(0o644)
    data = bytearray(obj.read_bytes())
    data[0] ^= 0x01
    obj.write_bytes(bytes(data))
    os.utime(obj, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # bit rot: same size and mtime
    code, out, err = cli("cache", "verify", path)
    assert code == 1
    assert f"damaged object {digest}" in err and "engine cache verify --remove" in err
    assert cli("cache", "verify", path, "--remove")[0] == 0
    assert cli("cache", "verify", path)[0] == 0
    assert cli("run", path)[0] == 0
    assert executions(project)[3:] == ["quant"]
    assert (project / "out/keys/quant/joined.txt").read_text() == "calibration v1+table+quant"
    assert record  # the run records are plain JSON a person can read


def test_a_modified_object_is_never_served(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    digest = Lock.read(project / "recipe.yaml.lock").stages["table"].outputs["file"].digest
    obj = project / ".ortflow/objects" / digest[:2] / digest[2:]
    obj.chmod(0o644)
    obj.write_text("tampered!!!!!!!!!!!!!!!!!")  # new mtime: the state table notices without verify
    assert cli("run", path)[0] == 0
    assert executions(project)[3:] == [
        "table"
    ]  # rebuilt; quant's key is unchanged, so it stays cached
    assert (project / "out/keys/table/joined.txt").read_text() == "calibration v1+table"


def test_gc_keeps_what_the_lock_references(project, cli):
    path = pipeline(project)
    cli("run", path)
    cli("run", path, "--set", "side.with.text=old")  # an extra build the lock no longer references
    cli("run", path)
    runs_before = len(list((project / ".ortflow/runs").glob("*/*.json")))
    assert runs_before == 4
    code, out, _ = cli("cache", "gc", path)
    assert code == 0 and "removed 1 run record and 1 object" in out
    code, out, _ = cli("run", path)
    assert code == 0 and len(executions(project)) == 4  # everything the lock names is still cached
    code, _, err = cli("cache", "gc")
    assert code == 2 and "name the recipes whose builds to keep" in err


def test_cache_ls_lists_runs_with_full_keys(project, cli):
    path = pipeline(project)
    cli("run", path)
    code, out, _ = cli("cache", "ls", path)
    lock = Lock.read(project / "recipe.yaml.lock")
    assert code == 0 and lock.stages["quant"].key in out and "3 run records" in out


def test_hash_cache_does_not_reread_unchanged_files(tmp_path, monkeypatch):
    import ortflow.engine.store.hashing as hashing

    big = tmp_path / "model.bin"
    big.write_bytes(os.urandom(1 << 20))
    cache = HashCache(tmp_path / "state.db")
    first = cache.hash_path(big)
    reads = []
    real = hashing.hash_file
    monkeypatch.setattr(hashing, "hash_file", lambda p: reads.append(p) or real(p))
    assert cache.hash_path(big) == first and reads == []
    big.write_bytes(os.urandom(1 << 20))
    assert cache.hash_path(big) != first and reads == [big]


def test_cache_location_from_environment(project, cli, monkeypatch):
    path = pipeline(project)
    monkeypatch.setenv("ORTFLOW_CACHE", str(project / "shared-cache"))
    assert cli("run", path)[0] == 0
    assert (project / "shared-cache/objects").is_dir() and not (project / ".ortflow").exists()


def test_folder_artifacts_are_stored_verified_and_materialized(tmp_path):
    from ortflow.engine.store.artifacts import ArtifactStore

    store = ArtifactStore(tmp_path / "cache")
    with store.workdir("engine") as work:
        folder = work / "cache-dir"
        (folder / "sub").mkdir(parents=True)
        (folder / "a.bin").write_bytes(b"engine")
        (folder / "sub" / "b.json").write_text("{}")
        digest = store.add(folder)
        assert not folder.exists() and store.object_intact(digest)
    assert list(store.tmp.iterdir()) == []
    store.materialize(digest, tmp_path / "out" / "engines")
    assert (tmp_path / "out/engines/sub/b.json").read_text() == "{}"
    assert store.verify() == []
    inner = store.object_path(digest) / "a.bin"
    inner.chmod(0o644)
    inner.write_bytes(b"enginf")
    assert [d.name for d in store.verify()] == [digest]


def test_rebuild_with_different_bytes_is_flagged_as_not_reproducible(project, cli):
    path = pipeline(project)
    path.write_text(
        path.read_text().replace(
            "side: {uses: concat, in: {parts: inputs.other}}",
            "side: {uses: concat, in: {parts: inputs.other}, with: {stamp: true}}",
        )
    )
    assert cli("run", path)[0] == 0
    shutil.rmtree(project / ".ortflow")  # as on a fresh machine with the lock file from git
    code, _, err = cli("run", path)
    assert code == 0
    assert (
        "warning: stage 'side' was rebuilt from the same inputs and parameters as the lock file records, "
        in err
    )
    assert "but its output file has different bytes: the stage is not reproducible" in err
    assert "'table'" not in err and "'quant'" not in err  # deterministic stages rebuilt identically


def test_symlinked_input_follows_its_target(project, cli):
    (project / "v1.txt").write_text("one")
    (project / "v2.txt").write_text("two")
    (project / "cur.txt").symlink_to("v1.txt")
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: link
        inputs:
          data: cur.txt
        stages:
          a: {uses: concat, in: {parts: inputs.data}}
    """,
    )
    assert cli("run", path)[0] == 0
    (project / "cur.txt").unlink()
    (project / "cur.txt").symlink_to("v2.txt")
    assert cli("run", path)[0] == 0
    assert (project / "out/link/a/joined.txt").read_text() == "two"


def test_edit_that_restores_mtime_is_still_seen(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    calib = project / "calib.txt"
    stat = calib.stat()
    calib.write_text("CALIBRATION v1")  # same size
    os.utime(calib, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert cli("run", path)[0] == 0
    assert (project / "out/keys/quant/joined.txt").read_text() == "CALIBRATION v1+table+quant"


def test_plan_in_a_fresh_clone_uses_the_lock_file(project, cli):
    path = pipeline(project)
    assert cli("run", path)[0] == 0
    shutil.rmtree(project / ".ortflow")
    code, out, _ = cli("status", path)
    assert code == 1 and out.count("locked, not in this cache") == 3 and "changed" not in out
    code, out, _ = cli("plan", path)
    assert out.count("not in the cache (built elsewhere or removed by gc)") == 3


def test_unknown_environment_fact_fails_only_that_stage(project, cli, monkeypatch):
    from ortflow_testplugin import Concat

    path = pipeline(project)
    monkeypatch.setattr(
        Concat,
        "env_facts",
        lambda self, params: ("gpu_driver",) if params["text"] == "+quant" else (),
    )
    code, _, err = cli("run", path, "--keep-going")
    assert code == 1
    assert (
        "stage 'quant' (concat) failed: stage type concat declares unknown environment fact 'gpu_driver'"
        in err
    )
    assert sorted(executions(project)) == ["side", "table"]


def test_out_holds_only_current_stages_as_links_to_the_cache(project, cli):
    """A stage taken out of the recipe takes its out/ folder with it (folders ortflow did not publish stay);
    published files are hard links to the read-only cache objects, not copies."""
    from conftest import two_stage_recipe

    path = two_stage_recipe(project, name="links")
    assert cli("run", path)[0] == 0
    out = project / "out/links"
    (out / "notes").mkdir()  # a user's own folder
    published = out / "second/joined.txt"
    digest = Lock.read(path.with_name("recipe.yaml.lock")).stages["second"].outputs["file"].digest
    obj = project / ".ortflow/objects" / digest[:2] / digest[2:]
    assert (
        published.stat().st_ino == obj.stat().st_ino and not published.stat().st_mode & 0o222
    )  # read-only
    path.write_text(
        path.read_text().replace(
            '  second: {uses: concat, in: {parts: [first.file]}, with: {text: "+2"}}\n', ""
        )
    )
    assert cli("run", path)[0] == 0
    assert (
        not (out / "second").exists()
        and (out / "first/joined.txt").exists()
        and (out / "notes").is_dir()
    )
