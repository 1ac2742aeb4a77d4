"""One's own cache under a team key. Records this machine writes without the team's key carry a signature made
with this user's local key (`~/.config/ortflow/local.key`, mode 0600, never in the cache), so that once the team
sets its key, `engine cache adopt` can re-sign with it exactly the records this machine wrote.

Why adopting cannot launder a planted record: whoever can write the cache folder cannot sign with the local key
(it lives outside the cache, readable by this user only), so a record they plant or change has no valid local
signature and is refused; and every object an adopted record names is re-hashed from its bytes (never from the
state table), so an object swapped under a genuine record is refused too. What is adopted is therefore only
what this machine built, as it built it; everything else is named and left unsigned (not served)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.contracts.builds import canonical_json
from ortflow.engine.store.hashing import hash_file, hash_tree
from ortflow.engine.store.links import odd_kind
from ortflow.engine.store.records import (
    LOCAL_SIGNATURE,
    Origin,
    Signature,
    checked_record,
    signature_of,
)
from ortflow.engine.store.remote_trust import stage_shown
from ortflow.engine.store.signing import local_key, sign, signature_ok


def _payload(record: Mapping[str, object]) -> bytes:
    """What a local signature signs: a document as read (checked or not), less its signatures."""
    plain = {k: v for k, v in record.items() if k not in ("signature", LOCAL_SIGNATURE)}
    return canonical_json(plain).encode("utf-8")


def locally_signed(record: RunDocument) -> RunDocument:
    """The record with this user's local signature (unchanged where no local key can be kept)."""
    key = local_key()
    plain = record.copy()
    plain.pop("signature", None)
    plain.pop(LOCAL_SIGNATURE, None)
    if key:
        plain[LOCAL_SIGNATURE] = sign(key, _payload(plain))
    return plain


def written_here(record: object) -> bool:
    """Signed with this user's local key, and unchanged since."""
    key = local_key()
    return (
        key is not None
        and isinstance(record, dict)
        and signature_ok(key, _payload(record), record.get(LOCAL_SIGNATURE))
    )


@dataclass
class Adoption:
    adopted: list[str] = field(default_factory=list)  # stage names
    already: int = 0
    refused: list[str] = field(default_factory=list)  # one line each: the stage and why


def adopt(store: Any) -> Adoption:
    """Re-sign with the team's key every record this machine wrote whose objects re-hash to their names."""
    done = Adoption()
    for key, record in store.iter_runs():
        if isinstance(record, dict) and signature_of(record) is Signature.VALID:
            done.already += 1
            continue
        stage = stage_shown(key, record)
        found = _adoptable(store, key, record)
        if isinstance(found, str):
            done.refused.append(f"{stage} ({key[:12]}): {found}")
            continue
        found.pop(LOCAL_SIGNATURE, None)
        store.write_run_json(key, found)
        done.adopted.append(stage)
    return done


def _adoptable(store: Any, key: str, record: object) -> RunDocument | str:
    """The record, checked, if this machine wrote it and every object it names re-hashes to its name; else why not."""
    if not written_here(record):
        return (
            "not signed by this machine's local key (written elsewhere, planted, or changed since)"
        )
    return checked_record(key, record, lambda d: _rehashed(store, d), Origin.REMOTE_UNSIGNED_OK)


def _rehashed(store: Any, digest: str) -> bool:
    """The object re-hashed from its bytes (not the state table); never opened unless a plain file or folder."""
    path = store.object_path(digest)
    if odd_kind(path.parent) is not None or odd_kind(path) is not None or not path.exists():
        return False
    return (hash_tree(path) if path.is_dir() else hash_file(path)) == digest
