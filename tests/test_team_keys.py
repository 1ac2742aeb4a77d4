"""Issue 38, findings 1-4 and 7: team keys that cannot leak or linger, and plugins that cannot exit silently.
Each test drives the CLI the way the audit did (a folder remote, the test plugin's concat stages)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import PLUGINS, two_stage_recipe
from test_remote_trust import built, fresh, remote_records, rewrite

from ortflow.engine.contracts.builds import canonical_json
from ortflow.engine.leaves.errors import EXIT_OK, EXIT_STAGE_FAILED, EXIT_USAGE
from ortflow.engine.store.signing import sign

NEW_KEY = "c0ffee" * 10 + "abcd"  # 64 hex digits, as `engine cache key new` writes
OLD_KEY = "old-team-key-" + "9" * 40


@pytest.fixture(autouse=True)
def no_team_key(monkeypatch):
    for name in (
        "ORTFLOW_SIGNING_KEY",
        "ORTFLOW_SIGNING_KEY_FILE",
        "ORTFLOW_SIGNING_KEYS_PREVIOUS",
        "ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE",
        "ORTFLOW_REMOTE",
    ):
        monkeypatch.delenv(name, raising=False)


def forged(record: dict, key: str) -> dict:
    """The record with its summary changed and signed with `key` (what a holder of a leaked key can write)."""
    body = {k: v for k, v in record.items() if k != "signature"}
    body["summary"] = "forged"
    return {**body, "signature": sign(key.encode(), canonical_json(body).encode())}


def test_a_key_where_a_path_belongs_is_refused_and_never_printed(project, cli, monkeypatch):
    recipe = two_stage_recipe(project)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY_FILE", NEW_KEY)
    for args in (("run", recipe), ("run", recipe, "--debug"), ("cache", "push", recipe)):
        code, out, err = cli(*args, "--remote", f"file://{project / 'remote'}")
        assert code == EXIT_USAGE and "holds what looks like a key, not a path" in err, err
        assert NEW_KEY not in out + err and NEW_KEY[:16] not in out + err
    monkeypatch.setenv(
        "ORTFLOW_SIGNING_KEY_FILE", "short secret/x"
    )  # not a key's shape: a missing file
    code, out, err = cli("run", recipe, "--debug")
    assert code == EXIT_USAGE and "the file it names cannot be read" in err
    assert "short secret" not in out + err


def test_the_redactor_masks_a_key_variable_in_any_text(monkeypatch):
    from ortflow.engine.leaves.secrets import redact

    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", NEW_KEY)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", f"{OLD_KEY}\nanother-old-key-" + "7" * 30)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG")
    text = redact(f"boom: {NEW_KEY} / {OLD_KEY} / wJalrXUtnFEMI/K7MDENG (FileNotFoundError)")
    assert text == "boom: *** / *** / *** (FileNotFoundError)"
    monkeypatch.setenv(
        "PIP_KEYRING_PROVIDER", "subprocess"
    )  # a setting, not a secret: left as it is
    assert redact('File "subprocess.py"') == 'File "subprocess.py"'


def test_both_key_variables_set_warns_which_wins(project, cli, monkeypatch, tmp_path):
    key_file = tmp_path / "team.key"
    key_file.write_text(NEW_KEY)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", OLD_KEY)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY_FILE", str(key_file))
    code, _, err = cli("run", two_stage_recipe(project))
    assert code == EXIT_OK
    assert err.count("both $ORTFLOW_SIGNING_KEY and $ORTFLOW_SIGNING_KEY_FILE are set") == 1, err
    assert "$ORTFLOW_SIGNING_KEY wins" in err and OLD_KEY not in err


def test_previous_keys_never_split_inside_a_key_and_weak_keys_are_refused(
    project, cli, monkeypatch
):
    remote = project / "remote"
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", OLD_KEY)
    built(project, cli, remote)
    first = remote_records(remote)["first"]
    rewrite(remote, forged(first, "weak"))  # signed with the part before the comma
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", NEW_KEY)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", f"weak,{OLD_KEY}")
    code, out, err = cli(
        "cache", "pull", fresh(project, "a", lock=True), "--remote", f"file://{remote}"
    )
    assert code == EXIT_STAGE_FAILED and "first not pulled" in err, out + err
    assert "is read as ONE key" in err

    keys = project / "previous.keys"  # the file form: one a line, a comma is part of a key
    keys.write_text(f"# rotated out 2026-11\nweak,{OLD_KEY}\n{OLD_KEY}\n")
    monkeypatch.delenv("ORTFLOW_SIGNING_KEYS_PREVIOUS")
    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE", str(keys))
    code, out, err = cli(
        "cache", "pull", fresh(project, "b", lock=True), "--remote", f"file://{remote}"
    )
    assert code == EXIT_STAGE_FAILED and "1 run records" in out and "first not pulled" in err

    keys.write_text("weak\n")  # an existing weak previous key: served, with the fix named
    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", OLD_KEY)
    code, out, err = cli(
        "cache", "pull", fresh(project, "c", lock=True), "--remote", f"file://{remote}"
    )
    assert code == EXIT_OK and "previous team key 1 has 4 characters" in err, out + err
    assert "--resign-previous" in err

    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "team-key")  # a new, current key below the minimum
    code, out, err = cli("run", fresh(project, "d", lock=True))
    assert code == EXIT_USAGE and "has 8 characters; a key that signs needs at least 32" in err


def test_cache_sign_leaves_records_only_a_previous_key_verifies_unless_told(
    project, cli, monkeypatch
):
    remote = project / "remote"
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", OLD_KEY)
    built(project, cli, remote)
    leaked = "leaked-previous-key-" + "5" * 40
    rewrite(remote, forged(remote_records(remote)["first"], leaked))
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", NEW_KEY)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", f"{leaked}\n{OLD_KEY}")
    code, out, err = cli("cache", "sign", "--remote", f"file://{remote}")
    assert code == EXIT_OK and "signed 0 run records" in out and "2 skipped" in out, out + err
    assert "skipped 2 run records signed only with a previous key (first, second)" in err
    record = remote_records(remote)["first"]
    assert (
        record["signature"] == forged(record, leaked)["signature"]
    )  # not vouched for by the new key

    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", OLD_KEY)  # the leaked key revoked
    code, out, err = cli("cache", "sign", "--remote", f"file://{remote}", "--resign-previous")
    assert code == EXIT_STAGE_FAILED and "signed 1 run records (second)" in out
    assert "not signed: run record" in err and "(first)" in err
    monkeypatch.delenv("ORTFLOW_SIGNING_KEYS_PREVIOUS")  # the revoked key verifies nothing
    code, out, err = cli(
        "cache", "pull", fresh(project, "e", lock=True), "--remote", f"file://{remote}"
    )
    assert "1 run records" in out and "first not pulled" in err
    code, out, err = cli(
        "cache", "verify", "--remote", f"file://{remote}"
    )  # the procedure's last check
    assert code == EXIT_STAGE_FAILED and "intact" not in out
    assert f"damaged run {record['key']}" in err and "second" not in err


def plugin_dist(where: Path, body: str) -> Path:
    """An installed plugin whose module runs `body` at import (a dist-info folder on the path)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "ortflow_quitter.py").write_text(textwrap.dedent(body))
    info = where / "ortflow_quitter-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ortflow-quitter\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ortflow.stages]\nquitter = ortflow_quitter:Quitter\n")
    return where


