"""A run record as the JSON document the store keeps (`runs/<key>.json`) and moves verbatim between caches (push,
pull and read-through keep its bytes, signature included): the form schemas/run_record.schema.json gives it.
A document read from disk or from a remote is unchecked JSON until engine.store.records has checked it, and
becomes a RunDocument there, once; what the engine reads of a record is engine.contracts.builds.RunRecord."""

from __future__ import annotations

from typing import TypeGuard

from ortflow.engine.contracts.builds import IdentityJson, RunOutputJson
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.schema_check import problem as schema_problem
from ortflow.engine.leaves.secrets import redact_json


class _Identity(IdentityJson):
    """The fields the record's key is computed from (builds.IdentityJson, the form a lock entry shares), the
    key and the outputs."""

    key: str
    outputs: dict[str, RunOutputJson]


class RunDocument(_Identity, total=False):
    """A checked run record document (engine.store.records.checked_record); the optional fields are what the
    stage said and how the record is signed."""

    stage: str
    ran_on: dict[str, Json]
    summary: str
    metrics: dict[str, Json]  # a metric's value is the metric's own
    data_source: dict[str, Json] | None
    seconds: float
    log: str
    gate_failed: str | None
    refused: str | None
    steps: list[str]
    created: str
    signature: str  # by the team's key (engine.store.signing)
    local_signature: str  # by this user's local key (engine.store.adoption)


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
