"""What binds a remote record to the objects it names when the user accepted unsigned records
(--allow-unsigned, or `allow_unsigned: true` in ortflow.yaml's remote section).

Without a signature nothing can prove that a record's outputs are what its stage made: whoever can write
the remote can write any record. What can be bound is bound: the record must be filed under the key it
names, and that key is recomputed from the type, version, parameters, inputs and environment it lists (so it
is the asking job's key, of the asking job's type), its outputs must fit the stage type, and, here, no object
it names as an output may be an output of another record on the remote. Content addressing makes an object
nameable by anyone; the records on the remote are the only witness of which stage made it, so an unsigned
record that names another key's object (the swap an edited record makes) is refused and the stage rebuilt.
A stage that legitimately makes the same bytes as another is rebuilt too: a cost, never a wrong result."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.records import Origin, Signature, checked_record, signature_of, signed
from ortflow.engine.store.signing import shared_key, verifying_keys

Claims = dict[
    str, frozenset[str]
]  # object digest -> keys of the remote records naming it as an output
ClaimsSource = Callable[[], Claims]


def claims_of(records: Mapping[str, Json]) -> Claims:
    """{object: keys} over run records ({key: record as read, or None})."""
    found: dict[str, set[str]] = {}
    for key, record in records.items():
        outputs = record.get("outputs") if isinstance(record, dict) else None
        for out in (outputs or {}).values() if isinstance(outputs, dict) else ():
            digest = out.get("digest") if isinstance(out, dict) else None
            if isinstance(digest, str):
                found.setdefault(digest, set()).add(key)
    return {digest: frozenset(keys) for digest, keys in found.items()}


def remote_claims(remote: Any, runs: Iterable[str]) -> Claims:
    """Claims of every run record the remote holds (one batch of reads: the price of accepting unsigned records)."""
    keys = sorted(runs)
    read = remote.read_many([remote.run_name(key) for key in keys])
    return claims_of({key: read.get(remote.run_name(key)) for key in keys})


def lazy_claims(load: ClaimsSource) -> ClaimsSource:
    """`load` run once, when the first unsigned record needs it."""
    kept: list[Claims] = []

    def claims() -> Claims:
        if not kept:
            kept.append(load())
        return kept[0]

    return claims


def stage_shown(key: str, record: object) -> str:
    """The stage name an unchecked record gives, fit to print (a remote's or a planted file's word), else the
    key's start."""
    stage = record.get("stage") if isinstance(record, dict) else None
    return (
        stage if isinstance(stage, str) and stage.isprintable() and len(stage) < 100 else key[:12]
    )


def needs_binding(record: RunDocument, origin: Origin) -> bool:
    return origin is Origin.REMOTE_UNSIGNED_OK and signature_of(record) is not Signature.VALID


def reuse_problem(key: str, record: RunDocument, claims: Claims) -> str | None:
    """Why an unsigned record cannot be served: an output object another record on the remote names."""
    for port, out in sorted(record["outputs"].items()):
        others = sorted(claims.get(out["digest"], frozenset()) - {key})
        if others:
            return (
                f"it is unsigned and its output '{port}' is object {out['digest'][:12]}, which the record "
                f"{others[0][:12]} (another stage) also names: an unsigned record cannot show it made it"
            )
    return None


def checked_remote_record(
    remote: Any, key: str, record: object, holds: Callable[[str], bool], claims: ClaimsSource
) -> RunDocument | str:
    """The record read from `remote` under `key` if it is served, else why not: the checks a local record
    passes, the signature (unless the user accepted unsigned records), and then what binds an unsigned one."""
    found = checked_record(key, record, holds, remote.origin)
    if isinstance(found, str) or not needs_binding(found, remote.origin):
        return found
    if verifying_keys():  # kept, it would never be served: this cache serves only signed records
        return (
            "it is not signed with the team's key, which this machine holds (its cache serves only signed "
            "records, --allow-unsigned or not) — sign the remote once with `engine cache sign --remote`"
        )
    return reuse_problem(key, found, claims()) or found


def for_remote(record: RunDocument, remote: Any) -> RunDocument:
    """The record as it goes up: signed with the current team key (one signed with a previous key, re-signed).
    Without a key it could only go up unsigned, which every machine refuses unless it accepted unsigned
    records: refused here too, unless this side accepted them."""
    if shared_key() is None and not remote.allow_unsigned:
        raise StoreError(
            f"remote {remote.shown}: no ORTFLOW_SIGNING_KEY, and an unsigned record is refused by every machine "
            "that pulls it — create the team's key with `engine cache key new` and set it, or pass --allow-unsigned"
        )
    return signed(record) if shared_key() is not None else record
