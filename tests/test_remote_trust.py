"""Remotes are a trust boundary by default (docs/security.md): a record pulled from a remote is served only
signed with the team's key, unless the user accepted unsigned records, and even then not when it names
another stage's object. Two concat stages (the test plugin) and a file:// remote: each test runs in about a
second; what the checks need is records and objects, not a model."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from conftest import executions, two_stage_recipe, write

from ortflow.engine.leaves.errors import EXIT_OK, EXIT_STAGE_FAILED, EXIT_USAGE

KEY_A, KEY_B = "team-key-a-" + "1" * 40, "team-key-b-" + "2" * 40


@pytest.fixture(autouse=True)
def no_team_key(monkeypatch):
    for name in (
        "ORTFLOW_SIGNING_KEY",
        "ORTFLOW_SIGNING_KEY_FILE",
        "ORTFLOW_SIGNING_KEYS_PREVIOUS",
        "ORTFLOW_REMOTE",
    ):
        monkeypatch.delenv(name, raising=False)


def built(project: Path, cli, remote: Path, *push_flags: str) -> Path:
    """The two-stage recipe run and pushed to a folder remote (with `push_flags`)."""
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == EXIT_OK
    code, out, err = cli("cache", "push", recipe, "--remote", f"file://{remote}", *push_flags)
    assert code == EXIT_OK and "2 run records" in out, out + err
    return recipe


def fresh(project: Path, name: str, lock: bool = False) -> Path:
    """Another workspace with the recipe (and its lock file when `lock`), no cache."""
    where = project / name
    where.mkdir()
    for item in ("recipe.yaml", "seed.txt") + (("recipe.yaml.lock",) if lock else ()):
        shutil.copyfile(project / item, where / item)
    return where / "recipe.yaml"


def remote_records(remote: Path) -> dict[str, dict]:
    """{stage: record} on the folder remote."""
    found = {}
    for path in remote.glob("runs/*/*.json"):
        record = json.loads(path.read_text())
        found[record["stage"]] = record
    return found


def rewrite(remote: Path, record: dict) -> None:
    path = remote / "runs" / record["key"][:2] / f"{record['key']}.json"
    path.chmod(stat.S_IWUSR | stat.S_IRUSR)
    path.write_text(json.dumps(record))


def test_an_unsigned_remote_record_is_refused_by_default_and_served_only_with_the_opt_in(
    project, cli, monkeypatch
):
    remote = project / "remote"
    recipe = built(project, cli, remote, "--allow-unsigned")
    code, _, err = cli("cache", "push", recipe, "--remote", f"file://{remote}")
    assert code == EXIT_USAGE and "no ORTFLOW_SIGNING_KEY" in err and "--allow-unsigned" in err

    clone = fresh(project, "laptop", lock=True)
    code, _, err = cli("cache", "pull", clone, "--remote", f"file://{remote}")
    assert code == EXIT_STAGE_FAILED and err.count("it is unsigned") == 2
    assert "first not pulled" in err and "second not pulled" in err

    code, out, err = cli(
        "run", clone, "--remote", f"file://{remote}"
    )  # read-through: a warning a stage
    assert code == EXIT_OK and executions(project)[-2:] == ["first", "second"]
    warnings = [line for line in err.splitlines() if "not pulled" in line]
    assert len(warnings) == 2 and "first not pulled: it is unsigned" in warnings[0], err
    keys = [record["key"][:12] for record in remote_records(remote).values()]
    assert not any(key in line for line in warnings for key in keys)  # the stage, not the key twice

    other = fresh(project, "deploy", lock=True)
    code, out, err = cli("run", other, "--remote", f"file://{remote}", "--allow-unsigned")
    assert code == EXIT_OK and "pulled first" in out and "pulled second" in out, err
    assert executions(project)[-1] == "second"  # nothing ran in `deploy`
    third = fresh(project, "ci", lock=True)  # the opt-in from the project file
    write(
        third.parent / "ortflow.yaml", f"remote: {{url: 'file://{remote}', allow_unsigned: true}}"
    )
    code, out, _ = cli("cache", "pull", third)
    assert code == EXIT_OK and "2 run records" in out
    keyed = fresh(
        project, "keyed", lock=True
    )  # a cache with the key serves only signed records: said
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", KEY_A)
    code, _, err = cli("cache", "pull", keyed, "--remote", f"file://{remote}", "--allow-unsigned")
    assert code == EXIT_STAGE_FAILED and err.count("which this machine holds") == 2


def test_a_remote_record_naming_another_stages_object_is_not_served_without_a_lock_entry(
    project, cli
):
    remote = project / "remote"
    built(project, cli, remote, "--allow-unsigned")
    records = remote_records(remote)
    swapped = dict(records["second"], outputs=records["first"]["outputs"])
    rewrite(remote, swapped)  # `second` now says it made `first`'s file

    clone = fresh(project, "new-workspace")  # no lock file: nothing else says what `second` made
    code, _, err = cli("run", clone, "--remote", f"file://{remote}", "--allow-unsigned")
    assert code == EXIT_OK, err
    assert "second not pulled: it is unsigned and its output 'file' is object" in err
    assert executions(project)[-1] == "second"  # rebuilt here
    out_file = clone.parent / "out" / "twostep" / "second" / "joined.txt"
    assert out_file.read_text() == "seed+1+2"
    lock = (clone.parent / "recipe.yaml.lock").read_text()
    assert (
        records["second"]["outputs"]["file"]["digest"] in lock
    )  # the swap is not written into the lock

    code, out, err = cli("cache", "verify", "--remote", f"file://{remote}", "--allow-unsigned")
    assert code == EXIT_STAGE_FAILED and f"damaged run {swapped['key']}" in err


def test_rotation_verifies_previous_keys_and_signs_with_the_current_one(project, cli, monkeypatch):
    from ortflow.engine.store.signing import sign

    remote = project / "remote"
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", KEY_A)
    built(project, cli, remote)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", KEY_B)  # rotated: A is no longer the key
    code, _, err = cli(
        "cache", "pull", fresh(project, "no-previous", lock=True), "--remote", f"file://{remote}"
    )
    assert (
        code == EXIT_STAGE_FAILED
        and err.count("not signed with this team's ORTFLOW_SIGNING_KEY") == 2
    )

    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", f"old-unused-{KEY_B}\n{KEY_A}")
    clone = fresh(project, "with-previous", lock=True)
    code, out, err = cli("cache", "pull", clone, "--remote", f"file://{remote}")
    assert code == EXIT_OK and "2 run records" in out, err

    code, out, err = cli(
        "cache", "sign", "--remote", f"file://{remote}"
    )  # only A verifies them: kept
    assert code == EXIT_OK and "signed 0 run records" in out and "2 skipped" in out, out + err
    code, out, err = cli("cache", "sign", "--remote", f"file://{remote}", "--resign-previous")
    assert code == EXIT_OK and "signed 2 run records" in out, err
    assert "signed 0 run records" in cli("cache", "sign", "--remote", f"file://{remote}")[1]
    monkeypatch.delenv("ORTFLOW_SIGNING_KEYS_PREVIOUS")
    for record in remote_records(remote).values():
        body = {k: v for k, v in record.items() if k != "signature"}
        from ortflow.engine.contracts.builds import canonical_json

        assert record["signature"] == sign(KEY_B.encode(), canonical_json(body).encode())
    code, out, _ = cli(
        "cache", "pull", fresh(project, "after", lock=True), "--remote", f"file://{remote}"
    )
    assert code == EXIT_OK and "2 run records" in out


def test_verify_remote_names_unsigned_records_and_says_intact_only_once_they_are_signed(
    project, cli, monkeypatch
):
    remote = project / "remote"
    built(project, cli, remote, "--allow-unsigned")
    code, out, err = cli("cache", "verify", "--remote", f"file://{remote}")
    assert code == EXIT_STAGE_FAILED and "intact" not in out
    assert "2 run records not signed with the team's key" in err
    assert "first (" in err and "second (" in err and "engine cache sign --remote" in err

    code, out, _ = cli("cache", "verify", "--remote", f"file://{remote}", "--allow-unsigned")
    assert code == EXIT_OK and "accepted by --allow-unsigned: first" in out and "intact" in out

    key_file = project / "keys" / "team.key"
    code, out, err = cli("cache", "key", "new", key_file)
    key = key_file.read_text().strip()
    assert code == EXIT_OK and stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key) == 64
    assert key not in out + err and "ORTFLOW_SIGNING_KEY_FILE" in out  # never echoed
    assert cli("cache", "key", "new", key_file)[0] == EXIT_USAGE  # never overwritten
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY_FILE", str(key_file))

    damaged = next(remote.glob("objects/*/*"))  # a record naming a damaged object is not signed
    damaged.chmod(stat.S_IWUSR | stat.S_IRUSR)
    good_bytes = damaged.read_bytes()
    damaged.write_bytes(b"tampered")
    code, out, err = cli("cache", "sign", "--remote", f"file://{remote}")
    assert (
        code == EXIT_STAGE_FAILED
        and "not signed: run record" in err
        and "signed 1 run records" in out
    )
    damaged.write_bytes(good_bytes)
    code, out, err = cli("cache", "sign", "--remote", f"file://{remote}")
    assert code == EXIT_OK and "signed 1 run records" in out and "1 already signed" in out, err
    code, out, err = cli("cache", "verify", "--remote", f"file://{remote}")
    assert code == EXIT_OK and "intact" in out and "not signed" not in err


def test_a_folder_manifest_naming_a_file_and_its_folder_is_refused(project, cli, monkeypatch):
    from ortflow.engine.store.hashing import hash_bytes

    remote = project / "remote"
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", KEY_A)
    built(project, cli, remote)
    present = next(remote.glob("objects/*/*"))  # every file it lists is on the remote and intact
    member = present.parent.name + present.name
    for manifest, refused in (
        ({"a": member, "a/b.onnx": member}, True),
        ({"a.onnx": member, "ab/b.onnx": member}, False),
    ):
        digest = hash_bytes(json.dumps(manifest, sort_keys=True).encode())
        tree = remote / "trees" / digest[:2] / f"{digest}.json"
        tree.parent.mkdir(parents=True, exist_ok=True)
        tree.write_text(json.dumps(manifest))
        code, out, err = cli("cache", "verify", "--remote", f"file://{remote}")
        if refused:
            assert code == EXIT_STAGE_FAILED and f"damaged folder {digest}" in err
            assert "names 'a' both as a file and as the folder of 'a/b.onnx'" in err
            tree.unlink()
        else:
            assert code == EXIT_OK and "intact" in out, err


def test_a_worker_without_the_team_key_does_not_publish_unsigned_records(project, cli):
    from ortflow.engine.leaves.errors import StoreError
    from ortflow.engine.store.remote import Remote
    from ortflow.engine.store.remote_trust import for_remote

    (project / "remote").mkdir()
    record = {"key": "0" * 64, "outputs": {}}
    with pytest.raises(StoreError, match="no ORTFLOW_SIGNING_KEY"):
        for_remote(record, Remote(f"file://{project / 'remote'}"))
    assert for_remote(record, Remote(f"file://{project / 'remote'}", allow_unsigned=True)) == record
