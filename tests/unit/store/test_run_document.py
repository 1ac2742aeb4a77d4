"""engine.store.run_document and records.checked_record: a run record read from a file or a remote becomes a
typed RunDocument in one place, after every check (its reasons in their order), and the store writes only
records that fit the form it will later read them by."""

from __future__ import annotations

import json

import pytest

from ortflow.engine.contracts.build_json import IdentityJson
from ortflow.engine.contracts.builds import Identity, RunOutput, RunRecord
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.store.artifacts import ArtifactStore
from ortflow.engine.store.records import checked_record
from ortflow.engine.store.run_document import fits_run_schema

D1, D2 = "1" * 64, "2" * 64
IDENTITY: IdentityJson = {
    "type": "concat",
    "version": "1",
    "params": {"text": "+x"},
    "inputs": {"p": [D1]},
    "env": {},
}
KEY = Identity.from_json(IDENTITY).key
TEAM_KEY = "0123456789abcdef" * 4


def record(**changes: object) -> dict:
    outputs = {"file": {"digest": D2, "kind": "file", "filename": "a.txt", "size": 3}}
    return {"key": KEY, "stage": "s", **IDENTITY, "summary": "", "outputs": outputs, **changes}


def test_a_servable_record_comes_back_as_the_document_it_is(no_signing_keys, monkeypatch):
    found = checked_record(KEY, record(), lambda _d: True)
    assert found == record() and not isinstance(found, str)
    assert found["outputs"]["file"]["digest"] == D2
    assert checked_record(KEY, record(), lambda d: d != D2) == (
        f"output 'file' object {D2} is missing or damaged"
    )


def test_the_reasons_keep_their_order_signature_then_outputs_then_form(
    no_signing_keys, monkeypatch
):
    unfit = record(summary=5)
    assert "does not fit schemas/run_record.schema.json" in checked_record(KEY, unfit, bool)
    bad_name = record(summary=5, outputs={"f": {"digest": D2, "filename": "../x"}})
    assert "not a plain file name" in checked_record(KEY, bad_name, bool)
    monkeypatch.setenv("ORTFLOW_SIGNING_KEY", TEAM_KEY)  # unsigned under a team key: said first
    assert "not signed with this team's" in checked_record(KEY, bad_name, bool)


def test_the_store_refuses_to_write_a_record_it_could_never_serve(
    tmp_path, no_signing_keys, monkeypatch
):
    """A stage type whose version is a float (schemas/run_record: a string or an integer) used to be written
    and then never served, its stage rebuilt on every run without a word."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    store = ArtifactStore(tmp_path / "cache")
    made = tmp_path / "a.txt"
    made.write_text("abc", encoding="utf-8")
    out = RunOutput(store.add(made), "file", "a.txt", 3)
    odd = Identity("concat", 1.5, {}, {}, {})
    with pytest.raises(StoreError, match=r"run record of join: .*schemas/run_record\.schema\.json"):
        store.write_run(RunRecord(odd.key, "join", *odd.to_json().values(), {"file": out}))
    assert not store.has_run(odd.key)
    good = Identity("concat", 2, {}, {}, {})
    store.write_run(RunRecord(good.key, "join", *good.to_json().values(), {"file": out}))
    written = json.loads(store.run_path(good.key).read_text(encoding="utf-8"))
    assert fits_run_schema(written) and store.read_run_json(good.key) == written


def test_a_written_record_tells_its_text_redacted_and_keeps_its_identity(
    tmp_path, no_signing_keys, monkeypatch
):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("MY_API_TOKEN", "tok-9f8e7d6c5b4a")
    store = ArtifactStore(tmp_path / "cache")
    made = tmp_path / "a.txt"
    made.write_text("abc", encoding="utf-8")
    digest = store.add(made)
    identity = {**IDENTITY, "params": {"text": "tok-9f8e7d6c5b4a"}}
    key = Identity.from_json(identity).key
    outputs = {"file": {"digest": digest, "kind": "file", "filename": "a.txt", "size": 3}}
    told = {"summary": "used tok-9f8e7d6c5b4a", "metrics": {"note": "tok-9f8e7d6c5b4a"}}
    store.write_run_json(key, {"key": key, **identity, "outputs": outputs, **told})
    written = json.loads(store.run_path(key).read_text(encoding="utf-8"))
    assert written["summary"] == "used ***" and written["metrics"] == {"note": "***"}
    assert written["params"] == {"text": "tok-9f8e7d6c5b4a"}  # the key is computed from it
    assert store.read_run_json(key) == written
