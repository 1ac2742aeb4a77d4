"""The JSON forms of the build model (engine.contracts.builds): a run record as the store keeps it
(`runs/<key>.json`, schemas/run_record.schema.json) and a lock file's entry (schemas/lock.schema.json's entry).

One TypedDict per form, below both their writers (builds' to_json) and their readers (the store's checks,
engine.store.records; the lock file, engine.publish.lock), so the form a record is written in and the one it is
read back by are the same type: the engine's own writer and a checked document cannot drift apart."""

from __future__ import annotations

from typing import Mapping, TypedDict, Union

from ortflow.engine.leaves.json_types import Json

# A stage type's version: a string (Stage.version); a record written by an older ortflow may hold an int.
Version = Union[str, int]
# An input port's content digest, or one per item of a port that takes many: paths never enter a key.
Digests = Union[str, list[str]]


class IdentityJson(TypedDict):
    """An Identity as JSON: the five fields a key is computed from, as a run record and a lock entry name them."""

    type: str
    version: Version
    params: Mapping[
        str, Json
    ]  # the stage's own values: its params_schema, not the store, knows their shape
    inputs: Mapping[str, Digests]
    env: Mapping[str, str]


class _OutputNames(TypedDict):
    digest: str  # the object's full sha256
    filename: str  # a plain file name: the schema refuses a path


class OutputDocument(_OutputNames, total=False):
    """One output of a run record (what RunOutput.to_json writes: all four fields; an older record may lack
    the kind or the size)."""

    kind: str
    size: int
    values: str  # pinned float values, packed (engine.leaves.packed_floats)


class _RunIdentity(IdentityJson):
    key: str
    outputs: Mapping[str, OutputDocument]


class RunDocument(_RunIdentity, total=False):
    """A run record document: what RunRecord.to_json writes, and what engine.store.records.checked_record
    hands out once a record read from a file or a remote passed every check. The optional fields are what the
    stage said and how the record is signed."""

    stage: str
    ran_on: Mapping[str, Json]
    summary: str
    metrics: Mapping[str, Json]  # a metric's value is the metric's own
    # as DataSource.to_json wrote it, in whichever version: DataSource.from_json reads it back
    data_source: Mapping[str, Json] | None
    seconds: float
    log: str
    gate_failed: str | None
    refused: str | None
    steps: list[str]
    created: str
    signature: str  # by the team's key (engine.store.signing)
    local_signature: str  # by this user's local key (engine.store.adoption)


class _LockedOutputNames(TypedDict):
    digest: str
    size: int


class LockedOutputJson(_LockedOutputNames, total=False):
    """An output as a lock file records it."""

    values: str  # packed_floats.pack_floats: the exact floats as text


class LockEntryJson(IdentityJson, total=False):
    """A stage's entry in a lock file (schemas/lock.schema.json's entry): the identity, then what applies."""

    measurement: bool
    host_specific: bool
    key: str
    outputs: dict[str, LockedOutputJson]
