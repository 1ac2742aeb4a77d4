"""The CLI in a real pseudo-terminal, as people type it: live progress must never stop a run from ending.

Piped output (every other test) takes a different path through the console (no live display), which is
how a run that never returned in a terminal went unseen. Each test waits on what the terminal shows, with
a generous ceiling only so that a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from conftest import CEILING, PLUGINS, executions, write

pexpect = pytest.importorskip("pexpect")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def spawn(project: Path, *args: str, env: dict[str, str] | None = None) -> pexpect.spawn:
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("COLUMNS", None)  # a terminal has its own width
    full_env["TERM"] = "xterm-256color"
    full_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(PLUGINS), full_env.get("PYTHONPATH")])
    )
    return pexpect.spawn(
        sys.executable,
        ["-m", "ortflow.engine.cli", *args],
        cwd=str(project),
        env=full_env,
        encoding="utf-8",
        timeout=CEILING,
        dimensions=(40, 160),
    )


def finish(child: pexpect.spawn) -> tuple[int, str]:
    """Everything the terminal was sent until the process exits (colours removed), and its exit status."""
    child.expect(pexpect.EOF)
    child.close()
    code = child.exitstatus if child.exitstatus is not None else 128 + child.signalstatus
    return code, ANSI.sub("", child.before)


def chain(
    project: Path, second: str = 'uses: concat, in: {parts: [first.file]}, with: {text: "+2"}'
) -> Path:
    (project / "seed.txt").write_text("seed")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: tty
        inputs:
          seed: {{path: seed.txt}}
        stages:
          first: {{uses: concat, in: {{parts: inputs.seed}}, with: {{text: "+1", sleep: 0.5}}}}
          second: {{{second}}}
          side: {{uses: concat, in: {{parts: inputs.seed}}, with: {{text: "+s"}}}}
    """,
    )


def test_a_run_that_executes_stages_returns_with_its_table(project):
    chain(project)
    code, screen = finish(spawn(project, "run", "recipe.yaml"))
    assert code == 0, screen
    assert screen.count(" ran ") == 3 and "outputs and report" in screen
    assert (project / "out/tty/second/joined.txt").read_text() == "seed+1+2"


def test_a_cached_run_returns(project):
    chain(project)
    assert finish(spawn(project, "run", "recipe.yaml"))[0] == 0
    code, screen = finish(spawn(project, "run", "recipe.yaml"))
    assert code == 0, screen
    assert screen.count(" cached ") == 3 and executions(project).count("first") == 1


def test_a_stage_that_prints_and_logs_does_not_disturb_the_display(project):
    """Library chatter inside a stage goes to the run record, and the display still ends."""
    chain(project, second="uses: chatter, in: {file: first.file}")
    code, screen = finish(spawn(project, "run", "recipe.yaml"))
    assert code == 0, screen
    assert "chatter from inside the stage" not in screen  # captured into the run record
    assert "progress line from the stage" in screen  # ctx.log reaches the terminal


def test_a_failing_stage_exits_1_with_its_error(project):
    chain(project, second="uses: explode, in: {file: first.file}")
    code, screen = finish(spawn(project, "run", "recipe.yaml"))
    assert code == 1, screen
    assert "the input is unusable" in screen and "Traceback" not in screen


def test_keep_going_finishes_the_independent_branch(project):
    chain(project, second="uses: explode, in: {file: first.file}")
    code, screen = finish(spawn(project, "run", "recipe.yaml", "-k"))
    assert code == 1, screen
    assert (project / "out/tty/side/joined.txt").read_text() == "seed+s"
    assert "the input is unusable" in screen


def test_ctrl_c_exits_130_with_a_resume_hint(project):
    chain(project)
    child = spawn(project, "run", "recipe.yaml", env={"ORTFLOW_TEST_SLEEP": "second=600"})
    child.expect("second")  # the live display names the running stage
    while "second" not in executions(project) and child.isalive():  # the stage itself has started
        child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.1)
    child.sendintr()
    code, screen = finish(child)
    assert code == 130, screen
    assert "interrupted: finished stages are cached; run the same command again to resume" in screen
    assert "Traceback" not in screen


def test_console_text_prints_as_written(project, cli):
    """A location `recipe.yaml:100:13` once printed as `recipe.yaml💯13` (rich's emoji codes), and user text
    with brackets could be taken for markup: both print verbatim, piped and in a terminal."""
    folder = project / "a:100:b [bold]x"
    folder.mkdir()
    lines = ["version: 1", "name: verbatim", "stages:"] + [f"# {n}" for n in range(4, 100)]
    (folder / "recipe.yaml").write_text(
        "\n".join(lines + ['  x: {uses: "[bold]nosuch:100:"}']) + "\n"
    )
    expected = "recipe.yaml:100:13: stage 'x': unknown stage type '[bold]nosuch:100:'"
    code, out, err = cli("validate", folder / "recipe.yaml")
    assert code == 2 and f"a:100:b [bold]x/{expected}" in err and "\U0001f4af" not in err, err
    code, screen = finish(spawn(folder, "run", "recipe.yaml"))
    assert code == 2 and expected in screen and "\U0001f4af" not in screen, screen


def test_matrix_ids_print_as_written_in_a_terminal(project):
    """A matrix id is `stage[axis=value]`, which rich reads as a style tag wherever a str goes through
    markup (the spinner's text once did): the id and a value holding `[bold]` and `:100:` print verbatim."""
    (project / "seed.txt").write_text("seed")
    write(
        project / "recipe.yaml",
        """
        version: 1
        name: tty
        inputs:
          seed: {path: seed.txt}
        stages:
          first:
            uses: concat
            in: {parts: inputs.seed}
            with: {sleep: 0.6}
            matrix: {text: ["[bold]:100:"]}
    """,
    )
    code, screen = finish(spawn(project, "run", "recipe.yaml"))
    assert code == 0 and 'first[text="[bold]:100:"]' in screen and "\U0001f4af" not in screen, (
        screen
    )
