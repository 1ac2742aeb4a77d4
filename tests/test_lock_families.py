"""A lock file that travels between CPU families (docs/cache.md, "One lock, entries per CPU family"): a run on
another INT8 kernel family adds its entries once and leaves the others alone, and a calibration table another
CPU made under the lock's key (tests/data/lock-avx2/, recorded on an AVX2 EPYC) is drift, not tampering.
ORTFLOW_ISA only changes keys, so the drifted table is the recorded one, placed in the test's cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import minilm_model, write

from ortflow.engine.leaves.packed_floats import pack_floats, unpack_floats
from ortflow.engine.store.artifacts import open_store

ROOT = Path(__file__).parents[1]
DATA = ROOT / "recipes" / "data" / "calibration.npz"
FIXTURE = Path(__file__).parent / "data" / "lock-avx2"
AVX2, AMX = "x86_64: avx2", "x86_64: amx"


def travelling_recipe(project: Path) -> tuple[Path, Path]:
    """minilm-cpu-int8's entropy calibration and its quantization (native target), with its committed lock's
    entries for them: the fixture's table has the key of this calibration."""
    recipe = write(
        project / "travels.yaml",
        f"""
        version: 1
        name: travels
        inputs:
          model: {{path: {minilm_model()}}}
        datasets:
          calibration: {{loader: npz, with: {{path: {DATA}}}}}
        stages:
          calib_entropy:
            uses: calibrate
            in: {{model: inputs.model, data: datasets.calibration}}
            with: {{method: entropy, samples: 240}}
          int8_entropy:
            uses: quantize_static
            in: {{model: inputs.model, calibration: calib_entropy.table}}
            with: {{format: QDQ, activation_type: QUInt8, weight_type: QInt8, per_channel: true,
                   op_types_to_quantize: [MatMul, Gather]}}
        """,
    )
    shipped = yaml.safe_load((ROOT / "recipes" / "minilm-cpu-int8.yaml.lock").read_text())
    entries = {name: shipped["stages"][name] for name in ("calib_entropy", "int8_entropy")}
    entries["calib_entropy"]["outputs"]["metrics"] = {
        "digest": _metrics_digest(project),
        "size": (project / "metrics.json").stat().st_size,
    }
    lock = recipe.with_name("travels.yaml.lock")
    lock.write_text(
        yaml.safe_dump(
            {
                "schema": 1,
                "recipe": "travels",
                "inputs": {"model": {"path": str(minilm_model()), **_digest(shipped, "inputs")}},
                "datasets": {"calibration": {"loader": "npz", **_digest(shipped, "datasets")}},
                "stages": entries,
            }
        )
    )
    return recipe, lock


def _digest(shipped: dict, section: str) -> dict:
    name = "model" if section == "inputs" else "calibration"
    return {"digest": shipped[section][name]["digest"]}


def _metrics_digest(project: Path) -> str:
    """The calibration's metrics file, which the fixture does not hold: a stand-in, the same on both sides."""
    import hashlib

    path = project / "metrics.json"
    record = json.loads((FIXTURE / "run-record.json").read_text())
    path.write_text(json.dumps(record["metrics"], indent=2))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def teammates_cache(project: Path) -> Path:
    """A cache holding the AVX2 host's table under the lock's key, as that host's run wrote it."""
    cache = project / "cache"
    store = open_store(cache)
    record = json.loads((FIXTURE / "run-record.json").read_text())
    record["outputs"]["metrics"]["digest"] = _metrics_digest(project)
    for port, source in (
        ("table", FIXTURE / "calibration.json"),
        ("metrics", project / "metrics.json"),
    ):
        target = store.object_path(record["outputs"][port]["digest"])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        record["outputs"][port]["size"] = target.stat().st_size
    store.write_run_json(record["key"], record)
    return cache