@pytest.mark.parametrize(
    "body, said",
    [
        ("import sys\nsys.exit(0)\n", "called sys.exit(0)"),
        ("raise KeyboardInterrupt\n", "raised KeyboardInterrupt"),
    ],
)
def test_a_plugin_that_exits_at_import_is_an_error_naming_it(project, body, said):
    where = plugin_dist(project / "site", body)
    recipe = project / "recipe.yaml"
    recipe.write_text("version: 1\nname: q\nstages:\n  a: {uses: quitter}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(where), str(PLUGINS)]))
    for args in (["stages", "quitter"], ["run", str(recipe)], ["stages"]):
        done = subprocess.run(
            [sys.executable, "-m", "ortflow.engine.cli", *args],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            check=False,
        )
        shown = " ".join((done.stdout + done.stderr).replace("│", " ").split())
        assert "plugin 'quitter' (ortflow_quitter:Quitter, from ortflow-quitter) " + said in shown
        # the listing shows the broken plugin in its row, beside the others; the rest end with exit 2
        assert done.returncode == (EXIT_OK if args == ["stages"] else EXIT_USAGE), shown


def test_ctrl_c_while_a_slow_plugin_imports_is_an_interruption_not_the_plugins_fault(project):
    marker = project / "importing"
    where = plugin_dist(
        project / "site",
        f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\ntime.sleep(60)\n",
    )
    (project / "recipe.yaml").write_text("version: 1\nname: q\nstages:\n  a: {uses: quitter}\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(where), str(PLUGINS)]))
    child = subprocess.Popen(
        [sys.executable, "-m", "ortflow.engine.cli", "run", "recipe.yaml"],
        env=env,
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130 and "interrupted" in err and "plugin 'quitter'" not in err, err


def test_the_old_comma_form_still_splits_keys_that_cannot_hold_a_comma():
    from ortflow.engine.store.team_keys import split_previous

    hex_a, hex_b = "a" * 64, "0123456789abcdef" * 4
    assert split_previous(f"{hex_a},{hex_b}") == [
        hex_a,
        hex_b,
    ]  # what `engine cache key new` writes
    assert split_previous(f"weak,{OLD_KEY}") == [f"weak,{OLD_KEY}"]  # anything else: one key
    assert split_previous(f" {OLD_KEY}\n\nweak,x \n") == [OLD_KEY, "weak,x"]
