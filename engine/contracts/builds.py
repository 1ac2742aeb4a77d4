"""The typed model of a build: what a stage's result is made from (Identity, whose sha256 is the cache key),
what the store records about a run (RunRecord) and what a lock file records about it (LockEntry).

One definition of each, so the key is computed once per job and a record or lock entry is read by attribute,
never re-derived from a dict in several places. The JSON forms (to_json/from_json) are what the store and the
lock file hold, unchanged from the dicts they replace: keys and files written before still read."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, TypedDict, Union

from ortflow.engine.leaves.environment import HOST_FACTS
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.packed_floats import pack_floats, unpack_floats

FloatValues = tuple[
    float, ...
]  # float values a stage kept with an output (stored packed: packed_floats.pack_floats)

# A stage type's version: a string (Stage.version); a record written by an older ortflow may hold an int.
Version = Union[str, int]
# An input port's content digest, or one per item of a port that takes many: paths never enter a key.
Digests = Union[str, list[str]]

IDENTITY = (
    "type",
    "version",
    "params",
    "inputs",
    "env",
)  # what a key is computed from, as a record names it


class IdentityJson(TypedDict):
    """An Identity as JSON: the five fields a key is computed from, as a run record and a lock entry name them."""

    type: str
    version: Version
    params: Mapping[
        str, Json
    ]  # the stage's own values: its params_schema, not the store, knows their shape
    inputs: Mapping[str, Digests]  # input port -> digest, or digests
    env: Mapping[str, str]


class _Digest(TypedDict):
    digest: str


class _LockedOutputNames(_Digest):
    size: int


class LockedOutputJson(_LockedOutputNames, total=False):
    """An output as a lock file records it."""

    values: str  # packed_floats.pack_floats: the exact floats as text


class _RunOutputNames(_Digest):
    filename: str  # a plain file name: the schema refuses a path


class RunOutputJson(_RunOutputNames, total=False):
    """An output as a run record holds it (schemas/run_record.schema.json): the one form its writer
    (RunOutput.to_json, which writes every key) and its readers (the store's RunDocument, RunOutput.from_json)
    share; kind and size are optional because a record an older ortflow wrote may lack them."""

    kind: str
    size: int
    values: str  # packed_floats.pack_floats


class LockEntryJson(IdentityJson, total=False):
    """A stage's entry in a lock file (schemas/lock.schema.json's entry): the identity, then what applies."""

    measurement: bool
    host_specific: bool
    key: str
    outputs: dict[str, LockedOutputJson]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def portable_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment facts that are the same on every machine with the same software."""
    return {name: value for name, value in env.items() if name not in HOST_FACTS}


