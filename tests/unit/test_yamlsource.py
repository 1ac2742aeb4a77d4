"""engine/leaves/yamlsource.py: what a recipe's YAML may hold, its limits at their exact boundaries, and the
positions errors are placed at. tests/test_parser_limits.py checks the same limits far past them, through the
CLI and in a memory-capped process; these check the edges in memory, in milliseconds."""

from __future__ import annotations

import pytest

from ortflow.engine.leaves import yamlsource
from ortflow.engine.leaves.errors import RecipeError
from ortflow.engine.leaves.yamlsource import MAX_DEPTH, SourceMap, byte_size, load_yaml, parse_yaml

from .recipe.helpers import NAME, at, parsed


def problems(text: str) -> list[str]:
    with pytest.raises(RecipeError) as caught:
        parse_yaml(text, NAME)
    return [f"{p.location}: {p.message}" for p in caught.value.problems]


def test_nesting_up_to_the_limit_is_read_and_one_level_more_is_refused_where_it_starts():
    # the document's mapping is level 1; each bracket adds one
    data, _ = parse_yaml("x: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n", NAME)
    expected: object = 1
    for _ in range(MAX_DEPTH - 1):
        expected = [expected]
    assert data["x"] == expected
    assert problems("x: " + "[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH + "\n") == [
        f"{NAME}:1:{3 + MAX_DEPTH}: the document nests more than {MAX_DEPTH} levels deep here"
    ]


def chain(levels: int) -> str:
    """Anchors each one list deeper than the last: the last, under the document's mapping, nests `levels` deep."""
    lines = ["a0: &a0 [1]"] + [f"a{i}: &a{i} [*a{i - 1}]" for i in range(1, levels - 1)]
    return "\n".join(lines) + "\n"


def test_aliases_may_nest_to_the_limit_and_one_level_more_is_refused_naming_them():
    """Before: a document exactly MAX_DEPTH deep passed the text's check and was then refused for its innermost
    scalar, blaming aliases even where there were none (the first test above)."""
    data, _ = parse_yaml(chain(MAX_DEPTH), NAME)
    innermost = data[f"a{MAX_DEPTH - 2}"]
    for _ in range(MAX_DEPTH - 2):
        innermost = innermost[0]
    assert innermost == [1]
    [message] = problems(chain(MAX_DEPTH + 1))
    assert message.endswith(
        f"aliases inside aliases nest the document more than {MAX_DEPTH} levels deep here"
    )


def test_values_up_to_the_limit_are_read_and_one_more_is_refused(monkeypatch):
    """At a limit of 100 (the real one, MAX_NODES, takes seconds to reach; tests/test_parser_limits.py does)."""
    monkeypatch.setattr(yamlsource, "MAX_NODES", 100)
    fits = (
        100 - 2
    )  # the document's mapping and the list count (keys do not): 2 values, then the items
    data, _ = parse_yaml("x: [" + "1," * (fits - 1) + "1]\n", NAME)
    assert len(data["x"]) == fits
    [message] = problems("x: [" + "1," * fits + "1]\n")
    assert message.endswith("the document holds over 100 values")
    # Aliases repeat values without writing them: 4 x 30 values from 30 written, refused naming the aliases.
    [message] = problems("a: &a [" + "1," * 29 + "1]\nb: [*a, *a, *a]\n")
    assert message.endswith("the document expands to over 100 values")


def test_duplicate_keys_are_refused_at_the_second_naming_the_first():
    text = "a: 1\nb:\n  c: 2\n  c: 3\n"
    assert problems(text) == [f"{NAME}:4:3: duplicate key 'c' (first at line 3)"]


def test_keys_must_be_strings_and_values_json_like():
    assert problems("on: 1\n1: 2\n") == [
        f"{NAME}:1:1: key True is not a string",
        f"{NAME}:2:1: key 1 is not a string",
    ]
    assert problems("a: .nan\nb: -.inf\nc: 2026-11-26\n") == [
        f"{NAME}:1:4: '.nan' is not a finite number",
        f"{NAME}:2:4: '-.inf' is not a finite number",
        f"{NAME}:3:4: '2026-11-26' reads as a date, which a recipe cannot hold",
    ]
    assert problems("a: !!binary aGk=\n") == [
        f"{NAME}:1:4: 'aGk=' reads as a bytes, which a recipe cannot hold"
    ]


def test_an_alias_inside_what_it_names_is_refused():
    text = "a: &loop [1, *loop]\n"
    assert problems(text) == [
        f"{at(text, '&loop')}: an alias refers to a value that contains it"
    ]  # at the anchor


def test_merge_keys_fill_in_what_the_mapping_does_not_set_itself():
    data, _ = parse_yaml("base: &b {level: basic, threads: 1}\nstage: {<<: *b, level: all}\n", NAME)
    assert data["stage"] == {"level": "all", "threads": 1}
    data, _ = parse_yaml("a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc: {<<: [*a, *b]}\n", NAME)
    assert data["c"] == {"x": 1, "y": 2}  # the first mapping listed wins, as YAML's merge says
    text = "a: &a [1]\nc: {<<: *a}\n"
    assert problems(text) == [
        f"{at(text, '1]')}: '<<' merges only mappings"
    ]  # a list merges each item: the 1


def test_syntax_errors_name_the_place_and_suggest_quoting_a_bracketed_reference():
    with pytest.raises(RecipeError) as caught:
        parse_yaml("stages:\n  a: {in: {models: [int8.model[*]]}}\n", NAME)
    [problem] = caught.value.problems
    assert str(problem.location) == f"{NAME}:2:33" and problem.message.startswith(
        "invalid YAML: while scanning an alias"
    )
    assert problem.hint.startswith("quote references with brackets")
    with pytest.raises(RecipeError) as caught:
        parse_yaml("a: {b: 1\n", NAME)
    assert caught.value.problems[0].hint == "fix the YAML syntax"


def test_positions_name_a_value_its_key_or_the_nearest_written_ancestor():
    text = """
        stages:
          opt:
            uses: graph_optimization
            with: {level: all}
    """
    _, source = parsed(text)
    assert str(source.locate(("stages", "opt", "with", "level"))) == at(text, "all")
    assert str(source.locate(("stages", "opt", "with", "level"), key=True)) == at(text, "level")
    assert str(source.locate(("stages", "opt", "with", "threads"))) == at(
        text, "{level"
    )  # not written: its mapping
    assert str(source.locate(("stages", "nothing", "here"))) == at(
        text, "opt:"
    )  # `stages:`'s mapping starts there


def test_origins_outside_the_file_win_over_positions():
    source = SourceMap(NAME, positions={("a",): (1, 1)}, origins={("a", "b"): "--set a.b"})
    assert str(source.locate(("a", "b", "c"))) == "--set a.b"
    assert str(source.locate(("a", "x"))) == f"{NAME}:1:1"
    assert str(source.locate(())) == NAME


def test_an_empty_document_is_none():
    assert parse_yaml("", NAME)[0] is None and parse_yaml("# only a comment\n", NAME)[0] is None


def test_a_model_given_as_a_recipe_is_named_as_such(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x07\x12\x04\xff\xfe\x00\x80")
    with pytest.raises(RecipeError, match="a model, not a recipe"):
        load_yaml(model)


def test_byte_sizes_read_as_ls_h_shows_them():
    assert [byte_size(n) for n in (5, 1 << 10, 1536, 4 << 20, 5 << 30)] == [
        "5 bytes",
        "1 KiB",
        "1.5 KiB",
        "4 MiB",
        "5 GiB",
    ]
