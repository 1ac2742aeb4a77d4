"""`engine cache verify --remote`: every object on the remote re-hashed from its bytes, every folder manifest
and run record checked as a download would check it, and (for the recipes named) records against lock files."""

from __future__ import annotations

from typing import Any

from ortflow.engine.store.artifacts import Damage
from ortflow.engine.store.records import lock_disagreement, output_digests, record_problem
from ortflow.engine.store.remote import Listing, Remote
from ortflow.engine.store.transfer import manifest_problem


def verify_remote(
    remote: Remote, locked: dict[str, tuple[str, dict[str, str]]] | None = None
) -> list[Damage]:
    listing = remote.listing()
    refused = _refused(remote, listing)  # a FIFO or a link to /dev/zero: never read
    damage: list[Damage] = list(refused.values())
    for digest in sorted(set(listing.objects) - set(refused)):
        actual = remote.hash_of(remote.object_name(digest))
        if actual != digest:
            damage.append(Damage("object", digest, f"content hashes to {actual}"))
    good = set(listing.objects) - {d.name for d in damage}
    for digest in sorted(listing.trees - set(refused)):
        manifest = remote.read_json(remote.tree_name(digest))
        problem = manifest_problem(digest, manifest)
        lacking = [] if problem else sorted(set(manifest.values()) - good)
        if problem or lacking:
            damage.append(
                Damage("folder", digest, problem or f"its file {lacking[0]} is missing or damaged")
            )
        else:
            good.add(digest)
    for key in sorted(listing.runs - set(refused)):
        problem = _run_problem(remote, key, good, locked or {})
        if problem:
            damage.append(Damage("run", key, problem))
    return damage


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


def _run_problem(
    remote: Remote, key: str, good: set[str], locked: dict[str, tuple[str, dict[str, str]]]
) -> str | None:
    record: Any = remote.read_json(remote.run_name(key))
    problem = record_problem(key, record, good.__contains__)
    if problem is None and key in locked:
        differs = lock_disagreement(output_digests(record), locked[key][1])
        if differs:
            return (
                f"disagrees with {locked[key][0]}: its output '{differs[0]}' is object {differs[1]}, the lock file "
                f"records {differs[2]}"
            )
    return problem


def remove_remote_damage(remote: Remote, damage: list[Damage]) -> None:
    """Records first: a record never outlives an object it names."""
    names = {"run": remote.run_name, "folder": remote.tree_name, "object": remote.object_name}
    for item in sorted(damage, key=lambda d: d.what != "run"):
        try:
            remote.remove(names[item.what](item.name))
        except FileNotFoundError:
            pass
