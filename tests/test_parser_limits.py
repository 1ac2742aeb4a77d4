"""Parser and resource limits: a hostile or mistaken file (nested thousands deep, an alias bomb in a lock file,
a huge recipe, an .npz declaring a huge array) is refused with one line naming it and the fix, exit code 2,
before it can crash the parser or take gigabytes. Where a regression would crash or exhaust memory, the
CLI runs in a child process whose address space is capped."""

from __future__ import annotations

import pickle
import re
import resource
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import CEILING, engine_process, toy_model, two_stage_recipe, write

ADDRESS_SPACE = 3 << 29  # 1.5 GiB: a CLI that refuses these files needs about 200 MiB of it


def capped(*args: str) -> tuple[int, str]:
    """The CLI in a child process that cannot map more than ADDRESS_SPACE: what used to crash the parser
    crashes only the child, and what used to take gigabytes fails there. Returns (exit code, stderr)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    child = engine_process(*args, preexec_fn=limit)
    _, err = child.communicate(timeout=CEILING)
    return child.returncode, err


def nested(style: str, depth: int) -> str:
    """A `with:` value nested `depth` levels: flow style [[[...]]], block mappings indented a level each, or
    block sequences `- - - ...`, which nest without the indentation that makes a deep document huge."""
    if style == "flow":
        return "[" * depth + "1" + "]" * depth
    if style == "indented":
        return "".join(f"\n{' ' * (8 + 2 * level)}k{level}:" for level in range(depth)) + " 1"
    return "\n      " + "- " * depth + "1"


def deep_recipe(project: Path, style: str, depth: int) -> Path:
    return write(
        project / "recipe.yaml",
        "version: 1\nname: deep\nstages:\n  a:\n    uses: concat\n"
        f"    with:\n      text: {nested(style, depth)}\n",
    )


# The 65th level, counting the recipe's own four (the document, stages, a, with): the 61st bracket, dash or key.
@pytest.mark.parametrize(
    "style, where",
    [
        ("flow", "recipe.yaml:7:73:"),
        ("block", "recipe.yaml:8:127:"),
        ("indented", "recipe.yaml:68:129:"),
    ],
)
def test_nesting_past_the_limit_is_refused_where_it_gets_too_deep(project, cli, style, where):
    code, _, err = cli("validate", deep_recipe(project, style, 100))
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: {where} the document nests more than 64 levels deep here — "
        "a recipe nests a few levels: flatten this value, or move it into a file the recipe names"
    ]


@pytest.mark.parametrize("style", ["flow", "block"])
def test_nesting_thirty_thousand_deep_is_an_error_not_a_crash(project, style):
    """libyaml's composer recursed once per level on the C stack: exit 139 near 25,000 levels, and a
    RecursionError (exit 4) from 500; the depth is now checked on the parser's events, before composing."""
    code, err = capped("validate", deep_recipe(project, style, 30_000))
    assert code == 2, err
    # libyaml 0.2.6 (PyYAML 6.0.4) reads a run of brackets ahead and stops at its own 1,000 flow levels, before
    # the events reach ortflow's check at 64: the same error, placed where libyaml stopped on that line
    where = {"flow": r"recipe\.yaml:7:(73|10\d\d):", "block": r"recipe\.yaml:8:127:"}[style]
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(
        f"error: {where} the document nests more than 64 levels deep here — "
        "a recipe nests a few levels: flatten this value, or move it into a file the recipe names",
        lines[0],
    ), err


