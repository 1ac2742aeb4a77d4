"""The typed JSON forms (TypedDicts) of what ortflow writes, held to the schemas that check the files and to what
the writers really write: a form that names a key the file never holds, or lacks one it does, misleads every
reader that trusts its type (issue 43). No stage runs."""

from __future__ import annotations

import json
import typing
from importlib import resources

from ortflow.engine.contracts.build_json import (
    IdentityJson,
    LockedOutputJson,
    LockEntryJson,
    OutputDocument,
    RunDocument,
)
from ortflow.engine.contracts.builds import Identity, LockEntry, RunOutput, RunRecord, parse_record
from ortflow.engine.contracts.provenance import DataProvenance, DataSource, DataSourceJson
from ortflow.engine.leaves import schema_check
from ortflow.engine.leaves.json_types import SchemaFragment
from ortflow.engine.store import records

D1, D2 = "1" * 64, "2" * 64
ENV = {"onnxruntime": "onnxruntime 1.2", "cpu": "Xeon"}


def keys(form: type) -> tuple[set[str], set[str]]:
    """A TypedDict's required and optional keys."""
    return set(form.__required_keys__), set(form.__optional_keys__)  # type: ignore[attr-defined]


def schema(name: str) -> dict:
    text = resources.files("ortflow.schemas").joinpath(f"{name}.schema.json").read_text("utf-8")
    found: dict = json.loads(text)
    return found


def record(values: tuple[float, ...] | None) -> RunRecord:
    identity = Identity("concat", "2", {"text": "+x"}, {"parts": [D1]}, ENV)
    out = RunOutput(D2, "file", "joined.txt", 12, values)
    made_of = (identity.type, identity.version, identity.params, identity.inputs, identity.env)
    return RunRecord(identity.key, "s", *made_of, {"f": out})


def test_schema_fragment_names_every_keyword_the_schema_compiler_reads():
    required, optional = keys(SchemaFragment)
    assert not required
    assert optional >= schema_check._KEYWORDS | schema_check._ANNOTATIONS


def test_a_lock_entry_form_is_the_lock_schemas_entry():
    entry = schema("lock")["$defs"]["entry"]
    required, optional = keys(LockEntryJson)
    assert required == set(entry["required"]) and required | optional == set(entry["properties"])
    out = entry["properties"]["outputs"]["additionalProperties"]
    required, optional = keys(LockedOutputJson)
    assert required == set(out["required"]) and required | optional == set(out["properties"])


def test_the_identity_and_output_forms_are_the_run_record_schemas():
    properties = schema("run_record")["properties"]
    assert set(IdentityJson.__annotations__) <= set(properties)
    out = properties["outputs"]["additionalProperties"]
    required, optional = keys(OutputDocument)
    assert required == set(out["required"]) and required | optional == set(out["properties"])


def test_what_the_writers_write_is_their_form():
    for values in (None, (1.5, -0.25)):
        made = record(values)
        for written, form in (
            (made.identity.to_json(), IdentityJson),
            (made.outputs["f"].to_json(), OutputDocument),
            (made.to_json(), RunDocument),
            (LockEntry.of(made).to_json(), LockEntryJson),
            (LockEntry.of(made, deterministic=False).to_json(), LockEntryJson),
        ):
            required, optional = keys(form)
            assert required <= set(written) <= required | optional, (form, written)
        outputs = LockEntry.of(made).to_json().get("outputs", {})
        required, optional = keys(LockedOutputJson)
        assert all(required <= set(o) <= required | optional for o in outputs.values())
    source = DataSource(DataProvenance.REAL, "images", "held_out", ("data/x",), False)
    assert set(source.to_json()) == set(DataSourceJson.__annotations__)


def test_a_run_record_is_written_and_read_back_in_one_form():
    """The seam between the build model and the store: RunRecord.to_json writes the very form a checked record
    is handed out in (one TypedDict, not a dict of Any beside a store-only copy), the schema's form."""
    written = typing.get_type_hints(RunRecord.to_json)["return"]
    read = typing.get_type_hints(records.checked_record)["return"]
    assert written is RunDocument and RunDocument in typing.get_args(read)
    assert typing.get_type_hints(RunRecord.from_json)["data"] is RunDocument
    run_record = schema("run_record")
    required, optional = keys(RunDocument)
    assert required == set(run_record["required"])
    assert required | optional == set(run_record["properties"]) | {records.LOCAL_SIGNATURE}
    made = record((0.5,))
    assert parse_record(made.to_json()) is not None
    assert RunRecord.from_json(made.to_json()).to_json() == made.to_json()


def test_a_lock_file_form_is_the_lock_schema_and_what_lock_writes(tmp_path):
    from ortflow.engine.publish.lock import Lock
    from ortflow.engine.publish.lockfile import LockJson

    lock = schema("lock")
    required, optional = keys(LockJson)
    assert required == set(lock["required"]) and required | optional == set(lock["properties"])
    assert typing.get_type_hints(Lock.to_json)["return"] is LockJson
    made = record(None)
    written = Lock(tmp_path / "r.yaml.lock", {"s": LockEntry.of(made)}, "r", family="x86_64: amx")
    assert required <= set(written.to_json()) <= required | optional
    written.write()
    assert Lock.read(written.path).to_json() == written.to_json()


def test_the_sections_a_run_hands_the_console_are_report_jsons_sections():
    """The sections the run summary carries to the console are the ones written to report.json, in their form
    (SectionJson), not the written text parsed back into untyped JSON objects."""
    from typing import get_type_hints

    from ortflow.engine.pipeline import RunSummary
    from ortflow.engine.publish.report import WrittenReport
    from ortflow.engine.publish.report_types import ReportJson, SectionJson

    sections = get_type_hints(ReportJson)["sections"]
    assert sections == list[SectionJson]
    assert get_type_hints(WrittenReport)["sections"] == sections
    assert get_type_hints(RunSummary)["sections"] == sections
