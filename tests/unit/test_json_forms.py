"""The typed JSON forms (TypedDicts) of what ortflow writes, held to the schemas that check the files and to what
the writers really write: a form that names a key the file never holds, or lacks one it does, misleads every
reader that trusts its type (issue 43). No stage runs."""

from __future__ import annotations

import json
from importlib import resources

from ortflow.engine.contracts.builds import (
    Identity,
    IdentityJson,
    LockedOutputJson,
    LockEntry,
    LockEntryJson,
    RunOutput,
    RunOutputJson,
    RunRecord,
)
from ortflow.engine.contracts.provenance import DataProvenance, DataSource, DataSourceJson
from ortflow.engine.leaves import schema_check
from ortflow.engine.leaves.json_types import SchemaFragment

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
    required, optional = keys(RunOutputJson)
    assert required | optional == set(out["properties"]) and set(out["required"]) <= required


def test_what_the_writers_write_is_their_form():
    for values in (None, (1.5, -0.25)):
        made = record(values)
        for written, form in (
            (made.identity.to_json(), IdentityJson),
            (made.outputs["f"].to_json(), RunOutputJson),
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


def test_a_run_records_output_and_identity_have_one_form_each():
    """The store's RunDocument holds its outputs and identity in the very forms RunRecord writes and a lock entry
    shares (not a second TypedDict of its own), and the output form requires only what the schema requires: a
    record an older ortflow wrote, without kind or size, is one RunOutput.from_json reads."""
    from typing import get_type_hints

    from ortflow.engine.store.run_document import RunDocument

    hints = get_type_hints(RunDocument)
    assert hints["outputs"] == dict[str, RunOutputJson]
    identity = get_type_hints(IdentityJson)
    assert {name: hints[name] for name in identity} == identity
    out = schema("run_record")["properties"]["outputs"]["additionalProperties"]
    required, optional = keys(RunOutputJson)
    assert required == set(out["required"]) and required | optional == set(out["properties"])
    old: RunOutputJson = {"digest": D1, "filename": "joined.txt"}
    assert RunOutput.from_json(old) == RunOutput(D1, "", "joined.txt", 0, None)


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
