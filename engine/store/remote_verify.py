"""`engine cache verify --remote`: every object on the remote re-hashed from its bytes, every folder manifest
and run record checked as a download would check it, and (for the recipes named) records against lock files.
A record that is unsigned, or signed where this machine holds no key to check it, is not damage (removing it
would not make the remote safer than signing it): it is counted and named apart, and the remote is "intact"
only when there are none, or the user accepted unsigned records."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.artifacts import Damage
from ortflow.engine.store.manifests import checked_manifest
from ortflow.engine.store.records import (
    Origin,
    Signature,
    checked_record,
    lock_disagreement,
    output_digests,
    record_problem,
    signature_of,
)
from ortflow.engine.store.remote import Listing, Remote
from ortflow.engine.store.remote_trust import Claims, claims_of, reuse_problem, stage_shown


@dataclass
class Unsigned:
    """A record served only by the opt-in: unsigned, or signed with nothing here to check it."""

    key: str
    stage: str
    uncheckable: bool  # signed, but this machine has no ORTFLOW_SIGNING_KEY


@dataclass
class RemoteVerdict:
    damage: list[Damage] = field(default_factory=list)
    unsigned: list[Unsigned] = field(default_factory=list)


def verify_remote(
    remote: Remote, locked: dict[str, tuple[str, dict[str, str]]] | None = None
) -> RemoteVerdict:
    listing = remote.listing()
    refused = _refused(remote, listing)  # a FIFO or a link to /dev/zero: never read
    verdict = RemoteVerdict(damage=list(refused.values()))
    damage = verdict.damage
    for digest in sorted(set(listing.objects) - set(refused)):
        actual = remote.hash_of(remote.object_name(digest))
        if actual != digest:
            damage.append(Damage("object", digest, f"content hashes to {actual}"))
    good = set(listing.objects) - {d.name for d in damage}
    for digest in sorted(listing.trees - set(refused)):
        manifest = checked_manifest(digest, remote.read_json(remote.tree_name(digest)))
        lacking = [] if isinstance(manifest, str) else sorted(set(manifest.values()) - good)
        if isinstance(manifest, str) or lacking:
            problem = manifest if isinstance(manifest, str) else None
            damage.append(
                Damage("folder", digest, problem or f"its file {lacking[0]} is missing or damaged")
            )
        else:
            good.add(digest)
    runs = sorted(listing.runs - set(refused))
    records = {key: remote.read_json(remote.run_name(key)) for key in runs}
    claims = claims_of(records)
    for key, record in records.items():
        found = _served_or_damage(key, record, good, locked or {}, claims)
        if isinstance(found, str):
            damage.append(Damage("run", key, found))
        elif signature_of(found) is not Signature.VALID:
            uncheckable = signature_of(found) is Signature.UNCHECKABLE
            verdict.unsigned.append(Unsigned(key, stage_shown(key, record), uncheckable))
    return verdict


def _refused(remote: Remote, listing: Listing) -> dict[str, Damage]:
    """The listed names on a folder remote that are not regular files inside it, by digest or key."""
    found = {}
    for what, names, name_of in (
        ("object", listing.objects, remote.object_name),
        ("folder", listing.trees, remote.tree_name),
        ("run", listing.runs, remote.run_name),
    ):
        for name in sorted(names):
            problem = remote.refusal(name_of(name))
            if problem:
                found[name] = Damage(what, name, f"{problem}, refused unread")
    return found


def _served_or_damage(
    key: str,
    record: Json,
    good: set[str],
    locked: dict[str, tuple[str, dict[str, str]]],
    claims: Claims,
) -> RunDocument | str:
    """The record, checked, or its damage: what no rule serves (an invalid signature, a record not what its
    key says, an unsigned one naming another record's object). Whether an unsigned record is served is the
    opt-in's to say."""
    found = checked_record(key, record, good.__contains__, Origin.REMOTE_UNSIGNED_OK)
    if isinstance(found, str):
        return found
    problem = None
    if signature_of(found) is Signature.INVALID:
        problem = record_problem(key, found, good.__contains__, Origin.REMOTE)
    if problem is None and signature_of(found) is not Signature.VALID:
        problem = reuse_problem(key, found, claims)
    if problem is None and key in locked:
        differs = lock_disagreement(output_digests(found), locked[key][1])
        if differs:
            return (
                f"disagrees with {locked[key][0]}: its output '{differs[0]}' is object {differs[1]}, the lock file "
                f"records {differs[2]}"
            )
    return problem or found


def remove_remote_damage(remote: Remote, damage: list[Damage]) -> None:
    """Records first: a record never outlives an object it names."""
    names = {"run": remote.run_name, "folder": remote.tree_name, "object": remote.object_name}
    for item in sorted(damage, key=lambda d: d.what != "run"):
        try:
            remote.remove(names[item.what](item.name))
        except FileNotFoundError:
            pass
