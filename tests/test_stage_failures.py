"""Typed failures: StageError is an OrtflowError, the context a stage's failure leaves (what it printed, its work
folder, the space left) is kept in the runner's FailureContext instead of being patched onto the exception, and
the exit codes are what they were."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from ortflow.api import GateFailed, OrtflowError, ProviderUnavailable, StageError
from ortflow.engine.cli import commands
from ortflow.engine.leaves.errors import EXIT_GATE_FAILED, EXIT_INTERNAL, EXIT_STAGE_FAILED

FAILING = """
import atexit
import json
import os

from ortflow.api import ArtifactKind, Port, Stage, StageContext, StageResult

RAISED = []


@atexit.register
def _say_what_the_error_carried():
    with open(os.environ["ATTRIBUTES_FILE"], "w") as f:
        json.dump([sorted(vars(exc)) for exc in RAISED], f)


class Fails(Stage):
    type = "fails"
    description = "Prints a line, then fails naming a file in its work folder."
    outputs = (Port("file", ArtifactKind.FILE, "never written", filename="never.txt"),)

    def run(self, ctx: StageContext) -> StageResult:
        print("about to fail")
        RAISED.append(ValueError(f"cannot parse {ctx.output_path('file')}"))
        raise RAISED[-1]
"""


def test_stage_error_is_an_ortflow_error_with_the_run_s_exit_code():
    assert issubclass(StageError, OrtflowError)
    assert issubclass(GateFailed, StageError) and issubclass(ProviderUnavailable, StageError)
    assert StageError("x").exit_code == EXIT_STAGE_FAILED
    assert GateFailed("x").exit_code == EXIT_GATE_FAILED


def test_a_failed_stage_s_context_is_kept_beside_its_error_not_patched_onto_it(tmp_path: Path):
    (tmp_path / "failing_stage.py").write_text(FAILING)
    info = tmp_path / "failing_stage-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: failing-stage\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[ortflow.stages]\nfails = failing_stage:Fails\n")
    (tmp_path / "recipe.yaml").write_text(
        textwrap.dedent("""\
        version: 1
        name: failing
        stages:
          broken: {uses: fails}
        """)
    )
    attributes = tmp_path / "attributes.json"
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    env |= {"NO_COLOR": "1", "ATTRIBUTES_FILE": str(attributes)}
    ran = subprocess.run(
        [sys.executable, "-m", "ortflow.engine.cli", "run", "recipe.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = ran.stdout + ran.stderr
    assert ran.returncode == EXIT_STAGE_FAILED, said
    # the context did its work: the work folder's path is taken out of the message ...
    assert "ValueError: cannot parse never.txt" in said and str(tmp_path / ".ortflow") not in said
    # ... and the exception the stage raised carries nothing the engine put on it
    assert attributes.read_text() == "[[]]"


def test_a_stage_error_that_reaches_the_cli_is_still_said_as_an_engine_bug(cli, monkeypatch):
    """The scheduler turns a StageError into the stage's outcome; one that escapes it is ortflow's bug (exit 4),
    as before StageError was an OrtflowError (whose own exit code would have been printed as a verdict)."""

    def escapes(args, out):
        raise StageError("a verdict outside any stage")

    monkeypatch.setattr(commands, "cmd_stages", escapes)
    code, _, err = cli("stages")
    assert code == EXIT_INTERNAL
    assert "internal error (a bug in ortflow): StageError: a verdict outside any stage" in err
