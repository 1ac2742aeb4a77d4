"""Matrix stages: expansion into instances with readable ids and their own keys, include/exclude, references
to all or one variant, fan-out joined on shared axes, the size limit, and errors written once."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import executions, write

from ortflow.engine.publish.report import stage_slug


def sweep_recipe(project: Path, matrix: str = "", extra: str = "", head: str = "") -> Path:
    (project / "seed.txt").write_text("s")
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: sweep
        {head}
        inputs:
          seed: {{path: seed.txt}}
        stages:
          base:
            uses: concat
            in: {{parts: [inputs.seed]}}
            matrix: {matrix or "{text: [a, b, c], stamp: [false]}"}
          every:
            uses: concat
            in:
              parts: base.file[*]
        """
        + extra,
    )


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def report_stages(project: Path) -> dict[str, dict]:
    report = json.loads((project / "out/sweep/report.json").read_text())
    return {s["stage"]: s for s in report["stages"]}


def test_instances_have_readable_ids_their_own_keys_and_cache(project, cli):
    path = sweep_recipe(project)
    code, out, err = cli("run", path)
    assert code == 0, err
    ids = ["base[text=a,stamp=false]", "base[text=b,stamp=false]", "base[text=c,stamp=false]"]
    assert sorted(executions(project)) == sorted([*ids, "every"])
    stages = report_stages(project)
    assert len({stages[i]["key"] for i in ids}) == 3
    for i, text in zip(ids, "abc"):
        assert (project / "out/sweep" / stage_slug(i) / "joined.txt").read_text() == "s" + text
    assert (
        project / "out/sweep/every/joined.txt"
    ).read_text() == "sasbsc"  # every variant, in matrix order
    # A new value adds one instance; the others (and their keys) are untouched and come from the cache.
    sweep_recipe(project, "{text: [a, b, c, d], stamp: [false]}")
    code, _, _ = cli("run", path)
    assert code == 0
    assert executions(project).count("base[text=d,stamp=false]") == 1
    assert sum(e.startswith("base[") for e in executions(project)) == 4
    assert (
        report_stages(project)["base[text=a,stamp=false]"]["key"]
        == stages["base[text=a,stamp=false]"]["key"]
    )
    # A value taken out leaves no stale output folder behind.
    sweep_recipe(project, "{text: [a, d], stamp: [false]}")
    code, _, _ = cli("run", path)
    assert code == 0
    assert sorted(p.name for p in (project / "out/sweep").iterdir() if p.is_dir()) == sorted(
        map(stage_slug, ["base[text=a,stamp=false]", "base[text=d,stamp=false]", "every"])
    )


def test_include_and_exclude_work_like_ci_matrices(project, cli):
    path = sweep_recipe(
        project,
        "{text: [a, b], stamp: [false, true], exclude: [{text: b, stamp: true}], "
        "include: [{text: a, sleep: 0}, {text: z, stamp: false}]}",
    )
    code, out, err = cli("plan", path)
    assert code == 0, err
    planned = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    # `sleep` joins the combinations it matches (text=a); text=z matches none, so it is a combination of its own.
    assert set(planned) == {
        "base[text=a,stamp=false,sleep=0]",
        "base[text=a,stamp=true,sleep=0]",
        "base[text=b,stamp=false]",
        "base[text=z,stamp=false]",
        "every",
    }
    assert "5 stages would run (matrix stages: base x4)" in out


def test_reference_to_one_variant_and_errors_for_ambiguous_or_unknown_ones(project, cli):
    path = sweep_recipe(
        project,
        extra="""
          one:
            uses: concat
            in: {parts: ["base[text=b].file"]}
          vague:
            uses: concat
            in: {parts: [base.file]}
          missing:
            uses: concat
            in: {parts: ["base[text=q].file"]}
        """,
    )
    code, _, err = cli("validate", path)
    assert code == 2
    lines = err.strip().splitlines()
    assert any(
        f"recipe.yaml:{line_of(path, '[base.file]')}:" in l
        and "'base.file' names 3 variants of the matrix stage 'base'" in l
        and "base.file[*]" in l
        for l in lines
    ), err
    assert any(
        f"recipe.yaml:{line_of(path, 'text=q')}:" in l
        and "no variant of 'base' matches [text=q]" in l
        and "base[text=a,stamp=false]" in l
        for l in lines
    ), err
    path.write_text(path.read_text().split("  vague:")[0])
    code, _, err = cli("run", path, "one")  # a target: the stage and only the variant it needs
    assert code == 0, err
    assert sorted(executions(project)) == ["base[text=b,stamp=false]", "one"]
    assert (project / "out/sweep/one/joined.txt").read_text() == "sb"


