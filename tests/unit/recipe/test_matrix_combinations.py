"""engine/recipe/matrix_combinations.py: a matrix's combinations as CI matrices define them (product, exclude,
include), the labels in instance ids, and the problems a matrix can have, each at the place written."""

from __future__ import annotations

from ortflow.engine.recipe.matrix_combinations import combinations, label
from ortflow.engine.recipe.stage_entry import StageEntry

from .helpers import at, parsed

LIMIT = 256


def combos(matrix: str, with_: str = "{}", limit: int = LIMIT):
    text = f"""
        stages:
          base:
            uses: concat
            with: {with_}
            matrix: {matrix}
    """
    data, source = parsed(text)
    problems = []
    found = combinations("base", StageEntry.read(data["stages"]["base"]), source, problems, limit)
    return [c.values for c in found], problems, text


def test_the_product_of_the_axes_in_the_order_written():
    values, problems, _ = combos("{text: [a, b], stamp: [false, true]}")
    assert not problems
    assert values == [
        {"text": "a", "stamp": False},
        {"text": "a", "stamp": True},
        {"text": "b", "stamp": False},
        {"text": "b", "stamp": True},
    ]


def test_include_extends_the_combinations_it_agrees_with_and_stands_alone_otherwise():
    values, problems, _ = combos(
        "{text: [a, b], stamp: [false, true], exclude: [{text: b, stamp: true}], "
        "include: [{text: a, sleep: 0}, {text: z, stamp: false}]}"
    )
    assert not problems
    assert values == [
        {"text": "a", "stamp": False, "sleep": 0},
        {"text": "a", "stamp": True, "sleep": 0},
        {"text": "b", "stamp": False},
        {"text": "z", "stamp": False},
    ]


# Moved here from tests/test_matrix.py (it checked only these ids, through `engine plan`).
def test_include_only_matrices_and_includes_after_includes_follow_ci_rules():
    values, problems, _ = combos(
        "{include: [{text: a, sleep: 0}, {text: b, sleep: 0.1}, {text: c}]}"
    )
    assert not problems
    assert values == [{"text": "a", "sleep": 0}, {"text": "b", "sleep": 0.1}, {"text": "c"}]
    # An include that adds a combination, then one that only adds a key to the product's combinations (never to an
    # earlier include's, as in GitHub Actions).
    values, problems, _ = combos("{text: [a, b], sleep: [0], include: [{text: c}, {stamp: true}]}")
    assert not problems
    assert values == [
        {"text": "a", "sleep": 0, "stamp": True},
        {"text": "b", "sleep": 0, "stamp": True},
        {"text": "c"},
    ]


def test_the_same_combination_twice_is_kept_once():
    values, problems, _ = combos("{text: [a], include: [{text: a}, {text: z}, {text: z}]}")
    assert not problems and values == [{"text": "a"}, {"text": "z"}]


def test_an_exclude_that_removes_everything_is_a_problem_at_the_matrix():
    values, problems, text = combos("{text: [a], exclude: [{text: a}]}")
    assert values == [{}]
    assert [(str(p.location), p.message) for p in problems] == [
        (at(text, "matrix"), "stage 'base': exclude removes every combination of its matrix")
    ]


def test_an_exclude_naming_no_axis_is_a_problem_at_the_entry_with_a_suggestion():
    values, problems, text = combos("{text: [a, b], exclude: [{txt: a}]}")
    assert values == [{"text": "a"}, {"text": "b"}]  # the entry is ignored, the rest still checked
    [problem] = problems
    assert problem.message == "stage 'base': exclude entry names 'txt', which is not a matrix axis"
    assert str(problem.location) == at(text, "{txt")
    assert "text" in problem.hint


def test_a_parameter_both_in_with_and_the_matrix_is_refused_at_with():
    _, problems, text = combos("{level: [basic, all]}", with_="{level: basic, keep: 1}")
    [problem] = problems
    assert "'level' is both in `with:` and a matrix axis" in problem.message
    assert str(problem.location) == at(text, "level: basic")
    _, problems, _ = combos("{session.threads: [1, 2]}", with_="{session: {mode: x}}")
    assert not problems  # a different key of the same nested parameter: no overlap


def test_a_product_far_over_the_limit_is_refused_without_enumerating_it():
    axes = ", ".join(
        f"a{i}: [{', '.join(str(v) for v in range(10))}]" for i in range(9)
    )  # 10^9 combinations
    values, problems, text = combos("{" + axes + "}", limit=10)
    assert values == [{}]
    [problem] = problems
    assert (
        problem.message
        == "stage 'base': its matrix has 1000000000 combinations, over the limit of 10 stages"
    )
    assert str(problem.location) == at(text, "matrix")


def test_labels_quote_what_would_not_read_back_as_the_same_value():
    assert [label(v) for v in (True, None, 4, 0.5, "QInt8")] == [
        "true",
        "null",
        "4",
        "0.5",
        "QInt8",
    ]
    # Text that YAML would read as something else, or that holds a selector's punctuation, is quoted.
    assert [label(v) for v in ("1", "true", "a,b", "c=d", "")] == [
        '"1"',
        '"true"',
        '"a,b"',
        '"c=d"',
        '""',
    ]
    assert label([1, "x"]) == '[1,"x"]' and label({"b": 1, "a": 2}) == '{"a":2,"b":1}'
