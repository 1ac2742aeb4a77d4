"""`engine cache sign --remote`: the one-off migration of a remote written without a key (or with a key now
rotated out) to records signed with the team's current key. A record is signed only after every object it
names was re-hashed from its bytes and it passed every check an unsigned record must pass to be served
(engine.store.remote_trust): signing vouches for it, so nothing is signed that would not have been served."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.contracts.builds import canonical_json
from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.manifests import checked_manifest
from ortflow.engine.store.records import Origin, Signature, checked_record, signature_of, signed
from ortflow.engine.store.remote import Remote
from ortflow.engine.store.remote_trust import Claims, claims_of, reuse_problem, stage_shown
from ortflow.engine.store.signing import shared_key, signature_ok


@dataclass
class Signing:
    """What `cache sign --remote` did: records signed now, already signed with the current key, refused."""

    signed: list[str] = field(default_factory=list)
    already: int = 0
    refused: list[str] = field(default_factory=list)  # one line each: the record and why
    skipped: list[str] = field(
        default_factory=list
    )  # signed only with a previous key: not vouched for


def sign_remote(remote: Remote, resign_previous: bool = False) -> Signing:
    """Signs what would be served unsigned. A record that only a previous key verifies is left as it is
    unless `resign_previous`: a previous key may be the one that leaked, and a record forged with it must not
    come out signed with the new key (it still verifies while that key stays listed; drop the key to refuse it)."""
    key = shared_key()
    if key is None:
        raise StoreError(
            "cache sign: no ORTFLOW_SIGNING_KEY (or ORTFLOW_SIGNING_KEY_FILE) to sign with — "
            "create one with `engine cache key new` and set it"
        )
    listing = remote.listing()
    records: dict[str, Json] = {  # unchecked: what the remote holds
        name: remote.read_json(remote.run_name(name)) for name in sorted(listing.runs)
    }
    claims = claims_of(records)
    intact = _Objects(remote)
    done = Signing()
    for name, record in records.items():
        if _current(key, record):
            done.already += 1
            continue
        if not resign_previous and _previous_only(record):
            done.skipped.append(stage_shown(name, record))
            continue
        found = _vouched(name, record, intact, claims)
        if isinstance(found, str):
            done.refused.append(f"run record {name[:12]} ({stage_shown(name, record)}): {found}")
            continue
        remote.write_json(remote.run_name(name), signed(found))
        done.signed.append(stage_shown(name, record))
    return done


def _vouched(name: str, record: Json, intact: "_Objects", claims: Claims) -> RunDocument | str:
    """The record, checked, if signing it vouches for nothing that would not be served; else why not. One
    whose signature is invalid is judged as a signed remote record (which refuses it)."""
    if isinstance(record, dict) and signature_of(record) is Signature.INVALID:
        return checked_record(name, record, intact, Origin.REMOTE)
    found = checked_record(name, record, intact, Origin.REMOTE_UNSIGNED_OK)
    return found if isinstance(found, str) else reuse_problem(name, found, claims) or found


def _previous_only(record: Json) -> bool:
    """Signed, and verified only by a key kept from before a rotation (the current one was tried first)."""
    return isinstance(record, dict) and signature_of(record) is Signature.VALID


def _current(key: bytes, record: Json) -> bool:
    """Signed with the team's current key."""
    if not isinstance(record, dict):
        return False
    unsigned = {k: v for k, v in record.items() if k != "signature"}
    return signature_ok(key, canonical_json(unsigned).encode("utf-8"), record.get("signature"))


class _Objects:
    """Whether an object on the remote is intact, re-hashed from its bytes once (a folder: its manifest and
    every file it lists)."""

    def __init__(self, remote: Remote):
        self.remote = remote
        self.seen: dict[str, bool] = {}

    def __call__(self, digest: str) -> bool:
        if digest not in self.seen:
            self.seen[digest] = self._check(digest)
        return self.seen[digest]

    def _check(self, digest: str) -> bool:
        remote = self.remote
        if remote.size(remote.object_name(digest)) is not None:
            return remote.hash_of(remote.object_name(digest)) == digest
        manifest = checked_manifest(digest, remote.read_json(remote.tree_name(digest)))
        return not isinstance(manifest, str) and all(self(member) for member in manifest.values())
