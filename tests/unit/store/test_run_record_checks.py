"""engine.store.records: what a run record must be before it is served (no store, no stage runs)."""

from __future__ import annotations

from ortflow.engine.contracts.build_json import IdentityJson
from ortflow.engine.contracts.builds import Identity
from ortflow.engine.store.records import (
    kinds_problem,
    lock_disagreement,
    output_digests,
    record_problem,
)

D1, D2 = "1" * 64, "2" * 64
IDENTITY: IdentityJson = {
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


def test_a_remote_record_must_be_signed_unless_unsigned_ones_are_accepted(
    no_signing_keys, monkeypatch
):
    from ortflow.engine.store.records import Origin, signed

    assert record_problem(KEY, record(), intact, Origin.LOCAL) is None  # this cache, no team key
    assert "it is unsigned" in record_problem(KEY, record(), intact, Origin.REMOTE)
    assert record_problem(KEY, record(), intact, Origin.REMOTE_UNSIGNED_OK) is None
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "a" * 32)
    good = signed(record())
    assert record_problem(KEY, good, intact, Origin.REMOTE) is None
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY")
    assert "no ORTFLOW_SIGNING_KEY to check it" in record_problem(KEY, good, intact, Origin.REMOTE)


def test_rotation_accepts_previous_keys_and_a_key_file(no_signing_keys, monkeypatch, tmp_path):
    from ortflow.engine.store.records import Signature, signature_of, signed

    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", "old" * 11)
    by_old = signed(record())
    (tmp_path / "team.key").write_text("new" * 11 + "\n")
    monkeypatch.delenv("ORTFLOW_SIGNING_KEY")
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY_FILE", str(tmp_path / "team.key"))
    assert signature_of(by_old) is Signature.INVALID
    monkeypatch.setenv("ORTFLOW_SIGNING_KEYS_PREVIOUS", "older" * 7 + "\n" + "old" * 11)
    assert signature_of(by_old) is Signature.VALID
    assert signed(by_old)["signature"] != by_old["signature"]  # new signatures: the current key's


def test_an_unsigned_record_naming_another_records_object_is_refused():
    from ortflow.engine.store.remote_trust import claims_of, reuse_problem

    other = "f" * 64
    claims = claims_of({KEY: record(), other: record(key=other)})
    assert "which the record ffffffffffff (another stage) also names" in reuse_problem(
        KEY, record(), claims
    )
    assert reuse_problem(KEY, record(), claims_of({KEY: record()})) is None
