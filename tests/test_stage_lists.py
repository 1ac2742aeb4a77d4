"""Adding a built-in stage is one edit beyond its module: its line in [project.entry-points."ortflow.stages"]. The
import-linter contracts that keep stages apart (.ci/stage_contracts.py) read the stages from the installed entry points
at lint time, so there is no list to keep in step by hand (the two lists that were could miss a stage:
stages/graphs/attention_fusion.py was in neither). A plugin's stage takes one edit too: its entry point line."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "ortflow", "engine", "stages", "loaders", "schemas")
INDEPENDENCE = "stages import each other only through the registry"
SHARED = "what stages share (by theme) imports no stage"
ENTRY_POINTS = '[project.entry-points."ortflow.stages"]\n'
STAGE = """
from ortflow.api import ArtifactKind, Port, Stage, StageContext, StageResult


class Shout(Stage):
    type = "shout"
    description = "Writes its text in capitals (a stage added by one entry point)."
    outputs = (Port("file", ArtifactKind.FILE, "the text", filename="shout.txt"),)
    params_schema = {"type": "object", "additionalProperties": False,
                     "properties": {"text": {"type": "string", "default": "hello"}}}

    def run(self, ctx: StageContext) -> StageResult:
        ctx.output_path("file").write_text(ctx.params["text"].upper())
        return StageResult(summary="shouted")
"""

RECIPE = textwrap.dedent("""\
    version: 1
    name: one-edit
    stages:
      loud: {uses: shout, with: {text: one edit}}
    """)


def lint_imports(installed: Path, config: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over an installed copy, as .ci/lint runs it (.ci/ on the path for the stage contracts)."""
    return subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]
        + ["--config", str(config)],
        cwd=installed,
        env={
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": f"{installed}:{ROOT / '.ci'}",
            "HOME": str(installed),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def contract_line(lint: subprocess.CompletedProcess[str], name: str) -> str:
    return next(line for line in lint.stdout.splitlines() if line.startswith(name))


@pytest.mark.e2e  # a pip install of a copy of the source and a lint (7-16 s): CI's e2e step
def test_a_built_in_stage_is_added_by_its_module_and_one_entry_point(tmp_path):
    """A copy of the source with a new stage module and its entry-point line, nothing else: installed, the lint keeps
    it apart from the other stages (a stage importing another breaks it, so the list holds the new stage), a module
    left in the top folder without an entry point breaks it with the fix, and the registry lists and runs the stage."""
    pytest.importorskip("importlinter")
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy(ROOT / name, source / name)
    (source / "stages" / "shout.py").write_text(STAGE)
    pyproject = source / "pyproject.toml"
    text = pyproject.read_text()
    assert ENTRY_POINTS in text
    pyproject.write_text(
        text.replace(ENTRY_POINTS, ENTRY_POINTS + 'shout = "ortflow.stages.shout:Shout"\n')
    )  # the edit
    installed = tmp_path / "installed"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(installed),
            str(source),
        ],
        check=True,
        timeout=300,
    )
    lint = lint_imports(installed, pyproject)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert contract_line(lint, INDEPENDENCE).endswith("KEPT")

    shout = installed / "ortflow" / "stages" / "shout.py"
    shout.write_text("import ortflow.stages.select  # noqa: F401\n" + STAGE)
    lint = lint_imports(installed, pyproject)
    assert lint.returncode == 1 and contract_line(lint, INDEPENDENCE).endswith("BROKEN")
    assert "ortflow.stages.shout is not allowed to import ortflow.stages.select" in lint.stdout
    shout.write_text(STAGE)
    (installed / "ortflow" / "stages" / "stray.py").write_text("HELPER = 1\n")
    lint = lint_imports(installed, pyproject)
    assert lint.returncode == 1 and contract_line(lint, SHARED).endswith("BROKEN")
    assert "ortflow.stages.stray: a module in ortflow.stages's top folder" in lint.stdout
    (installed / "ortflow" / "stages" / "stray.py").unlink()

    (installed / "recipe.yaml").write_text(RECIPE)
    env = {
        "PYTHONPATH": str(installed),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
    }
    run = [sys.executable, "-m", "ortflow.engine.cli"]
    listed = subprocess.run(
        [*run, "stages"], cwd=installed, env=env, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0 and "ortflow.stages.shout:Shout" in listed.stdout, listed.stdout
    ran = subprocess.run(
        [*run, "run", "recipe.yaml"],
        cwd=installed,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0 and "shouted" in ran.stdout, ran.stderr
    assert [p.read_text() for p in installed.rglob("shout.txt")][:1] == ["ONE EDIT"]


def test_a_plugin_stage_is_added_by_one_entry_point_and_runs(tmp_path):
    """The module and one entry-point line: `engine stages` lists it and a recipe runs it."""
    (tmp_path / "shout_stage.py").write_text(STAGE)
    info = tmp_path / "shout_stage-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-stage\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[ortflow.stages]\nshout = shout_stage:Shout\n"
    )  # the one edit
    (tmp_path / "recipe.yaml").write_text(RECIPE)
    env = {
        "PYTHONPATH": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
    }
    run = [sys.executable, "-m", "ortflow.engine.cli"]
    listed = subprocess.run(
        [*run, "stages"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert listed.returncode == 0 and "shout_stage:Shout (shout-stage)" in listed.stdout
    ran = subprocess.run(
        [*run, "run", "recipe.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    assert "shouted" in ran.stdout
    assert [p.read_text() for p in tmp_path.rglob("shout.txt")][:1] == ["ONE EDIT"]