def add_locks_table(cache: Path, lock: Path) -> None:
    """The lock's own table beside the AVX2 host's, written from the values the lock records (a pulled or
    earlier object, say): the same bytes the AMX host wrote."""
    from ortflow.stages.quantization.activation_ranges import write_table

    entry = yaml.safe_load(lock.read_text())["stages"]["calib_entropy"]["outputs"]["table"]
    drifted = json.loads((FIXTURE / "calibration.json").read_text())
    masked = drifted["ortflow"]["mask_tensors"]
    values = unpack_floats(entry["values"])
    names = sorted([*drifted["data"], *masked])
    ranges = {name: (values[2 * i], values[2 * i + 1]) for i, name in enumerate(names)}
    store = open_store(cache)
    target = store.object_path(entry["digest"])
    target.parent.mkdir(parents=True, exist_ok=True)
    write_table(target, "entropy", ranges, dict.fromkeys(masked, 1), True)


def run_on(cli, recipe: Path, monkeypatch, isa: str) -> tuple[int, str, str]:
    """A run with $ORTFLOW_ISA standing in for a CPU of that INT8 kernel family."""
    from ortflow.engine.leaves import environment

    monkeypatch.setenv("ORTFLOW_ISA", isa)
    environment.fact.cache_clear()
    return cli("run", recipe)


@pytest.mark.e2e  # quantizes MiniLM four times: CI runs it in its own step (pytest -m e2e)
def test_each_family_adds_its_entries_once_and_leaves_the_others(project, cli, monkeypatch):
    recipe, lock = travelling_recipe(project)
    monkeypatch.setenv("ORTFLOW_CACHE", str(teammates_cache(project)))
    shipped_base = yaml.safe_load(lock.read_text())["stages"]
    for isa in ("avx2", "amx"):
        code, out, err = run_on(cli, recipe, monkeypatch, isa)
        assert code == 0, out + err
        first = lock.read_text()
        code, out, err = run_on(cli, recipe, monkeypatch, isa)
        assert code == 0, out + err
        assert lock.read_text() == first, f"the second run on {isa} changed the lock"
        data = yaml.safe_load(first)
        if isa == "avx2":  # added its own entries; the AMX host's are as committed
            assert data["stages"] == shipped_base
            avx2_entries = data["families"][AVX2]
            assert data["family"] == AMX and set(avx2_entries) == {"calib_entropy", "int8_entropy"}
            assert avx2_entries["int8_entropy"]["env"]["target_isa"] == AVX2
    assert yaml.safe_load(lock.read_text())["families"][AVX2] == avx2_entries
    code, out, _ = cli("status", recipe)
    assert code == 0 and "changed" not in out, out
    assert cli("cache", "gc", recipe)[0] == 0  # keeps what either family's entries reference
    for isa in ("avx2", "amx"):
        assert run_on(cli, recipe, monkeypatch, isa)[0] == 0
        code, out, _ = cli("plan", recipe)
        assert code == 0 and "0 of 2 stages would run" in out, (isa, out)
        code, out, _ = cli("status", recipe)
        assert code == 0 and "changed" not in out and "not in lock" not in out, (isa, out)


@pytest.mark.e2e
def test_a_restored_lock_runs_on_a_cpu_that_calibrates_differently(project, cli, monkeypatch):
    recipe, lock = travelling_recipe(project)
    monkeypatch.setenv("ORTFLOW_CACHE", str(teammates_cache(project)))
    committed = lock.read_text()
    for isa in ("avx2", "avx2", "amx", "avx2"):
        lock.write_text(committed)  # `git checkout` of the lock file
        code, out, err = run_on(cli, recipe, monkeypatch, isa)
        assert code == 0, out + err
        assert "restore the lock file" not in out + err
        drift = [line for line in (out + err).splitlines() if "this CPU's rounding" in line]
        assert len(drift) == 1 and "not tampering" in drift[0], out + err


@pytest.mark.e2e
def test_a_table_beyond_the_tolerance_is_still_refused(project, cli, monkeypatch):
    recipe, lock = travelling_recipe(project)
    monkeypatch.setenv("ORTFLOW_CACHE", str(teammates_cache(project)))
    data = yaml.safe_load(lock.read_text())
    table = data["stages"]["calib_entropy"]["outputs"]["table"]
    values = list(unpack_floats(table["values"]))
    values[1] *= 1.1  # one range moved by a tenth: far more than a histogram bin
    table["values"] = pack_floats(values)
    lock.write_text(yaml.safe_dump(data))
    code, out, err = run_on(cli, recipe, monkeypatch, "avx2")
    assert code == 1 and "was changed after it was built" in out + err, out + err


