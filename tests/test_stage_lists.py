"""Adding a built-in stage: the module in stages/, its line in [project.entry-points."ortflow.stages"] and its name
in pyproject's two import-linter stage lists (docs/plugins.md). The lists are checked against the entry points here,
so a stage missing from them (the attention-fusion helper was, in the stages' top folder) fails this
test instead of escaping the isolation contracts. A plugin's stage takes one edit: its entry point line."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INDEPENDENCE = "stages import each other only through the registry"
SHARED = "what stages share (by theme) imports no stage"


def stage_list_problems(root: Path) -> list[str]:
    """What the entry points, the stages' top folder and the two import-linter lists disagree on, as the fix."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the check is the same on every version
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    points = config["project"]["entry-points"]["ortflow.stages"]
    declared = {target.split(":")[0] for target in points.values()}
    files = {
        f"ortflow.stages.{p.stem}" for p in (root / "stages").glob("*.py") if p.stem != "__init__"
    }
    themes = {f"ortflow.stages.{p.parent.name}" for p in (root / "stages").glob("*/__init__.py")}
    contracts = {c["name"]: c for c in config["tool"]["importlinter"]["contracts"]}
    problems = [
        f"stages/{m.rpartition('.')[2]}.py is in stages/'s top folder, which holds only stages: give it an entry "
        f'point in [project.entry-points."ortflow.stages"], or move a helper into a theme package (stages/graphs/ ...)'
        for m in sorted(files - declared)
    ]
    problems += [
        f"{m}: an entry point names a module with no file in stages/'s top folder"
        for m in sorted(declared - files)
    ]
    lists = {
        f"[{INDEPENDENCE!r}] modules": set(contracts[INDEPENDENCE]["modules"]),
        f"[{SHARED!r}] forbidden_modules": set(contracts[SHARED]["forbidden_modules"]),
    }
    for where, listed in lists.items():
        problems += [
            f"add {m!r} to pyproject's import-linter {where}" for m in sorted(files - listed)
        ]
        problems += [
            f"remove {m!r} from pyproject's import-linter {where}: no such stage"
            for m in sorted(listed - files)
        ]
    sources = set(contracts[SHARED]["source_modules"])
    problems += [f"add {t!r} to [{SHARED!r}] source_modules" for t in sorted(themes - sources)]
    return problems


def test_import_linter_stage_lists_match_the_entry_points():
    assert stage_list_problems(ROOT) == []


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


def test_a_built_in_stage_missing_from_the_lists_is_named_with_its_fix(tmp_path):
    """A copy of the repository's pyproject and stages/ with a new stage module and its entry point, nothing else:
    the check names the two lists still to edit (and is clean once they are)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "stages", tmp_path / "stages", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "stages" / "shout.py").write_text(STAGE)
    assert "stages/shout.py is in stages/'s top folder" in stage_list_problems(tmp_path)[0]
    text = (tmp_path / "pyproject.toml").read_text()
    text = text.replace(
        '[project.entry-points."ortflow.stages"]\n',
        '[project.entry-points."ortflow.stages"]\nshout = "ortflow.stages.shout:Shout"\n',
    )
    (tmp_path / "pyproject.toml").write_text(text)
    assert [p.split(" to ")[0] for p in stage_list_problems(tmp_path)] == [
        "add 'ortflow.stages.shout'"
    ] * 2
    text = text.replace(
        '"ortflow.stages.benchmark",', '"ortflow.stages.benchmark", "ortflow.stages.shout",'
    )
    (tmp_path / "pyproject.toml").write_text(text)
    assert stage_list_problems(tmp_path) == []


def test_a_plugin_stage_is_added_by_one_entry_point_and_runs(tmp_path):
    """The module and one entry-point line: `engine stages` lists it and a recipe runs it."""
    (tmp_path / "shout_stage.py").write_text(STAGE)
    info = tmp_path / "shout_stage-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-stage\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[ortflow.stages]\nshout = shout_stage:Shout\n"
    )  # the one edit
    (tmp_path / "recipe.yaml").write_text(
        textwrap.dedent("""\
        version: 1
        name: one-edit
        stages:
          loud: {uses: shout, with: {text: one edit}}
        """)
    )
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
