"""A run record as the JSON document the store keeps (`runs/<key>.json`) and moves verbatim between caches (push,
pull and read-through keep its bytes, signature included): the form schemas/run_record.schema.json gives it.
A document read from disk or from a remote is unchecked JSON until engine.store.records has checked it, and
becomes a RunDocument there, once (the form engine.contracts.build_json gives it, the same form RunRecord.to_json
writes); what the engine reads of a record is engine.contracts.builds.RunRecord."""

from __future__ import annotations

from typing import TypeGuard

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.leaves.schema_check import problem as schema_problem
from ortflow.engine.leaves.secrets import redact_json


def fits_run_schema(document: object) -> TypeGuard[RunDocument]:
    """The document fits schemas/run_record.schema.json, which is the RunDocument form."""
    return schema_problem("run_record", document) is None


def run_schema_problem(document: object) -> str | None:
    """What the document's fields do not fit (a summary that is not text, say), which whatever shows it would
    trip on."""
    found = schema_problem("run_record", document)
    return f"it does not fit schemas/run_record.schema.json: {found}" if found else None


def redacted(record: RunDocument) -> RunDocument:
    """A run record's text (summary, log, steps, metrics) through the one redactor; its identity (type, version,
    params, inputs, env), which the record's key is checked against, as the recipe gave it."""
    found = redact_json(record)
    found.update(
        {
            "key": record["key"],
            "type": record["type"],
            "version": record["version"],
            "params": record["params"],
            "inputs": record["inputs"],
            "env": record["env"],
            "outputs": record["outputs"],
        }
    )
    return found
