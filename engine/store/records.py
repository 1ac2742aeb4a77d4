"""What a run record must be before it is served: a record is only a JSON file in a cache others may write,
so it is checked against what it claims (its key, the identity it was built from, its outputs' shape and
objects) and, where the team set a signing key, against its signature."""

from __future__ import annotations

import re
from typing import Any, Callable

from ortflow.engine.builds import IDENTITY, Identity, canonical_json
from ortflow.engine.schema_check import problem as schema_problem
from ortflow.engine.store.signing import shared_key, sign, signature_ok

DIGEST = re.compile(r"^[0-9a-f]{64}$")


def signed(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its signature, when this machine holds the shared key."""
    key = shared_key()
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    if key is None:
        return unsigned
    return {**unsigned, "signature": sign(key, canonical_json(unsigned).encode("utf-8"))}


def record_problem(key: str, record: Any, object_intact: Callable[[str], bool]) -> str | None:
    """Why the record cannot be served under `key`, or None."""
    if not isinstance(record, dict) or record.get("key") != key:
        return "unreadable run record, or one filed under another key"
    if not all(field in record for field in IDENTITY):
        return "the record lacks what its key is computed from"
    try:
        recomputed = Identity.from_json(record).key
    except (TypeError, ValueError):
        recomputed = None
    if recomputed != key:
        return (
            "its type, version, parameters, inputs or environment were changed after it was written"
        )
    problem = (
        _signature_problem(record)
        or _outputs_problem(record.get("outputs"))
        or _schema_problem(record)
    )
    if problem:
        return problem
    for name, out in sorted(record["outputs"].items()):
        if not object_intact(out["digest"]):
            return f"output '{name}' object {out['digest']} is missing or damaged"
    return None


def _schema_problem(record: dict[str, Any]) -> str | None:
    """What the record's fields do not fit (a summary that is not text, say), which whatever shows it would trip on."""
    found = schema_problem("run_record", record)
    return f"it does not fit schemas/run_record.schema.json: {found}" if found else None


def output_digests(record: dict[str, Any]) -> dict[str, str]:
    """{output: digest} of a checked record."""
    return {port: out["digest"] for port, out in record["outputs"].items()}


def _signature_problem(record: dict[str, Any]) -> str | None:
    key = shared_key()
    if key is None:
        return None
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    if not signature_ok(key, canonical_json(unsigned).encode("utf-8"), record.get("signature")):
        return "not signed with this team's ORTFLOW_SIGNING_KEY (unsigned, or changed after it was signed)"
    return None


def _outputs_problem(outputs: Any) -> str | None:
    """Outputs name objects by full digest and files by plain names: a name with a path in it would place
    a file outside the output folder when the result is published."""
    if not isinstance(outputs, dict):
        return "its outputs are not a mapping"
    for name, out in outputs.items():
        if not isinstance(out, dict) or not DIGEST.match(str(out.get("digest", ""))):
            return f"output '{name}' does not name an object by its sha256"
        filename = out.get("filename")
        if (
            not isinstance(filename, str)
            or filename in ("", ".", "..")
            or "/" in filename
            or "\\" in filename
        ):
            return f"output '{name}' has the file name {filename!r}, which is not a plain file name"
    return None


def kinds_problem(outputs: dict[str, str], ports: dict[str, tuple[str, bool]]) -> str | None:
    """A record's outputs ({name: kind}) against the stage type's output ports ({name: (kind, optional)})."""
    for name, kind in outputs.items():
        if name not in ports:
            return f"it names an output '{name}' that the stage type does not have"
        if kind != ports[name][0]:
            return (
                f"its output '{name}' is a {kind}, where the stage type writes a {ports[name][0]}"
            )
    missing = [
        name for name, (_, optional) in ports.items() if not optional and name not in outputs
    ]
    return f"it lacks the output {', '.join(missing)}" if missing else None


def lock_disagreement(
    served_digests: dict[str, str], locked: dict[str, str]
) -> tuple[str, str, str] | None:
    """The first output whose object differs from what a lock file records for the same key:
    (port, the record's digest, the lock's digest)."""
    for port, digest in sorted(locked.items()):
        served = served_digests.get(port)
        if served is not None and served != digest:
            return port, served, digest
    return None
