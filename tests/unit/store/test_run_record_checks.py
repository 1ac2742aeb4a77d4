"""engine.store.records: what a run record must be before it is served (no store, no stage runs)."""

from __future__ import annotations

from ortflow.engine.builds import Identity
from ortflow.engine.store.records import (
    kinds_problem,
    lock_disagreement,
    output_digests,
    record_problem,
)

D1, D2 = "1" * 64, "2" * 64
IDENTITY = {
    "type": "concat",
    "version": "1",
    "params": {"text": "+x"},
    "inputs": {"parts": [D1]},
    "env": {},
}
KEY = Identity.from_json(IDENTITY).key


def record(**changes) -> dict:
    found = {
        "key": KEY,
        "stage": "s",
        **IDENTITY,
        "ran_on": {},
        "summary": "",
        "metrics": {},
        "seconds": 0.1,
        "log": "",
        "gate_failed": None,
        "steps": [],
        "created": "",
        "outputs": {"file": {"digest": D2, "kind": "file", "filename": "a.txt", "size": 3}},
    }
    return {**found, **changes}


def intact(_digest: str) -> bool:
    return True


def test_a_good_record_is_served():
    assert record_problem(KEY, record(), intact) is None


def test_a_record_under_another_key_or_changed_after_it_was_written_is_refused():
    assert "another key" in record_problem("0" * 64, record(), intact)
    assert "changed after it was written" in record_problem(
        KEY, record(params={"text": "+y"}), intact
    )
    assert "lacks what its key" in record_problem(KEY, {"key": KEY}, intact)


def test_outputs_must_name_objects_and_plain_file_names():
    bad_name = record(
        outputs={"file": {"digest": D2, "kind": "file", "filename": "../x", "size": 1}}
    )
    assert "not a plain file name" in record_problem(KEY, bad_name, intact)
    assert "missing or damaged" in record_problem(KEY, record(), lambda digest: False)


def test_fields_that_do_not_fit_the_schema_are_refused():
    assert "run_record.schema.json" in record_problem(KEY, record(summary=["not", "text"]), intact)
    assert "run_record.schema.json" in record_problem(KEY, record(steps="abc"), intact)


def test_outputs_against_the_stage_type_and_the_lock():
    ports = {"file": ("file", False), "extra": ("metrics", True)}
    assert kinds_problem({"file": "file"}, ports) is None
    assert "does not have" in kinds_problem({"other": "file"}, ports)
    assert "is a model" in kinds_problem({"file": "model"}, ports)
    assert "lacks the output file" in kinds_problem({}, ports)
    assert output_digests(record()) == {"file": D2}
    assert lock_disagreement({"file": D2}, {"file": D1}) == ("file", D2, D1)
    assert lock_disagreement({"file": D2}, {"file": D2, "gone": D1}) is None