@pytest.mark.e2e
def test_the_locks_result_is_served_where_the_cache_holds_it(project, cli, monkeypatch):
    recipe, lock = travelling_recipe(project)
    cache = teammates_cache(project)
    add_locks_table(cache, lock)
    monkeypatch.setenv("ORTFLOW_CACHE", str(cache))
    committed = yaml.safe_load(lock.read_text())["stages"]
    for isa in ("amx", "avx2"):
        code, out, err = run_on(cli, recipe, monkeypatch, isa)
        assert code == 0, out + err
        notes = [line for line in (out + err).splitlines() if "this CPU's rounding" in line]
        assert (
            len(notes) == 1 and "the lock file's, which this cache also holds, is used" in notes[0]
        )
        data = yaml.safe_load(lock.read_text())
        assert data["stages"]["calib_entropy"] == committed["calib_entropy"], isa
    assert set(data["families"][AVX2]) == {"int8_entropy"}  # the table is the AMX host's: shared


def _shipped(project: Path, name: str) -> tuple[Path, Path]:
    """A shipped recipe with its committed lock and its data, copied as a teammate's clone has them."""
    shutil.copy(ROOT / "recipes" / name, project / name)
    shutil.copy(ROOT / "recipes" / f"{name}.lock", project / f"{name}.lock")
    shutil.copytree(ROOT / "recipes" / "data", project / "data", dirs_exist_ok=True)
    return project / name, project / f"{name}.lock"


def _host_family(monkeypatch) -> str:
    from ortflow.engine.leaves import environment

    monkeypatch.delenv("ORTFLOW_ISA", raising=False)
    environment.fact.cache_clear()
    return environment.fact("isa")


@pytest.mark.e2e  # builds and benchmarks Silero VAD's INT8 model for two families: 26-37 s on 2 busy cores
def test_a_shipped_lock_gets_another_familys_entries_once_and_keeps_its_own(
    project, cli, monkeypatch
):
    """vad-cpu-int8's committed lock (written on an AMX host; its `int8` is `target: native`) in a fresh
    clone: a run under another family's facts adds that family's entries once; a second run, and one on
    the lock restored by `git checkout`, leave it as the first left it; the committed entries are never
    touched. Under the lock's own family's facts on the AMX host that wrote it, every run leaves the lock
    as it found it (elsewhere this CPU's float results may drift from the lock's: docs/cache.md)."""
    from ortflow.engine.leaves.environment import TARGETS

    own_bytes = _host_family(monkeypatch) == AMX
    other = "avx512_vnni" if _host_family(monkeypatch) == AVX2 else "avx2"
    recipe, lock = _shipped(project, "vad-cpu-int8.yaml")
    committed = lock.read_text()
    base = yaml.safe_load(committed)
    assert "families" not in base  # shipped with the family that wrote it only: docs/cache.md
    code, out, err = run_on(cli, recipe, monkeypatch, other)
    assert code == 0, out + err
    first = lock.read_text()
    data = yaml.safe_load(first)
    assert data["stages"] == base["stages"] and data["family"] == AMX
    theirs = data["families"][TARGETS[other]]
    assert theirs["int8"]["env"]["target_isa"] == TARGETS[other]
    for restore in (False, True):  # the second run; a run on the lock restored by `git checkout`
        if restore:
            lock.write_text(committed)
        code, out, err = run_on(cli, recipe, monkeypatch, other)
        assert code == 0 and lock.read_text() == first, out + err
    code, out, err = run_on(cli, recipe, monkeypatch, "amx")
    assert code == 0, out + err
    assert yaml.safe_load(lock.read_text())["families"][TARGETS[other]] == theirs
    assert lock.read_text() == first or not own_bytes, out + err
    lock.write_text(committed)
    code, out, err = run_on(cli, recipe, monkeypatch, "amx")
    assert code == 0 and (lock.read_text() == committed or not own_bytes), out + err
