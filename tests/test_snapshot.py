"""A validated recipe is reused only while nothing validation depends on has changed."""

from __future__ import annotations

from pathlib import Path

from conftest import executions, write
from ortflow_testplugin import Concat


def recipe(project: Path) -> Path:
    (project / "seed.txt").write_text("seed")
    return write(
        project / "recipe.yaml",
        """
        version: 1
        name: snap
        inputs:
          seed: {path: seed.txt}
        stages:
          a: {uses: concat, in: {parts: inputs.seed}, with: {text: "+a"}}
    """,
    )


def test_cached_rerun_uses_the_snapshot_and_an_edit_is_validated_again(project, cli):
    path = recipe(project)
    assert cli("run", path)[0] == 0
    assert len(list((project / ".ortflow/recipes").glob("*.json"))) == 1
    assert cli("run", path)[0] == 0
    assert (
        len(list((project / ".ortflow/recipes").glob("*.json"))) == 1
    )  # the same snapshot served it
    path.write_text(path.read_text().replace('text: "+a"', "text: 5"))
    code, _, err = cli("run", path)
    assert (
        code == 2 and "recipe.yaml:6:60: stage 'a' (concat): 'text' must be a string, got 5" in err
    )


def test_changed_stage_contract_forces_validation(project, cli, monkeypatch):
    path = recipe(project)
    assert cli("run", path)[0] == 0
    schema = {**Concat.params_schema, "required": ["colour"]}
    monkeypatch.setattr(Concat, "params_schema", schema)
    code, _, err = cli("run", path)
    assert code == 2 and "missing required key 'colour'" in err


def test_deleted_input_is_reported_not_crashed_on(project, cli):
    path = recipe(project)
    assert cli("run", path)[0] == 0
    (project / "seed.txt").unlink()
    code, _, err = cli("run", path)
    assert code == 2 and "input 'seed': file not found: seed.txt" in err
    assert executions(project) == ["a"]


def test_overrides_are_part_of_the_snapshot_key(project, cli):
    path = recipe(project)
    assert cli("run", path)[0] == 0
    assert cli("run", path, "--set", "a.with.text=+b")[0] == 0
    assert (project / "out/snap/a/joined.txt").read_text() == "seed+b"
    code, _, err = cli("run", path, "--set", "a.with.text=[1]")
    assert code == 2 and "--set a.with.text: stage 'a' (concat): 'text' must be a string" in err
