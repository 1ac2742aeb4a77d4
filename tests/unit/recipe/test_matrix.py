"""engine/recipe/matrix.py: a matrix stage expanded into instances, and references rewritten to them, on
in-memory recipes (tests/test_matrix.py runs the same through `engine` on real stages: keys, caching, folders)."""

from __future__ import annotations

from ortflow.engine.recipe.matrix import DEFAULT_MAX_STAGES, expand
from ortflow.engine.recipe.matrix_references import selector as _selector
from ortflow.engine.recipe.matrix_references import split_top_level as _split_top_level
from ortflow.engine.recipe.stage_entry import StageEntry, read_stages

from .helpers import at, parsed

INT8 = """
stages:
  int8:
    uses: quantize_static
    in: {model: inputs.model}
    matrix: {per_channel: [true, false], activation_type: [QUInt8, QInt8]}
"""
MANY = {"speed": {"models": True}}  # benchmark's `models` takes a list


def expanded(text: str, ports: dict | None = None, limit: int = DEFAULT_MAX_STAGES):
    data, source = parsed(text)
    return expand(read_stages(data["stages"]), ports or {}, source, limit), source


def test_instances_are_named_by_their_axes_in_matrix_order_and_carry_their_values():
    result, _ = expanded(INT8)
    assert not result.problems
    assert list(result.stages) == [
        "int8[per_channel=true,activation_type=QUInt8]",
        "int8[per_channel=true,activation_type=QInt8]",
        "int8[per_channel=false,activation_type=QUInt8]",
        "int8[per_channel=false,activation_type=QInt8]",
    ]
    first = result.stages["int8[per_channel=true,activation_type=QUInt8]"]
    assert first == StageEntry(
        uses="quantize_static",
        inputs={"model": "inputs.model"},
        params={"per_channel": True, "activation_type": "QUInt8"},
    )
    assert result.matrices == {"int8": list(result.stages)}


def test_a_stage_without_matrix_is_one_instance_named_as_written():
    result, _ = expanded("""
        stages:
          opt: {uses: graph_optimization, in: {model: inputs.model}, with: {level: all}}
    """)
    assert result.stages == {
        "opt": StageEntry(
            uses="graph_optimization", inputs={"model": "inputs.model"}, params={"level": "all"}
        )
    }
    assert result.matrices == {} and [i.id for i in result.instances["opt"]] == ["opt"]


def test_all_variants_go_to_a_port_taking_many():
    result, _ = expanded(
        INT8
        + """
  speed: {uses: benchmark, in: {models: ["int8.model[*]", inputs.model]}}
""",
        MANY,
    )
    assert result.stages["speed"].inputs["models"] == [
        f"{i}.model" for i in result.matrices["int8"]
    ] + ["inputs.model"]


def test_a_port_taking_one_fans_the_consumer_out_per_variant_and_inherits_the_axes():
    result, _ = expanded(
        INT8
        + """
  check: {uses: validate_accuracy, in: {candidates: "int8.model[*]"}}
""",
        {"check": {"candidates": False}},
    )
    checks = [name for name in result.stages if name.startswith("check")]
    assert checks == [f"check[{i.removeprefix('int8[')}" for i in result.matrices["int8"]]
    assert result.stages[checks[0]].inputs["candidates"] == f"{result.matrices['int8'][0]}.model"


def test_a_selector_picks_one_variant_and_its_values_read_as_yaml():
    result, _ = expanded(
        INT8
        + """
  pick: {uses: benchmark, in: {models: ["int8[per_channel=True,activation_type=QInt8].model"]}}
""",
        {"pick": {"models": True}},
    )
    assert result.stages["pick"].inputs["models"] == [
        "int8[per_channel=true,activation_type=QInt8].model"
    ]


def test_ambiguous_and_unmatched_references_are_problems_at_the_reference():
    text = (
        INT8
        + """
  one: {uses: export, in: {model: int8.model}}
  none: {uses: export, in: {model: "int8[per_channel=maybe].model"}}
"""
    )
    result, _ = expanded(text, {"one": {"model": False}, "none": {"model": False}})
    messages = sorted(f"{p.location}: {p.message}" for p in result.problems)
    one, none = at(text, "int8.model"), at(text, '"int8[')
    assert messages == [
        f"{one}: stage 'one': 'int8.model' names 4 variants of the matrix stage 'int8'",
        f"{none}: stage 'none': no variant of 'int8' matches [per_channel=maybe]",
    ]
    assert all("int8[per_channel=true,activation_type=QUInt8]" in p.hint for p in result.problems)


def test_after_a_matrix_stage_waits_for_every_variant():
    result, _ = expanded(
        INT8
        + """
  report: {uses: select, after: [int8]}
"""
    )
    assert result.stages["report"].after == result.matrices["int8"]


def test_fanning_out_over_two_matrices_keeps_the_variants_that_agree_on_shared_axes():
    result, _ = expanded(
        """
        stages:
          a: {uses: x, in: {model: inputs.model}, matrix: {bits: [4, 8]}}
          b: {uses: x, in: {model: inputs.model}, matrix: {bits: [4, 8], block: [32]}}
          pair: {uses: y, in: {left: "a.model[*]", right: "b.model[*]"}}
    """,
        {"pair": {"left": False, "right": False}},
    )
    pairs = {name: spec.inputs for name, spec in result.stages.items() if name.startswith("pair")}
    assert pairs == {
        "pair[bits=4,block=32]": {"left": "a[bits=4].model", "right": "b[bits=4,block=32].model"},
        "pair[bits=8,block=32]": {"left": "a[bits=8].model", "right": "b[bits=8,block=32].model"},
    }


def test_a_matrix_past_the_stage_limit_is_refused_at_the_matrix_with_the_count():
    result, _ = expanded(INT8, limit=3)
    assert result.stages == {}
    [problem] = result.problems
    assert "expands to 4 stages" in problem.message and "limit of 3" in problem.message
    assert str(problem.location) == at(INT8, "matrix")


def test_an_axis_value_error_in_an_instance_points_at_the_axis_value():
    result, source = expanded(INT8)
    where = source.locate(
        ("stages", "int8[per_channel=false,activation_type=QInt8]", "with", "activation_type")
    )
    assert str(where) == at(
        INT8, "QInt8", nth=1
    )  # the second value of `activation_type: [QUInt8, QInt8]`


def test_selectors_split_on_top_level_commas_only():
    assert _split_top_level('a=1,b=[1,2],c="x,y"') == ["a=1", "b=[1,2]", 'c="x,y"']
    assert _selector("per_channel=True, bits=4") == {"per_channel": "true", "bits": "4"}
    assert _selector("no_equals_sign") is None
