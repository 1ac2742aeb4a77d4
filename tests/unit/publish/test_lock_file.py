"""engine.publish.lock: reading, merging and writing a lock file (toy data; no stage runs)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.contracts.builds import LockEntry, RunRecord
from ortflow.engine.contracts.types import StageOutcome, Status
from ortflow.engine.leaves.errors import RecipeError
from ortflow.engine.publish.lock import Lock

RECIPES = Path(__file__).resolve().parents[3] / "recipes"
D1, D2, D3 = "a1" * 32, "b2" * 32, "c3" * 32
LOCK = f"""\
# Written by `engine run`. Commit it beside the recipe: it records exactly what was built.
inputs:
  data:
    digest: {D1}
    path: data.txt
recipe: toy
schema: 1
stages:
  first:
    env:
      onnxruntime: onnxruntime 1.2
    inputs:
      parts:
      - {D1}
    key: {D2}
    outputs:
      file:
        digest: {D3}
        size: 5
        values: AAAAAAAA+D8=
    params:
      text: +x
    type: concat
    version: '1'
"""


def damaged(tmp_path: Path, old: str, new: str) -> str:
    path = tmp_path / "toy.yaml.lock"
    path.write_text(LOCK.replace(old, new, 1))
    with pytest.raises(RecipeError) as caught:
        Lock.read(path)
    return str(caught.value)


@pytest.mark.parametrize("lock", sorted(RECIPES.glob("*.lock")), ids=lambda p: p.name)
def test_a_shipped_lock_reads_and_writes_back_the_same_bytes(lock):
    assert Lock.read(lock).text() == lock.read_text(encoding="utf-8")


def test_an_unchanged_lock_is_not_rewritten(tmp_path):
    path = tmp_path / "toy.yaml.lock"
    path.write_text(LOCK)
    before = path.stat().st_mtime_ns
    Lock.read(path).write()
    assert path.read_text() == LOCK and path.stat().st_mtime_ns == before


def test_a_wrong_type_deep_inside_is_reported_at_its_line_and_column(tmp_path):
    message = damaged(tmp_path, "        size: 5", "        size: five")
    assert (
        f"{tmp_path / 'toy.yaml.lock'}:19:15: stage 'first': 'outputs.file.size' must be an integer"
        in message
    )
    assert "restore it from git" in message


def test_a_missing_field_is_reported_at_the_entry(tmp_path):
    message = damaged(tmp_path, "    type: concat\n", "")
    assert (
        f"{tmp_path / 'toy.yaml.lock'}:10:5: stage 'first': missing required key 'type'" in message
    )


def test_a_key_that_is_not_a_sha256_is_reported(tmp_path):
    assert "toy.yaml.lock:15:10: stage 'first': 'key'" in damaged(
        tmp_path, f"key: {D2}", "key: abc"
    )


def test_aliases_and_other_files_are_still_refused(tmp_path):
    assert "an anchor" in damaged(tmp_path, "    env:\n", "    env: &e\n")
    assert "not an ortflow lock file" in damaged(tmp_path, "schema: 1", "schema: 2")


def test_a_missing_lock_is_an_empty_one(tmp_path):
    assert Lock.read(tmp_path / "none.lock").stages == {}


def toy_recipe(tmp_path: Path, *names: str, deterministic: bool = True) -> SimpleNamespace:
    stage = SimpleNamespace(
        stage_cls=SimpleNamespace(deterministic=deterministic), target_cpu="native"
    )
    return SimpleNamespace(
        name="toy",
        stages={name: stage for name in names},
        datasets={},
        inputs={"data": SimpleNamespace(declared="data.txt")},
        lock_path=tmp_path / "toy.yaml.lock",
    )


def run_of(name: str, key: str, digest: str, status: Status = Status.RAN) -> StageOutcome:
    data: RunDocument = {
        "key": key,
        "stage": name,
        "type": "concat",
        "version": "1",
        "params": {"text": "+x"},
        "inputs": {"parts": [D1]},
        "env": {"onnxruntime": "onnxruntime 1.2"},
        "outputs": {"file": {"digest": digest, "kind": "file", "filename": "f.txt", "size": 5}},
    }
    return StageOutcome(name, status, key=key, record=RunRecord.from_json(data))


def test_merge_adds_what_succeeded_keeps_the_rest_and_drops_removed_stages(tmp_path):
    path = tmp_path / "toy.yaml.lock"
    path.write_text(
        LOCK.replace(
            "  first:",
            "  gone:\n    env: {}\n    inputs: {}\n    params: {}\n    type: t\n    version: '1'\n  first:",
        )
    )
    old = Lock.read(path)
    recipe = toy_recipe(tmp_path, "first", "second", "third")
    merged = old.merged(
        recipe,
        {
            "second": run_of("second", "d4" * 32, D3),
            "third": StageOutcome("third", Status.FAILED, error="x"),
        },
        {"inputs.data": D1},
    )
    assert sorted(merged.stages) == ["first", "second"]
    assert merged.stages["first"] is old.stages["first"]
    assert merged.stages["second"].key == "d4" * 32 and merged.stages["second"].digests == {
        "file": D3
    }
    merged.write()
    assert Lock.read(path).to_json() == merged.to_json()


def test_drift_names_a_rebuild_with_other_bytes_under_the_locked_key(tmp_path):
    path = tmp_path / "toy.yaml.lock"
    path.write_text(LOCK)
    lock = Lock.read(path)
    recipe = toy_recipe(tmp_path, "first")
    assert lock.drift({"first": run_of("first", D2, D3)}, recipe) == []
    [warning] = lock.drift({"first": run_of("first", D2, D1)}, recipe)
    assert "stage 'first'" in warning and "output file has different bytes" in warning
    assert (
        lock.drift(
            {"first": run_of("first", D2, D1)}, toy_recipe(tmp_path, "first", deterministic=False)
        )
        == []
    )


def test_what_a_lock_keeps_and_pins(tmp_path):
    path = tmp_path / "toy.yaml.lock"
    path.write_text(LOCK)
    lock = Lock.read(path)
    keys, digests, host_specific = lock.referenced()
    assert (keys, digests, host_specific) == ({D2}, {D3}, [])
    assert lock.locked_outputs() == {D2: {"file": D3}} and lock.pinned_values() == {
        D2: {"file": (1.5,)}  # the packed float64 text, read as the numbers
    }
    host = LockEntry("bench", "1", {}, {}, {}, host_specific=True, measurement=True)
    assert Lock(path, {"b": host}).referenced() == (set(), set(), [host])
