"""What goes where in a lock file with entries per CPU family (engine.publish.lock_families), and the calibration
tolerances that tell cross-CPU drift from a different table, on the table an AVX2 host recorded
(tests/data/lock-avx2/) against the shipped lock's, written on an AMX host. Fast: no stage runs."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from ortflow.engine.contracts.builds import LockedOutput, LockEntry
from ortflow.engine.leaves.packed_floats import unpack_floats
from ortflow.engine.publish.lock import Lock
from ortflow.engine.publish.lock_families import inferred_family, split_by_family
from ortflow.stages.calibrate import Calibrate

ROOT = Path(__file__).parents[1]
FIXTURE = Path(__file__).parent / "data" / "lock-avx2"
AVX2, AMX = "x86_64: avx2", "x86_64: amx"
ENV = {"onnxruntime": "onnxruntime 1.31.1"}


def _entry(key: str, inputs: dict, outputs: dict[str, str], env: dict | None = None) -> LockEntry:
    return LockEntry(
        "t", "1", {}, inputs, env or ENV, key, {p: LockedOutput(d, 1) for p, d in outputs.items()}
    )


def _recipe(**targets: str) -> SimpleNamespace:
    return SimpleNamespace(stages={n: SimpleNamespace(target_cpu=t) for n, t in targets.items()})


def test_a_run_on_another_family_keeps_apart_only_what_it_made_differently():
    recipe = _recipe(calib="native", int8="native", bench="native", other="native")
    stages = {
        "calib": _entry("1" * 64, {"m": "a" * 64}, {"table": "b" * 64}),
        "int8": _entry("2" * 64, {"t": "b" * 64}, {"model": "c" * 64}, {**ENV, "target_isa": AMX}),
        "bench": LockEntry("benchmark", "1", {}, {"models": ["c" * 64]}, ENV, host_specific=True),
        "other": _entry("3" * 64, {"m": "a" * 64}, {"x": "d" * 64}),
    }
    assert inferred_family(stages, recipe) == AMX
    fresh = {
        "calib": _entry(
            "1" * 64, {"m": "a" * 64}, {"table": "e" * 64}
        ),  # drift: same key, other bytes
        "int8": _entry("4" * 64, {"t": "e" * 64}, {"model": "f" * 64}, {**ENV, "target_isa": AVX2}),
        "bench": LockEntry("benchmark", "1", {}, {"models": ["f" * 64]}, ENV, host_specific=True),
        "other": _entry("5" * 64, {"m": "a" * 64}, {"x": "9" * 64}),  # the recipe changed: shared
    }
    shared, own = split_by_family(stages, {}, fresh, recipe)
    assert set(own) == {"calib", "int8", "bench"} and set(shared) == {"other"}


def test_families_round_trip_through_the_schema_and_gc_keeps_every_familys_objects(tmp_path):
    base = {"calib": _entry("1" * 64, {"m": "a" * 64}, {"table": "b" * 64})}
    theirs = {"calib": _entry("1" * 64, {"m": "a" * 64}, {"table": "e" * 64})}
    lock = Lock(tmp_path / "r.yaml.lock", base, "r", family=AMX, families={AVX2: theirs})
    lock.write()
    read = Lock.read(lock.path)
    assert read.text() == lock.text() and read.family == AMX
    assert read.entries(AVX2)["calib"].digests == {"table": "e" * 64}
    assert read.entries(AMX)["calib"].digests == {"table": "b" * 64}
    assert {"b" * 64, "e" * 64} <= read.referenced()[1]


def _tables() -> tuple[tuple[float, ...], tuple[float, ...]]:
    shipped = yaml.safe_load((ROOT / "recipes" / "minilm-cpu-int8.yaml.lock").read_text())
    locked = shipped["stages"]["calib_entropy"]["outputs"]["table"]["values"]
    record = json.loads((FIXTURE / "run-record.json").read_text())
    return unpack_floats(record["outputs"]["table"]["values"]), unpack_floats(locked)


def test_the_avx2_hosts_entropy_table_is_the_same_result_within_one_bin():
    avx2, amx = _tables()
    entropy = {"method": "entropy", "num_quantized_bins": 128}
    assert avx2 != amx and Calibrate.same_result(entropy, "table", avx2, amx)
    assert not Calibrate.same_result({"method": "minmax"}, "table", avx2, amx)  # 0.67% of a span
    moved = list(amx)
    moved[139] -= 2 * (amx[139] - amx[138]) / 128  # tensor 69's high end, two bins away
    assert not Calibrate.same_result(entropy, "table", tuple(moved), amx)
    assert not Calibrate.same_result(entropy, "metrics", avx2, amx)