def test_fan_out_over_variants_joins_on_shared_axes(project, cli):
    path = sweep_recipe(
        project,
        "{text: [a, b]}",
        extra="""
          upper:
            uses: append
            in:
              file: base.file[*]
            matrix: {count: [1, 2]}
          pair:
            uses: concat
            in:
              parts: [base.file[*], upper.file[*]]
          each:
            uses: append
            in:
              file: upper.file[*]
            with: {text: "!"}
        """.replace("[base.file[*], upper.file[*]]", '["base.file[*]", "upper.file[*]"]'),
    )
    code, out, err = cli("run", path)
    assert code == 0, err
    stages = report_stages(project)
    assert {n for n in stages if n.startswith("upper")} == {
        f"upper[text={t},count={c}]" for t in "ab" for c in (1, 2)
    }
    assert {n for n in stages if n.startswith("each")} == {
        f"each[text={t},count={c}]" for t in "ab" for c in (1, 2)
    }
    assert (
        project / "out/sweep" / stage_slug("upper[text=b,count=2]") / "appended.txt"
    ).read_text() == "sb"  # no text: count only repeats ""
    assert (
        project / "out/sweep" / stage_slug("each[text=a,count=2]") / "appended.txt"
    ).read_text() == "sa!"
    assert (project / "out/sweep/pair/joined.txt").read_text() == "sasb" + "sasa" + "sbsb"


def test_fan_out_over_two_matrix_stages_keeps_only_agreeing_variants(project, cli):
    path = sweep_recipe(
        project,
        "{text: [a, b]}",
        extra="""
          tagged:
            uses: append
            in:
              file: base.file[*]
            with: {text: "+"}
          both:
            uses: concat
            in: {parts: [every.file]}
            after: [tagged]
          combined:
            uses: append
            in:
              file: tagged.file[*]
            matrix: {count: [2]}
        """,
    )
    code, out, err = cli("plan", path)
    assert code == 0, err
    assert "combined[text=a,count=2]" in out and "combined[text=b,count=2]" in out
    assert "tagged[text=a]" in out
    code, _, err = cli("run", path)
    assert code == 0, err
    assert (
        project / "out/sweep" / stage_slug("combined[text=b,count=2]") / "appended.txt"
    ).read_text() == "sb+"


def test_matrix_past_the_limit_is_refused_with_the_count_before_anything_runs(project, cli):
    path = sweep_recipe(
        project, "{text: [a, b, c, d, e, f], sleep: [0, 0.001, 0.002]}", head="max_stages: 10"
    )
    code, _, err = cli("plan", path)
    assert code == 2
    assert (
        f"recipe.yaml:{line_of(path, 'matrix:')}:" in err
        and "stage 'base' expands to 18 stages" in err
        and "limit of 10" in err
    ), err
    assert "raise `max_stages:`" in err
    code, _, err = cli("run", path, "--set", "max_stages=40")
    assert code == 0, err
    assert len(executions(project)) == 19
    # An axis can be overridden for one run, a dotted (nested-parameter) one too.
    code, out, err = cli(
        "plan", path, "--set", "base.matrix.text=[a]", "--set", "base.matrix.x.y=[1]"
    )
    assert (
        code == 2
        and "--set base.matrix.x.y: stage 'base' (every variant) (concat): unknown key 'x'" in err
    ), err
    code, out, err = cli("plan", path, "--set", "base.matrix.text=[a]")
    assert code == 0 and "1 of 4 stages would run (matrix stages: base x3)" in out, out + err
    huge = "{" + ", ".join(f"x{i}: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]" for i in range(8)) + "}"
    code, _, err = cli("validate", sweep_recipe(project, huge))
    assert (
        code == 2 and "its matrix has 100000000 combinations, over the limit of 256 stages" in err
    )


def test_bad_matrix_values_are_reported_once_at_the_axis(project, cli):
    path = sweep_recipe(project, "{text: [a, 3], colour: [red]}")
    at = f"recipe.yaml:{line_of(path, 'matrix:')}:"
    code, _, err = cli("validate", path)
    assert code == 2
    lines = err.strip().splitlines()
    assert sum("unknown key 'colour'" in l for l in lines) == 1, err  # not once per variant
    assert any(at in l and "'base' (every variant)" in l and "colour" in l for l in lines), err
    assert any(at in l and "'base[text=3,colour=red]'" in l and "text" in l for l in lines), err
    path = sweep_recipe(project, "{text: [a, b]}")
    path.write_text(path.read_text().replace("    matrix:", "    with: {text: x}\n    matrix:"))
    code, _, err = cli("validate", path)
    assert code == 2 and "'text' is both in `with:` and a matrix axis" in err
    code, _, err = cli("validate", sweep_recipe(project, "{text: [a], exclude: [{txt: a}]}"))
    assert (
        code == 2
        and "exclude entry names 'txt', which is not a matrix axis" in err
        and "text" in err
    )
    code, _, err = cli("validate", sweep_recipe(project, "{text: [a], exclude: [{text: a}]}"))
    assert code == 2 and "exclude removes every combination" in err


def test_values_that_need_quoting_and_values_that_read_the_same(project, cli):
    path = sweep_recipe(
        project,
        '{text: ["a,b", "c=d", plain]}',
        extra="""
          one:
            uses: concat
            in: {parts: ['base[text="a,b"].file']}
        """,
    )
    code, out, err = cli("run", path)
    assert code == 0, err
    assert (project / "out/sweep/one/joined.txt").read_text() == "sa,b"
    assert (
        project / "out/sweep" / stage_slug('base[text="c=d"]') / "joined.txt"
    ).read_text() == "sc=d"
    code, _, err = cli("validate", sweep_recipe(project, '{text: [a], sleep: [1, "1"]}'))
    # The string "1" and the number 1 are different variants, and their ids say so.
    assert (
        code == 2 and "stage 'base[text=a,sleep=\"1\"]' (concat): 'sleep' must be a number" in err
    ), err
    assert "base[text=a,sleep=1]" not in err


