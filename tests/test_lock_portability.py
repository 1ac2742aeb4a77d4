"""A committed lock file holds on another machine (docs/cache.md, "The cache and the lock file"): results made for
one machine (a benchmark, an accuracy check) are recorded without its facts, and a calibration whose floats
differ in their last bits keeps the lock's values, while a real difference is still reported."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import minilm_model, write

from ortflow.engine.leaves.packed_floats import pack_floats, unpack_floats

DATA = Path(__file__).parents[1] / "recipes" / "data" / "calibration.npz"


def portable_recipe(project: Path) -> Path:
    return write(
        project / "recipe.yaml",
        f"""
        version: 1
        name: portable
        target: {{cpu: avx2}}
        inputs:
          model: {{path: {minilm_model()}}}
        datasets:
          sentences: {{loader: npz, with: {{path: {DATA}, limit: 8}}}}
        stages:
          calib: {{uses: calibrate, in: {{model: inputs.model, data: datasets.sentences}}}}
          int8:
            uses: quantize_static
            in: {{model: inputs.model, calibration: calib.table, data: datasets.sentences}}
            with: {{per_channel: true, op_types_to_quantize: [MatMul]}}
          speed:
            uses: benchmark
            in: {{models: [inputs.model, int8.model], data: datasets.sentences}}
            with: {{runs: 4, rounds: 1, warmup: 1, samples: 2, peak_memory: false}}
          accuracy:
            uses: validate_accuracy
            in: {{reference: inputs.model, candidates: [int8.model], data: datasets.sentences}}
            with: {{outputs: ["461"], min: {{cosine_mean: 0.5}}}}
    """,
    )


def table_digest(lock_text: str) -> str:
    return yaml.safe_load(lock_text)["stages"]["calib"]["outputs"]["table"]["digest"]


def fresh_run(cli, project: Path, recipe: Path, monkeypatch, isa: str) -> tuple[int, str, str]:
    """A run on another machine: an empty cache, and $ORTFLOW_ISA standing in for that machine's CPU."""
    from ortflow.engine.leaves import environment

    monkeypatch.setenv("ORTFLOW_ISA", isa)
    environment.fact.cache_clear()
    monkeypatch.setenv(
        "ORTFLOW_CACHE", str(project / f"cache-{isa}-{len(list(project.glob('cache-*')))}")
    )
    return cli("run", recipe)


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_a_lock_written_on_one_machine_holds_on_another(project, cli, monkeypatch):
    recipe = portable_recipe(project)
    lock = recipe.with_name("recipe.yaml.lock")
    code, out, err = fresh_run(cli, project, recipe, monkeypatch, "avx2")
    assert code == 0, out + err
    written = lock.read_text()
    entries = yaml.safe_load(written)["stages"]
    for name in (
        "speed",
        "accuracy",
    ):  # made for this machine: recorded by what they were made from
        assert entries[name]["host_specific"] is True and "key" not in entries[name], entries[name]
        assert not {"cpu", "isa"} & set(entries[name]["env"]) and "outputs" not in entries[name]
    assert "key" in entries["int8"] and entries["int8"]["env"]["target_isa"] == "x86_64: avx2"

    code, out, err = fresh_run(
        cli, project, recipe, monkeypatch, "avx512_vnni"
    )  # another CPU, nothing cached
    assert code == 0, out + err
    assert (
        "ran" in out and lock.read_text() == written
    )  # everything was measured again; the lock stands
    code, out, _ = cli("status", recipe)
    assert code == 0 and "changed" not in out, out
    assert (
        cli("cache", "gc", recipe)[0] == 0
    )  # keeps this machine's results for the host-specific entries
    code, out, _ = cli("plan", recipe)
    assert "0 of 4 stages would run" in out, out


@pytest.mark.e2e  # one of the slowest: CI runs it in its own step (pytest -m e2e)
def test_calibration_within_tolerance_of_the_lock_keeps_its_values_and_a_real_difference_shows(
    project, cli, monkeypatch
):
    recipe = portable_recipe(project)
    lock = recipe.with_name("recipe.yaml.lock")
    assert fresh_run(cli, project, recipe, monkeypatch, "avx2")[0] == 0
    ours = lock.read_text()
    measured = unpack_floats(yaml.safe_load(ours)["stages"]["calib"]["outputs"]["table"]["values"])

    def lock_with_values(
        scale: float,
    ) -> None:  # the lock as another CPU wrote it: every range scaled
        data = yaml.safe_load(lock.read_text())
        data["stages"]["calib"]["outputs"]["table"]["values"] = pack_floats(
            [v * scale for v in measured]
        )
        lock.write_text(yaml.safe_dump(data))

    # another CPU's ranges, 2e-6 apart: past float32's last bit, so its table has other bytes
    lock_with_values(1 + 2e-6)
    code, out, err = fresh_run(cli, project, recipe, monkeypatch, "avx2")
    assert code == 0, out + err
    other_cpus = (
        lock.read_text()
    )  # now consistent: that CPU's values, table digest and downstream keys
    assert table_digest(other_cpus) != table_digest(
        ours
    )  # other bytes, and so other keys downstream
    code, out, err = fresh_run(
        cli, project, recipe, monkeypatch, "avx2"
    )  # this CPU again, nothing cached
    assert code == 0, out + err
    assert lock.read_text() == other_cpus, "a result within tolerance rewrote the lock file"
    assert "not reproducible" not in out + err
    table = (project / "out" / "portable" / "calib" / "calibration.json").read_bytes()
    from ortflow.engine.store.hashing import hash_bytes

    assert hash_bytes(table) == table_digest(other_cpus)

    lock_with_values(1.01)  # 1 % apart: a different result, said so, and recorded
    code, out, err = fresh_run(cli, project, recipe, monkeypatch, "avx2")
    assert code == 0, out + err
    assert "not reproducible" in out + err, out + err
    assert (
        unpack_floats(
            yaml.safe_load(lock.read_text())["stages"]["calib"]["outputs"]["table"]["values"]
        )
        == measured
    )