def test_aliases_nested_in_aliases_are_refused_past_the_depth_limit(project, cli):
    """Each alias adds the depth of what it names: 20 anchors of 10 levels each nest 200 deep."""
    anchors = ["  l0: &l0 1"] + [
        f"  l{i}: &l{i} {'[' * 10}*l{i - 1}{']' * 10}" for i in range(1, 20)
    ]
    path = write(
        project / "recipe.yaml",
        "version: 1\nname: aliases\nx-anchors:\n" + "\n".join(anchors) + "\nstages: {}\n",
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert (
        "aliases inside aliases nest the document more than 64 levels deep here — use fewer levels of aliases"
        in err
    )
    assert "Traceback" not in err


def test_too_many_values_without_aliases_does_not_blame_aliases(project, cli):
    path = write(
        project / "recipe.yaml", "version: 1\nname: big\nstages: {}\nx: [" + "1," * 400_001 + "1]\n"
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert (
        "recipe.yaml:4:" in err
        and "the document holds over 200000 values — a recipe names its data files" in err
    )
    assert "alias" not in err


def test_alias_expansion_past_the_value_limit_names_anchors_and_aliases(project, cli):
    levels = ["  a0: &a0 [" + ", ".join(["x"] * 10) + "]"]
    levels += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    path = write(
        project / "recipe.yaml",
        "version: 1\nname: laughs\nx-bomb:\n" + "\n".join(levels) + "\nstages: {}\n",
    )
    code, _, err = cli("validate", path)
    assert code == 2
    assert "the document expands to over 200000 values — use fewer anchors and aliases" in err


def test_oversize_recipe_is_refused_unread(project):
    """A 50 MB recipe used to be parsed for a minute and 1.6 GB before any check; now its size stops it."""
    path = write(
        project / "recipe.yaml",
        "version: 1\nname: big\nstages: {}\nx: [" + "1," * (5 << 19) + "1]\n",
    )
    started = time.monotonic()
    code, err = capped("validate", path)
    assert code == 2, err
    assert err.strip().splitlines() == [
        "error: recipe.yaml: recipe.yaml is 5 MiB, more than the 4 MiB a recipe may be — "
        "a recipe names its models and data files rather than holding their content: "
        "move large values into files it names"
    ]
    assert (
        time.monotonic() - started < 30
    )  # parsing it would take a minute; refusing it is process start-up


def bomb_lock(path: Path, stage: str = "first") -> Path:
    """2 KB of YAML whose aliases expand to 10^9 strings in the stage's parameters."""
    levels = ["  a0: &a0 [" + ", ".join(["lol"] * 10) + "]"]
    levels += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return write(
        path,
        "schema: 1\ninputs: {}\nbomb:\n" + "\n".join(levels) + f"\nstages:\n  {stage}:\n"
        "    type: concat\n    version: '1'\n    key: k\n    params: {text: *a8}\n",
    )


def test_alias_bomb_lock_file_fails_compare_fast(project):
    good = write(
        project / "a.lock",
        "schema: 1\ninputs: {}\nstages:\n  first: {type: concat, version: '1', key: k, params: {text: x}}\n",
    )
    bad = bomb_lock(project / "b.lock")
    code, err = capped("compare", good, bad)
    assert code == 2, err
    assert err.strip().splitlines() == [
        f"error: {bad}:4:7: the lock file holds an anchor (&a0), which `engine run` never "
        "writes — restore it from git, or delete it and run again"
    ]


@pytest.mark.parametrize("command", ["run", "status"])
def test_alias_bomb_lock_file_stops_the_run_before_anything_runs(project, command):
    recipe = two_stage_recipe(project)
    bomb_lock(project / "recipe.yaml.lock")
    code, err = capped(command, recipe)
    assert code == 2, err
    assert (
        "recipe.yaml.lock:4:7: the lock file holds an anchor (&a0)" in err
        and "restore it from git" in err
    )
    assert not (project / "executions.log").exists()  # no stage started


def test_lock_file_nested_thousands_deep_is_an_error_not_a_crash(project):
    recipe = two_stage_recipe(project)
    write(
        project / "recipe.yaml.lock",
        "schema: 1\nstages: {first: {params: " + "[" * 30_000 + "]" * 30_000 + "}}\n",
    )
    code, err = capped("status", recipe)
    assert code == 2, err
    assert (
        "recipe.yaml.lock:2:" in err
        and "nested more than 128 levels deep — restore it from git" in err
    )


def npz_recipe(project: Path, datasets: str) -> Path:
    """An Identity model over `input_ids` int64 [batch, 4], and a stage that runs it over each dataset."""
    from onnx import TensorProto, helper

    toy_model(
        project / "model.onnx",
        [helper.make_node("Identity", ["input_ids"], ["out"])],
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", 4])],
        [helper.make_tensor_value_info("out", TensorProto.INT64, ["batch", 4])],
    )
    names = [line.split(":")[0].strip() for line in datasets.strip().splitlines()]
    stages = "\n".join(
        f"  {n}_stats: {{uses: feed_stats, in: {{model: inputs.model, data: datasets.{n}}}}}"
        for n in names
    )
    return write(
        project / "recipe.yaml",
        "version: 1\nname: npz\ninputs:\n  model: model.onnx\ndatasets:\n"
        + "".join(f"  {line.strip()}\n" for line in datasets.strip().splitlines())
        + "stages:\n"
        + stages
        + "\n",
    )


def huge_npz(path: Path, rows_stored: int) -> Path:
    """An .npz whose `input_ids` header declares 2^26 x 4 int64 (2 GiB) while the member holds only
    `rows_stored` rows: the header is all a loader may trust before it allocates."""
    with zipfile.ZipFile(path, "w") as archive, archive.open("input_ids.npy", "w") as member:
        np.lib.format.write_array_header_1_0(
            member, {"descr": "<i8", "fortran_order": False, "shape": (1 << 26, 4)}
        )
        member.write(np.arange(rows_stored * 4, dtype="<i8").tobytes())
    return path


def test_npz_array_over_max_bytes_is_refused_before_it_is_allocated(project):
    huge_npz(project / "huge.npz", rows_stored=3)
    recipe = npz_recipe(project, "huge: {loader: npz, with: {path: huge.npz}}")
    code, err = capped("run", recipe)
    assert code == 1, (
        err
    )  # the stage failed; a 2 GiB allocation would have failed differently under the cap
    assert (
        "huge.npz: array 'input_ids' is int64 [67108864, 4], 2.00 GiB once read, over the loader's bound of "
        "1.00 GiB (max_bytes) — read fewer samples with `limit:`, or raise max_bytes"
    ) in err


def test_npz_limit_reads_only_the_rows_it_needs(project, cli):
    huge_npz(project / "huge.npz", rows_stored=3)
    recipe = npz_recipe(project, "first: {loader: npz, with: {path: huge.npz, limit: 2}}")
    code, out, err = cli("run", recipe)
    assert code == 0, err
    stats = (project / "out/npz/first_stats/stats.json").read_text()
    assert stats == '{"feeds": 2, "sum": 28.0}'  # rows [0 1 2 3] and [4 5 6 7]


def test_a_file_that_is_not_an_npz_is_named_as_such(project, cli):
    (project / "notes.npz").write_text("input_ids: 1 2 3 4\n")
    (project / "pickled.npz").write_bytes(pickle.dumps({"input_ids": [[1, 2, 3, 4]]}))
    recipe = npz_recipe(
        project,
        """
        text: {loader: npz, with: {path: notes.npz}}
        pickled: {loader: npz, with: {path: pickled.npz}}
    """,
    )
    code, _, err = cli("run", recipe, "--keep-going")
    assert code == 1 and "Traceback" not in err and "allow_pickle" not in err
    fix = "save the arrays with numpy.savez(path, <input name>=array, ...)"
    assert (
        f"notes.npz is not an .npz file (a zip of .npy arrays): it starts with b'input_id' — {fix}"
        in err
    )
    assert (
        f"pickled.npz is not an .npz file (a zip of .npy arrays): it looks like a Python pickle, which the loader never unpickles — {fix}"
        in err
    )
