"""engine.contracts.builds: the key of an Identity, and the JSON forms of run records and lock entries (no stage runs)."""

from __future__ import annotations

import hashlib

from ortflow.engine.contracts import builds
from ortflow.engine.contracts.build_json import IdentityJson
from ortflow.engine.contracts.builds import Identity, LockedOutput, LockEntry, RunOutput, RunRecord

D1, D2, D3 = "1" * 64, "2" * 64, "3" * 64
PACKED = "AAAAAAAA+D8AAAAAAADQvw=="  # packed_floats.pack_floats([1.5, -0.25])
IDENTITY: IdentityJson = {
    "type": "concat",
    "version": "2",
    "params": {"text": "+x", "n": [1, 2.5]},
    "inputs": {"parts": [D1, D2]},
    "env": {"onnxruntime": "onnxruntime 1.2", "cpu": "Xeon"},
}


def record_json(**changes) -> dict:
    """A run record as engine.run.runner writes it."""
    found = {
        "key": Identity.from_json(IDENTITY).key,
        "stage": "s",
        **IDENTITY,
        "ran_on": {"host": "h"},
        "outputs": {
            "file": {
                "digest": D3,
                "kind": "file",
                "filename": "joined.txt",
                "size": 12,
                "values": PACKED,
            }
        },
        "summary": "ok",
        "metrics": {"speedup": 1.5},
        "seconds": 0.25,
        "log": "",
        "gate_failed": None,
        "steps": [],
        "created": "2026-11-26T00:00:00+00:00",
    }
    return {**found, **changes}


# IDENTITY's key as recorded: lock files and cache entries name builds by their key, so any change to how it is
# computed (key order, separators, escaping, the form of a float) must show here before it orphans users' caches.
KEY = "f84bcf97f65ab06ca0c02e76eac39d2ea2550a96cf49d49b6386c79e80cc75d7"
# the canonical JSON it is the sha256 of, written out: sorted keys, no spaces
CANONICAL = (
    '{"env":{"cpu":"Xeon","onnxruntime":"onnxruntime 1.2"},"inputs":{"parts":["'
    + D1
    + '","'
    + D2
    + '"]},'
    '"params":{"n":[1,2.5],"text":"+x"},"type":"concat","version":"2"}'
)


def test_the_key_is_the_sha256_of_the_identity_in_canonical_json():
    assert hashlib.sha256(CANONICAL.encode()).hexdigest() == KEY
    assert Identity.from_json(IDENTITY).key == KEY
    reordered = {name: IDENTITY[name] for name in reversed(list(IDENTITY))}
    assert (
        Identity.from_json(reordered).key == KEY
    )  # the order a recipe wrote things in does not count
    changed = Identity.from_json({**IDENTITY, "params": {"text": "+x", "n": [1, 2.25]}}).key
    assert changed != KEY


def test_the_key_is_computed_once_when_the_identity_is_made(monkeypatch):
    made = []
    real = builds.hashlib.sha256
    monkeypatch.setattr(builds.hashlib, "sha256", lambda data: made.append(data) or real(data))
    identity = Identity.from_json(IDENTITY)
    assert identity.key == identity.key == identity.key and len(made) == 1


def test_an_identity_never_changes_after_it_is_made():
    identity = Identity.from_json(IDENTITY)
    try:
        identity.key = "0" * 64
    except AttributeError:
        return
    raise AssertionError("an Identity can be changed")


def test_a_run_record_round_trips_to_the_same_json():
    for data in (
        record_json(),
        record_json(data_source={"provenance": "real"}, signature="abc"),
        record_json(gate_failed="too slow", steps=["a" * 64]),
    ):
        record = RunRecord.from_json(data)
        assert record.to_json() == data
        assert record.identity.key == data["key"] and record.digests == {"file": D3}


def test_a_record_an_older_version_wrote_reads_with_defaults():
    old = {k: v for k, v in record_json().items() if k not in ("ran_on", "steps", "log", "stage")}
    record = RunRecord.from_json(old)
    assert (
        record.steps == ()
        and record.ran_on == {}
        and record.outputs["file"] == RunOutput(D3, "file", "joined.txt", 12, (1.5, -0.25))
    )


def test_a_lock_entry_records_the_key_and_outputs_of_a_portable_build():
    record = RunRecord.from_json(record_json(env={"onnxruntime": "onnxruntime 1.2"}))
    record = RunRecord.from_json({**record.to_json(), "key": record.identity.key})
    entry = LockEntry.of(record)
    assert entry.to_json() == {
        **{k: record.to_json()[k] for k in builds.IDENTITY},
        "key": record.key,
        "outputs": {"file": {"digest": D3, "size": 12, "values": PACKED}},
    }
    assert LockEntry.of(record, deterministic=False).to_json()["measurement"] is True
    assert "outputs" not in LockEntry.of(record, deterministic=False).to_json()
    assert entry.matches(record.identity) and not entry.matches(
        Identity(record.type, "other version", record.params, record.inputs, record.env)
    )


def test_a_lock_entry_for_a_host_specific_build_records_what_it_was_made_from_but_no_key():
    record = RunRecord.from_json(record_json())
    entry = LockEntry.of(record, deterministic=False)
    data = entry.to_json()
    assert (
        data["host_specific"] is True
        and data["measurement"] is True
        and "key" not in data
        and "outputs" not in data
    )
    assert data["env"] == {"onnxruntime": "onnxruntime 1.2"}  # the host facts (cpu) are left out
    other_machine = {**record.identity.to_json(), "env": {**record.env, "cpu": "EPYC"}}
    assert entry.matches(Identity.from_json(other_machine))
    assert not entry.matches(Identity.from_json({**other_machine, "params": {"text": "other"}}))
    assert builds.parse_record({"type": "concat"}) is None  # a damaged record is no record at all
    assert LockEntry.from_json(data).to_json() == data


def test_pinned_values_are_numbers_in_the_model_and_packed_text_in_json():
    """Float values travel as tuples between layers; JSON keeps the exact packed form, and text no run wrote
    (a hand-edited lock) is not offered as values."""
    record = RunRecord.from_json(record_json())
    assert record.outputs["file"].values == (1.5, -0.25)
    assert record.to_json()["outputs"]["file"]["values"] == PACKED
    garbled = {**record_json()["outputs"]["file"], "values": "AAAA"}
    assert RunOutput.from_json(garbled).values is None
    assert LockedOutput.from_json(garbled).values is None
