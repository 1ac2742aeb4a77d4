"""A recipe found the way dvc finds dvc.yaml when none is named (engine.cli.recipe_discovery): the one recipe in
the current folder, or `recipe:` in its ortflow.yaml; never a parent folder's; several are an error that
lists them. Toy recipes of the test plugin's `concat` stage: engine logic only."""

from __future__ import annotations

import json

from conftest import two_stage_recipe, write


def test_the_only_recipe_in_the_folder_is_used(project, cli):
    two_stage_recipe(project)
    write(
        project / "notes.yaml", "title: not a recipe\n"
    )  # YAML, but no version/stages: not a candidate
    write(project / "ortflow.yaml", "remote: file:///nowhere\n")
    code, out, err = cli("validate")
    assert code == 0, err
    assert (
        out.strip() == "recipe.yaml: valid — 2 stages, 1 input, 1 edge"
    )  # "1 input", not "1 inputs"


def test_a_name_that_is_not_a_file_is_a_stage_of_the_recipe_found(project, cli):
    two_stage_recipe(project)
    code, out, err = cli("plan", "first", "--json")
    assert code == 0, err
    assert [row["stage"] for row in json.loads(out)] == ["first"]
    code, out, err = cli("run", "first")
    assert code == 0, err
    assert " first " in out and " second " not in out


def test_a_named_file_is_the_recipe(project, cli):
    two_stage_recipe(project)
    (project / "recipe.yaml").rename(project / "first")  # a file named like a stage: the file wins
    code, out, err = cli("validate", "first")
    assert code == 0 and "first: valid" in out, err


def test_several_recipes_are_listed_not_guessed(project, cli):
    path = two_stage_recipe(project)
    write(project / "other.yaml", path.read_text())
    code, out, err = cli("status")
    assert code == 2 and out == ""
    assert "2 recipes in the current folder: other.yaml, recipe.yaml — name one" in err
    assert "recipe: other.yaml" in err  # how to make one the default


def test_ortflow_yaml_names_the_default(project, cli):
    path = two_stage_recipe(project)
    write(project / "other.yaml", path.read_text().replace("twostep", "other"))
    write(project / "ortflow.yaml", "recipe: other.yaml\n")
    code, out, err = cli("validate")
    assert code == 0 and out.startswith("other.yaml: valid"), err


def test_parent_folders_are_not_searched(project, cli, monkeypatch):
    two_stage_recipe(project)
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    code, _, err = cli("plan")
    assert code == 2 and "no recipe named, and none in the current folder" in err
    assert "parent folders are not searched" in err and "engine init MODEL" in err
    assert "required" not in err  # neither RECIPE nor STAGE is a required argument


def test_cache_pull_pulls_what_the_recipe_found_locks(project, cli, monkeypatch):
    import shutil

    monkeypatch.setenv(
        "ORTFLOW_SIGNING_KEY", "team-key-" + "3" * 32
    )  # a remote serves only signed records
    two_stage_recipe(project)
    remote = f"file://{project / 'remote'}"
    assert cli("run", "--push", "--remote", remote)[0] == 0
    shutil.rmtree(project / ".ortflow")
    code, out, err = cli("cache", "pull", "--remote", remote)
    assert code == 0 and "pulled 2 objects" in out, err
    assert cli("status")[0] == 0  # every stage up to date again, nothing run


def test_a_hostile_yaml_beside_the_recipe_is_no_candidate_and_no_crash(project, cli):
    two_stage_recipe(project)
    write(project / "deep.yaml", "version: 1\nstages: " + "[" * 30_000 + "]" * 30_000 + "\n")
    write(
        project / "bomb.yaml",
        "a: &a [x, x]\n"
        + "".join(f"{c}: &{c} [*{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
    )
    code, out, err = cli("validate")
    assert code == 0 and out.startswith("recipe.yaml: valid"), err
