"""What a run record must be before it is served: a record is only a JSON file in a cache others may write,
so it is checked against what it claims (its key, the identity it was built from, its outputs' shape and
objects) and against its signature: where the team set a signing key for a local record, always for a record
from a remote unless the user accepted unsigned ones (then bound as far as can be: see engine.store.remote_trust)."""

from __future__ import annotations

import re
from enum import Enum
from typing import Callable, Final, Mapping

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.contracts.builds import IDENTITY, Identity, canonical_json
from ortflow.engine.store.run_document import fits_run_schema, run_schema_problem
from ortflow.engine.store.signing import shared_key, sign, signed_by_any, verifying_keys

DIGEST = re.compile(r"^[0-9a-f]{64}$")
LOCAL_SIGNATURE: Final = "local_signature"  # by this user's local key: the records this machine wrote (engine.store.adoption)
SIGN_IT = "sign the remote once with `engine cache sign --remote`, or accept unsigned records with --allow-unsigned"


class Origin(Enum):
    """Where a record comes from, which decides whether it must be signed."""

    LOCAL = "local"  # this cache: signed only where the team set a key (the folder's permissions guard it)
    REMOTE = "remote"  # a remote: a valid signature always, by the current or a previous team key
    REMOTE_UNSIGNED_OK = (
        "remote-unsigned-ok"  # a remote, with --allow-unsigned / `allow_unsigned: true`
    )


class Signature(Enum):
    VALID = "valid"  # made with the current or a previous team key
    UNSIGNED = "unsigned"
    UNCHECKABLE = "uncheckable"  # signed, but this machine holds no key to check it with
    INVALID = "invalid"  # signed with another key, or changed after it was signed


class Unsigned(Enum):
    """A local record that is good but for the team's signature: who wrote it decides what can be done."""

    HERE = "here"  # signed with this user's local key: `engine cache adopt` re-signs it with the team key
    ELSEWHERE = "elsewhere"  # no valid local signature: only a rebuild signs it


def signature_of(record: Mapping[str, object]) -> Signature:
    """Whether a document as read (checked or not: every field but the signature is signed) is signed."""
    if "signature" not in record:
        return Signature.UNSIGNED
    keys = verifying_keys()
    if not keys:
        return Signature.UNCHECKABLE
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    payload = canonical_json(unsigned).encode("utf-8")
    return (
        Signature.VALID if signed_by_any(keys, payload, record["signature"]) else Signature.INVALID
    )


def signed(record: RunDocument) -> RunDocument:
    """The record with its signature, when this machine holds the shared key."""
    key = shared_key()
    unsigned = record.copy()
    unsigned.pop("signature", None)
    unsigned.pop(LOCAL_SIGNATURE, None)
    if key is not None:
        unsigned["signature"] = sign(key, canonical_json(unsigned).encode("utf-8"))
    return unsigned


def record_problem(
    key: str, record: object, object_intact: Callable[[str], bool], origin: Origin = Origin.LOCAL
) -> str | None:
    """Why the record cannot be served under `key`, or None (checked_record's verdict)."""
    found = checked_record(key, record, object_intact, origin)
    return found if isinstance(found, str) else None


def checked_record(
    key: str, record: object, object_intact: Callable[[str], bool], origin: Origin = Origin.LOCAL
) -> RunDocument | str:
    """The record as a RunDocument if it can be served under `key`, else why not: the one place a record read
    from a file or a remote becomes one. The key binds the record to the job asking: it is recomputed from
    the type, version, parameters, inputs and environment the record lists."""
    if not isinstance(record, dict) or record.get("key") != key:
        return "unreadable run record, or one filed under another key"
    if not all(field in record for field in IDENTITY):
        return "the record lacks what its key is computed from"
    try:
        recomputed = Identity(
            *(record[field] for field in IDENTITY)
        ).key  # IDENTITY: in Identity's order
    except (TypeError, ValueError):
        recomputed = None
    if recomputed != key:
        return (
            "its type, version, parameters, inputs or environment were changed after it was written"
        )
    problem = _signature_problem(record, origin) or _outputs_problem(record.get("outputs"))
    if problem:
        return problem
    if not fits_run_schema(record):
        return run_schema_problem(record) or "it does not fit schemas/run_record.schema.json"
    for name, out in sorted(record["outputs"].items()):
        if not object_intact(out["digest"]):
            return f"output '{name}' object {out['digest']} is missing or damaged"
    return record


def output_digests(record: RunDocument) -> dict[str, str]:
    """{output: digest} of a checked record."""
    return {port: out["digest"] for port, out in record["outputs"].items()}


def _signature_problem(record: Mapping[str, object], origin: Origin) -> str | None:
    if origin is Origin.REMOTE_UNSIGNED_OK:
        return None
    found = signature_of(record)
    if found is Signature.VALID:
        return None
    if origin is Origin.LOCAL:
        if not verifying_keys():
            return None
        return "not signed with this team's ORTFLOW_SIGNING_KEY (unsigned, or changed after it was signed)"
    if found is Signature.UNSIGNED:
        return f"it is unsigned, and a remote record is served only signed with the team's key — {SIGN_IT}"
    if found is Signature.UNCHECKABLE:
        return "it is signed, but this machine has no ORTFLOW_SIGNING_KEY to check it with — set the team's key"
    return (
        "not signed with this team's ORTFLOW_SIGNING_KEY or a previous key (ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE) "
        "(changed after it was signed, or signed with another key)"
    )


def _outputs_problem(outputs: object) -> str | None:
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