@dataclass(frozen=True, eq=False)
class Identity:
    """Everything that determines a stage's outputs; `key` (the cache key) is its sha256 in canonical JSON,
    computed once, when the identity is made. `inputs` maps each input port to a digest (or a list of
    digests): paths never enter the key."""

    type: str
    version: Version
    params: Mapping[str, Json]
    inputs: Mapping[str, Digests]
    env: Mapping[str, str]
    key: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "key", hashlib.sha256(canonical_json(self.to_json()).encode()).hexdigest()
        )

    def to_json(self) -> IdentityJson:
        return {
            "type": self.type,
            "version": self.version,
            "params": self.params,
            "inputs": self.inputs,
            "env": self.env,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Identity:
        """From a run record or lock entry (which name the five fields as to_json does)."""
        return cls(data["type"], data["version"], data["params"], data["inputs"], data["env"])

    @property
    def host_specific(self) -> bool:
        """Made for this machine: another machine with the same software makes it differently."""
        return any(name in HOST_FACTS for name in self.env)


@dataclass(frozen=True)
class RunOutput:
    """One output of a run: the store object holding it, and the file name it is published under."""

    digest: str
    kind: str
    filename: str
    size: int
    values: FloatValues | None = None  # float values that another CPU's run may keep

    def to_json(self) -> RunOutputJson:
        found: RunOutputJson = {
            "digest": self.digest,
            "kind": self.kind,
            "filename": self.filename,
            "size": self.size,
        }
        if self.values is not None:
            found["values"] = pack_floats(self.values)
        return found

    @classmethod
    def from_json(cls, data: RunOutputJson) -> RunOutput:
        return cls(
            data["digest"],
            data.get("kind", ""),
            data.get("filename", ""),
            data.get("size", 0),
            floats_of(data.get("values")),
        )


def floats_of(packed: object) -> FloatValues | None:
    """Packed float values (packed_floats.pack_floats) as numbers; text no run wrote reads as none (never offered)."""
    if not isinstance(packed, str):
        return None
    try:
        return unpack_floats(packed)
    except ValueError:
        return None


@dataclass(frozen=True, eq=False)
class RunRecord:
    """A run record (`runs/<key>.json` in the store): the identity it was built from, what it produced, and
    what the stage said. Checked against schemas/run_record.schema.json before it is served
    (engine.store.records); the store keeps the JSON, a run's outcome carries this."""

    key: str
    stage: str
    type: str
    version: Version
    params: Mapping[str, Json]
    inputs: Mapping[str, Digests]
    env: Mapping[str, str]
    outputs: Mapping[str, RunOutput]
    ran_on: Mapping[str, str] = field(
        default_factory=dict
    )  # where it was measured or built; not part of the key
    summary: str = ""
    # each metric's value as the stage gave it: free JSON (a number, a table per model...)
    metrics: Mapping[str, Json] = field(default_factory=dict)
    # the data its verdict rests on, as DataSource.to_json wrote it (provenance.DataSourceJson); read back with
    # DataSource.from_json, which tolerates what an older version wrote (engine/publish/report.py copies it)
    data_source: Mapping[str, Any] | None = None
    seconds: float = 0.0
    log: str = ""
    gate_failed: str | None = None
    steps: tuple[str, ...] = ()  # sub-stage runs this one used: gc keeps them with it
    created: str = ""
    signature: str | None = None
    # An optional stage's own one-line verdict (a StageError: a quantizer ORT cannot load the model of): no
    # outputs, served like a gate's verdict so the same inputs are not rebuilt to be refused again.
    refused: str | None = None

    @cached_property
    def identity(self) -> Identity:
        """Computed only where asked (a check of the record's key), never on the cached path."""
        return Identity(self.type, self.version, self.params, self.inputs, self.env)

    @property
    def digests(self) -> dict[str, str]:
        return {port: out.digest for port, out in self.outputs.items()}

    def to_json(self) -> dict[str, Any]:
        found = {
            "key": self.key,
            "stage": self.stage,
            "type": self.type,
            "version": self.version,
            "params": self.params,
            "inputs": self.inputs,
            "env": self.env,
            "ran_on": self.ran_on,
            "outputs": {port: out.to_json() for port, out in self.outputs.items()},
            "summary": self.summary,
            "metrics": self.metrics,
            **({"data_source": self.data_source} if self.data_source is not None else {}),
            "seconds": self.seconds,
            "log": self.log,
            "gate_failed": self.gate_failed,
            "steps": list(self.steps),
            "created": self.created,
            **({"refused": self.refused} if self.refused is not None else {}),
        }
        return found if self.signature is None else {**found, "signature": self.signature}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        """From a record the store has checked (engine.store.records.record_problem): fields a record written
        by an older version lacks take their defaults."""
        outputs = {port: RunOutput.from_json(out) for port, out in data["outputs"].items()}
        return cls(
            data["key"],
            data.get("stage", ""),
            data["type"],
            data["version"],
            data["params"],
            data["inputs"],
            data["env"],
            outputs,
            data.get("ran_on") or {},
            data.get("summary") or "",
            data.get("metrics") or {},
            data.get("data_source"),
            data.get("seconds") or 0.0,
            data.get("log") or "",
            data.get("gate_failed"),
            tuple(data.get("steps") or ()),
            data.get("created") or "",
            data.get("signature"),
            data.get("refused"),
        )


def parse_record(document: object) -> RunRecord | None:
    """The one place a run record's JSON becomes a RunRecord, for documents nobody checked yet (every file
    under runs/, for gc and listings): one that lacks what a record must hold reads as None."""
    if not isinstance(document, Mapping):
        return None
    try:
        record = RunRecord.from_json(document)
    except (KeyError, TypeError, AttributeError, ValueError):
        return None
    return record if isinstance(record.env, Mapping) else None


@dataclass(frozen=True)
class LockedOutput:
    """An output as a lock file records it: its object and size, and the float values a stage may keep."""

    digest: str
    size: int
    values: FloatValues | None = None

    def to_json(self) -> LockedOutputJson:
        found: LockedOutputJson = {"digest": self.digest, "size": self.size}
        if self.values is not None:
            found["values"] = pack_floats(self.values)
        return found

    @classmethod
    def from_json(cls, data: LockedOutputJson) -> LockedOutput:
        return cls(data["digest"], data.get("size", 0), floats_of(data.get("values")))


@dataclass(frozen=True, eq=False)
class LockEntry:
    """A stage's entry in a lock file. Measurements (non-deterministic stages) record no outputs, whose bytes
    change every time; results made for one machine (host facts in the key: a benchmark, an accuracy check)
    record what they were made from but not the key, the host facts or the outputs: a committed lock must not
    churn in git when another machine runs it."""

    type: str
    version: Version
    params: Mapping[str, Json]
    inputs: Mapping[str, Digests]
    env: Mapping[str, str]  # the portable facts only
    key: str | None = None  # None for a host-specific entry
    outputs: Mapping[str, LockedOutput] | None = None
    measurement: bool = False
    host_specific: bool = False

    @classmethod
    def of(cls, record: RunRecord, deterministic: bool = True) -> LockEntry:
        env = portable_env(record.env)
        base = (record.type, record.version, record.params, record.inputs, env)
        if env != record.env:
            return cls(*base, measurement=not deterministic, host_specific=True)
        outputs = {
            port: LockedOutput(out.digest, out.size, out.values)
            for port, out in record.outputs.items()
        }
        return cls(
            *base,
            key=record.key,
            outputs=outputs if deterministic else None,
            measurement=not deterministic,
        )

    def matches(self, identity: Identity) -> bool:
        """Whether this entry records the build of `identity`: by its key, or, for a host-specific entry
        (which records no key), by what the result was made from, its portable environment facts only."""
        if self.key is not None:
            return self.key == identity.key
        return self.host_specific and (
            self.type,
            self.version,
            self.params,
            self.inputs,
            self.env,
        ) == (
            identity.type,
            identity.version,
            identity.params,
            identity.inputs,
            portable_env(identity.env),
        )

    @property
    def digests(self) -> dict[str, str]:
        return {port: out.digest for port, out in (self.outputs or {}).items()}

    def to_json(self) -> LockEntryJson:
        found: LockEntryJson = {
            "type": self.type,
            "version": self.version,
            "params": self.params,
            "inputs": self.inputs,
            "env": self.env,
        }
        if self.measurement:
            found["measurement"] = True
        if self.host_specific:
            found["host_specific"] = True
        if self.key is not None:
            found["key"] = self.key
        if self.outputs is not None:
            found["outputs"] = {port: out.to_json() for port, out in self.outputs.items()}
        return found

    @classmethod
    def from_json(cls, data: LockEntryJson) -> LockEntry:
        """From an entry schemas/lock.schema.json accepted."""
        outputs = data.get("outputs")
        return cls(
            data["type"],
            data["version"],
            data["params"],
            data["inputs"],
            data["env"],
            data.get("key"),
            {port: LockedOutput.from_json(out) for port, out in outputs.items()}
            if outputs is not None
            else None,
            data.get("measurement") is True,
            data.get("host_specific") is True,
        )
