"""engine/recipe/overrides.py: `--set KEY=VALUE` and params files applied to a parsed recipe before validation,
each value remembering which override set it (so an error about it names the override, not the file)."""

from __future__ import annotations

import pytest

from ortflow.engine.leaves.errors import RecipeError
from ortflow.engine.recipe.overrides import apply_overrides

from .helpers import parsed

RECIPE = """
version: 1
name: r
inputs:
  model: {path: model.onnx}
stages:
  opt: {uses: graph_optimization, in: {model: inputs.model}, with: {level: basic}}
  int8:
    uses: quantize_static
    in: {model: opt.model}
    matrix: {per_channel: [true, false]}
"""


def applied(*sets: str, params_file=None):
    data, source = parsed(RECIPE)
    problems = apply_overrides(data, source, list(sets), params_file)
    return data, source, problems


def test_a_stage_key_is_short_for_stages_and_values_read_as_yaml():
    data, source, problems = applied(
        "opt.with.level=all", "stages.opt.with.threads=2", "opt.with.flags=[a, b]"
    )
    assert not problems
    assert data["stages"]["opt"]["with"] == {"level": "all", "threads": 2, "flags": ["a", "b"]}
    assert str(source.locate(("stages", "opt", "with", "level"))) == "--set opt.with.level"
    assert (
        str(source.locate(("stages", "opt", "with", "threads"))) == "--set stages.opt.with.threads"
    )


def test_an_empty_value_is_the_empty_string_and_only_the_first_equals_splits():
    data, _, problems = applied("opt.with.note=", "opt.with.expr=a=b")
    assert (
        not problems
        and data["stages"]["opt"]["with"]["note"] == ""
        and data["stages"]["opt"]["with"]["expr"] == "a=b"
    )


def test_a_dotted_matrix_axis_stays_one_key():
    data, _, problems = applied("int8.matrix.extra_options.ActivationSymmetric=[true]")
    assert not problems
    assert data["stages"]["int8"]["matrix"]["extra_options.ActivationSymmetric"] == [True]


def test_switching_an_input_between_a_path_and_a_package_file_replaces_it_whole():
    data, source, problems = applied(
        "inputs.model.package=some-wheel", "inputs.model.file=m/model.onnx"
    )
    assert not problems
    assert data["inputs"]["model"] == {"package": "some-wheel", "file": "m/model.onnx"}
    assert str(source.locate(("inputs", "model"))) == "--set inputs.model.file"
    data, _, _ = applied("inputs.model.path=other.onnx")
    assert data["inputs"]["model"] == {"path": "other.onnx"}


def test_an_unknown_stage_is_a_problem_naming_the_override_with_a_suggestion():
    _, _, problems = applied("otp.with.level=all")
    [problem] = problems
    assert problem.message == "--set otp.with.level: the recipe has no stage 'otp'"
    assert "opt" in problem.hint


def test_setting_inside_a_value_that_is_not_a_mapping_is_a_problem():
    _, _, problems = applied("opt.with.level.deeper=1")
    assert [p.message for p in problems] == [
        "--set opt.with.level.deeper: 'stages.opt.with.level' is not a mapping"
    ]
    _, _, problems = applied("name.x=1")
    assert [p.message for p in problems] == ["--set name.x: 'name' is not a mapping"]


def test_malformed_overrides_are_refused_with_the_form_to_use():
    with pytest.raises(RecipeError, match="expected KEY=VALUE"):
        applied("opt.with.level")
    _, _, problems = applied("opt..level=all")
    assert [p.message for p in problems] == ["--set opt..level: 'opt..level' is not a dotted key"]


def test_a_params_file_applies_before_set_and_names_its_own_line(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("opt.with.level: extended\nopt.with.threads: 4\n")
    data, source, problems = applied("opt.with.level=all", params_file=params)
    assert not problems
    assert data["stages"]["opt"]["with"] == {
        "level": "all",
        "threads": 4,
    }  # --set wins: it is applied last
    assert str(source.locate(("stages", "opt", "with", "threads"))) == f"{params}:2:1"


def test_a_params_file_that_is_not_a_mapping_is_refused_at_the_file(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("- opt.with.level: all\n")
    with pytest.raises(RecipeError, match="a params file must map dotted keys to values") as caught:
        applied(params_file=params)
    assert str(caught.value.problems[0].location) == str(params)
