"""Issue 38, finding 6: text that did not come from the engine (a record's summary and stage, recipe file
names, missing paths, a plugin's error message) cannot drive the terminal. Run under a real pseudo-terminal
and read raw, colours included: a control sequence that reaches it is there byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import conftest
import pytest
from conftest import two_stage_recipe, write

from ortflow.engine.leaves.terminal_text import printable

pexpect = pytest.importorskip("pexpect")

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b[31m\u202e"
SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31m\\u202e"
RAW = ("\x1b]0;", "\x1b[2J", "\x07", "\u202e")


def raw_terminal(project: Path, *args: str) -> tuple[int, str]:
    """`engine ARGS` in a pseudo-terminal: its exit code and every character the terminal was sent."""
    return conftest.raw_terminal(project, *args, size=(50, 400), plugins=True)


def reached(text: str) -> list[str]:
    return [sequence for sequence in RAW if sequence in text]


def test_the_rule_escapes_controls_and_keeps_text():
    assert printable(HOSTILE) == SHOWN
    assert printable("a\tb\nc — ü 日本") == "a\tb\nc — ü 日本"
    assert printable("\x9b31m\x7f") == "\\x9b31m\\x7f"


def test_a_records_summary_and_stage_are_shown_escaped(project, cli):
    recipe = two_stage_recipe(project)
    assert cli("run", recipe)[0] == 0
    for path in (project / ".ortflow" / "runs").glob("*/*.json"):  # a local cache without a key
        record = json.loads(path.read_text())
        if record["stage"] == "second":
            record["summary"] = f"all good {HOSTILE}"
            record["stage"] = f"sec{HOSTILE}ond"
            path.chmod(0o644)
            path.write_text(json.dumps(record))
    for args in (("run", str(recipe)), ("cache", "ls")):
        code, shown = raw_terminal(project, *args)
        assert code == 0 and not reached(shown), (args, shown)
        assert SHOWN in shown, (args, shown)


def test_file_names_paths_and_plugin_messages_are_shown_escaped(project):
    (project / "seed.txt").write_text("seed")
    name = f"r{HOSTILE}.yaml"
    write(
        project / name,
        f"""
        version: 1
        name: hostile
        inputs:
          seed: {{path: seed.txt}}
        stages:
          a: {{uses: explode, in: {{file: inputs.seed}}, with: {{message: {json.dumps(HOSTILE)}}}}}
        """,
    )
    code, shown = raw_terminal(project, "run", name)
    assert code == 1 and not reached(shown) and SHOWN in shown, shown
    write(
        project / "missing.yaml",
        f"version: 1\nname: m\ninputs:\n  m: {{path: {json.dumps(f'gone{HOSTILE}.onnx')}}}\nstages: {{}}\n",
    )
    code, shown = raw_terminal(project, "validate", "missing.yaml")
    assert code == 2 and not reached(shown) and f"gone{SHOWN}.onnx" in shown, shown
    code, shown = raw_terminal(project, "validate", name, "--debug")
    assert not reached(shown), shown


def test_the_html_report_shows_the_same_escape(project, cli):
    from ortflow.engine.publish.report_html import _e

    assert _e(f"<b>{HOSTILE}") == "&lt;b&gt;" + SHOWN
