"""What a run record must be before it is served: a record is only a JSON file in a cache others may write,
so it is checked against what it claims (its key, the identity it was built from, its outputs' shape and
objects) and, where the team set a signing key, against its signature."""

from __future__ import annotations

import re
from typing import Any, Callable

from ortflow.engine.store.keys import IDENTITY, canonical_json, stage_key
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
        recomputed = stage_key(*(record[field] for field in IDENTITY))
    except (TypeError, ValueError):
        recomputed = None
    if recomputed != key:
        return "its type, version, parameters, inputs or environment were changed after it was written"
    problem = _signature_problem(record) or _outputs_problem(record.get("outputs"))
    if problem:
        return problem
    for name, out in sorted(record["outputs"].items()):
        if not object_intact(out["digest"]):
            return f"output '{name}' object {out['digest']} is missing or damaged"
    return None


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
        if not isinstance(filename, str) or filename in ("", ".", "..") or "/" in filename or "\\" in filename:
            return f"output '{name}' has the file name {filename!r}, which is not a plain file name"
    return None


def kinds_problem(record: dict[str, Any], ports: dict[str, tuple[str, bool]]) -> str | None:
    """The record's outputs against the stage type's output ports ({name: (kind, optional)})."""
    outputs = record["outputs"]
    for name, out in outputs.items():
        if name not in ports:
            return f"it names an output '{name}' that the stage type does not have"
        if out.get("kind") != ports[name][0]:
            return f"its output '{name}' is a {out.get('kind')}, where the stage type writes a {ports[name][0]}"
    missing = [name for name, (_, optional) in ports.items() if not optional and name not in outputs]
    return f"it lacks the output {', '.join(missing)}" if missing else None


def lock_disagreement(record: dict[str, Any], locked: dict[str, str]) -> tuple[str, str, str] | None:
    """The first output whose object differs from what a lock file records for the same key:
    (port, the record's digest, the lock's digest)."""
    for port, digest in sorted(locked.items()):
        served = (record["outputs"].get(port) or {}).get("digest")
        if served is not None and served != digest:
            return port, served, digest
    return None