# `pick` fans out over base (text a, b) and other (text c, d): no pair agrees on `text`.
DISAGREEING = """
          other:
            uses: concat
            matrix: {text: [c, d]}
          pick:
            uses: select
            in:
              models: [inputs.seed]
              benchmark: base.file[*]
              accuracy: other.file[*]
"""


def test_fan_out_with_no_agreeing_variants_and_bad_references_give_one_error_each(project, cli):
    path = sweep_recipe(
        project,
        "{text: [a, b]}",
        extra=DISAGREEING
        + """
          never:
            uses: concat
            in:
              parts: ["base[text=a].file", "other[text=a].file"]
          single:
            uses: append
            in: {file: base.file}
        """,
    )
    code, _, err = cli("validate", path)
    assert code == 2
    lines = err.strip().splitlines()
    assert any("no variant of 'other' matches [text=a]" in l for l in lines), err
    assert any("stage 'single': 'base.file' names 2 variants" in l for l in lines), err
    assert not any("got a list" in l or "unknown reference" in l for l in lines), (
        err
    )  # no second, false error
    assert any(
        "stage 'pick': the variants of the matrix stages it fans out over never agree" in l
        for l in lines
    ), err
    assert len(lines) == 3, err


def test_errors_in_values_from_include_point_at_the_include_entry(project, cli):
    path = sweep_recipe(project, '{text: [a], include: [{text: a, sleep: "slow"}]}')
    code, _, err = cli("validate", path)
    assert code == 2
    assert (
        f"recipe.yaml:{line_of(path, 'matrix:')}:" in err and "'sleep' must be a number" in err
    ), err
    column = int(err.split("recipe.yaml:")[1].split(":")[1])
    assert column == line_of_column(path, '"slow"')


def line_of_column(path: Path, text: str) -> int:
    return next(line.index(text) + 1 for line in path.read_text().splitlines() if text in line)


def test_a_failed_fan_out_is_reported_once_and_consumers_say_nothing_more(project, cli):
    path = sweep_recipe(
        project,
        "{text: [a, b]}",
        extra=DISAGREEING
        + """
          after_all:
            uses: concat
            in:
              parts: pick.selection[*]
          after_one:
            uses: append
            in: {file: pick.selection}
            after: [pick]
          listed:
            uses: append
            in:
              file: [inputs.seed, "base.file[*]"]
        """,
    )
    code, _, err = cli("validate", path)
    assert code == 2
    lines = err.strip().splitlines()
    assert sum("never agree" in l for l in lines) == 1, err
    assert any(
        "stage 'listed' (append): input 'file' takes one reference, got a list" in l for l in lines
    ), err
    assert len(lines) == 2, err  # nothing about after_all or after_one


def test_every_id_shown_can_be_selected_back(project, cli):
    values = ["True", "key: value", "a #1", '5" disk', "x y", "99.9"]
    path = sweep_recipe(project, json.dumps({"text": values}))
    code, out, err = cli("plan", path)
    assert code == 0, err
    ids = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│ base[")]
    assert len(ids) == len(values)
    picks = "".join(
        f"""
          pick{i}:
            uses: concat
            in:
              parts: [{json.dumps(instance + ".file")}]
        """
        for i, instance in enumerate(sorted(ids))
    )
    path = sweep_recipe(project, json.dumps({"text": values}), extra=picks)
    code, out, err = cli("run", path)
    assert code == 0, err
    produced = sorted(
        (project / "out/sweep" / f"pick{i}/joined.txt").read_text() for i in range(len(values))
    )
    assert produced == sorted("s" + v for v in values)


def test_override_errors_on_a_matrix_stage_name_the_override(project, cli):
    path = sweep_recipe(project, "{text: [a, b]}")
    code, _, err = cli("validate", path, "--set", "base.with.sleep=slow")
    assert (
        code == 2
        and "--set base.with.sleep: stage 'base' (every variant) (concat): 'sleep' must be a number"
        in err
    ), err
    code, _, err = cli("validate", path, "--set", "base.matrix.include=[{text: 3}]")
    assert code == 2 and "--set base.matrix.include: stage 'base[text=3]'" in err, err


def test_long_values_make_short_unique_folders(project, cli):
    long_a, long_b = "n" * 300 + "a", "n" * 300 + "b"
    path = sweep_recipe(project, json.dumps({"text": [long_a, long_b]}))
    code, _, err = cli("run", path)
    assert code == 0, err
    folders = [p for p in (project / "out/sweep").iterdir() if p.name.startswith("base-")]
    assert len(folders) == 2 and all(len(p.name.encode()) < 120 for p in folders)
    assert sorted((p / "joined.txt").read_text() for p in folders) == ["s" + long_a, "s" + long_b]
