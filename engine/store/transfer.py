"""Push and pull: run records and the objects they name, between the local store and a remote
(engine.store.remote). What the other side holds is skipped by name (objects are named by their hash);
a record goes up only after every object it names, and comes down only after every object it names has
been downloaded and re-hashed, so neither side ever serves a record whose objects are missing."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ortflow.engine.contracts.build_json import RunDocument
from ortflow.engine.leaves.disk_space import PULL_FIX, PUSH_FIX, said_when_full
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.store.artifacts import ArtifactStore
from ortflow.engine.store.manifests import DAMAGED, checked_manifest
from ortflow.engine.store.meter import Counted, Meter, NoMeter
from ortflow.engine.store.records import output_digests
from ortflow.engine.store.remote import Listing, Remote
from ortflow.engine.store.remote_trust import (
    ClaimsSource,
    checked_remote_record,
    for_remote,
    lazy_claims,
    remote_claims,
)


@dataclass
class Tally:
    """What a push or pull moved, skipped and could not do."""

    objects: int = 0
    bytes: int = 0
    records: int = 0
    skipped_objects: int = 0
    skipped_records: int = 0
    missing: list[str] = field(
        default_factory=list
    )  # stages whose record the source side does not hold
    problems: list[str] = field(default_factory=list)  # one line each: what was refused, and why


# -- push ------------------------------------------------------------------------------------------


def push(
    store: ArtifactStore, remote: Remote, keys: dict[str, str], meter: Meter | None = None
) -> Tally:
    """Upload the run records of `keys` ({cache key: stage name}) and their objects, skipping what is there.
    A full disk on a folder remote is DiskFull naming the remote's disk (a failed write leaves no file there)."""
    if remote.atomic_put:  # an object store: no disk of this machine's to fill
        return _push(store, remote, keys, meter or NoMeter())
    with said_when_full(f"the remote {remote.shown}", Path(remote.root), PUSH_FIX):
        return _push(store, remote, keys, meter or NoMeter())


def _push(store: ArtifactStore, remote: Remote, keys: dict[str, str], meter: Meter) -> Tally:
    tally = Tally()
    listing = remote.listing()
    records: dict[str, RunDocument] = {}
    for key, stage in sorted(keys.items()):
        record = ArtifactStore.read_run_json(
            store, key
        )  # this cache's own record: never a read-through download
        if record is None:
            if key not in listing.runs:
                tally.missing.append(stage)
            continue
        records[key] = for_remote(record, remote)
    digests = {digest for record in records.values() for digest in _digests(record)}
    upload_objects(store, remote, digests, listing, meter, tally)
    fresh = {
        remote.run_name(key): record for key, record in records.items() if key not in listing.runs
    }
    remote.write_many(fresh)  # last: every object these records name is there now
    tally.records += len(fresh)
    tally.skipped_records += len(records) - len(fresh)
    return tally


def publish_run(store: ArtifactStore, remote: Remote, key: str, tally: Tally) -> None:
    """push() for one key, asking the remote about that key's objects only (no listing of the whole remote)."""
    if remote.size(remote.run_name(key)) is not None:
        tally.skipped_records += 1
        return
    record = store.read_run_json(key)
    if record is None:
        tally.missing.append(key[:12])
        return
    record = for_remote(record, remote)
    digests = _digests(record)
    upload_objects(store, remote, digests, _probe(store, remote, digests), NoMeter(), tally)
    remote.write_json(remote.run_name(key), record)
    tally.records += 1


def _probe(store: ArtifactStore, remote: Remote, digests: set[str]) -> Listing:
    """What the remote holds of these objects (and of a folder object's files), one request each."""
    found = Listing()
    for digest in digests:
        path = store.object_path(digest)
        if path.is_dir():
            if remote.size(remote.tree_name(digest)) is not None:
                found.trees.add(digest)
                continue
            members = {store.hashes.hash_path(f) for f in path.rglob("*") if f.is_file()}
        else:
            members = {digest}
        for member in members:
            size = remote.size(remote.object_name(member))
            if size is not None:
                found.objects[member] = size
    return found


def upload_objects(
    store: ArtifactStore,
    remote: Remote,
    digests: set[str],
    listing: Listing,
    meter: Meter,
    tally: Tally,
) -> None:
    """Files first (a folder object's files are objects of their own), then folder manifests."""
    files: dict[str, Path] = {}
    trees: dict[str, dict[str, str]] = {}
    for digest in sorted(digests):
        path = store.object_path(digest)
        if path.is_dir():
            if digest in listing.trees:
                tally.skipped_objects += 1
                continue
            trees[digest] = {
                f.relative_to(path).as_posix(): store.hashes.hash_path(f)
                for f in sorted(path.rglob("*"))
                if f.is_file()
            }
            files.update({member: path / rel for rel, member in trees[digest].items()})
        else:
            files[digest] = path
    todo = {d: p for d, p in files.items() if d not in listing.objects}
    tally.skipped_objects += len(files) - len(todo)
    sizes = {d: p.stat().st_size for d, p in todo.items()}
    meter.start("push", sum(sizes.values()))
    counted = Counted(meter)
    remote.upload([(path, remote.object_name(d)) for d, path in todo.items()], counted)
    counted.top_up(sum(sizes.values()))
    tally.objects += len(todo)
    tally.bytes += sum(sizes.values())
    for digest, manifest in trees.items():
        remote.write_json(remote.tree_name(digest), manifest)
        tally.objects += 1


# -- pull ------------------------------------------------------------------------------------------


def pull(
    store: ArtifactStore, remote: Remote, keys: dict[str, str], meter: Meter | None = None
) -> Tally:
    """Download the run records of `keys` ({cache key: stage name}) with their objects, each re-hashed. A full
    local disk is DiskFull naming the cache's disk (the download's work folder goes with the error). What a
    killed pull left (a partial download in a work folder nobody holds) goes first."""
    store.remove_stale_tmp()
    with said_when_full("the cache", store.root, PULL_FIX):
        return _pull(store, remote, keys, meter or NoMeter())


def _pull(store: ArtifactStore, remote: Remote, keys: dict[str, str], meter: Meter) -> Tally:
    tally = Tally()
    listing = remote.listing()
    wanted: dict[str, RunDocument] = {}
    remote_keys = []
    for key, stage in sorted(keys.items()):
        if (
            ArtifactStore.read_run_json(store, key) is not None
        ):  # this cache's own record (no read-through)
            tally.skipped_records += 1
        elif key not in listing.runs:
            tally.missing.append(stage)
        elif not _refused(remote, remote.run_name(key), f"run record {key[:12]} ({stage})", tally):
            remote_keys.append(key)
    fetched = remote.read_many([remote.run_name(key) for key in remote_keys])
    claims = lazy_claims(lambda: remote_claims(remote, listing.runs))
    for key in remote_keys:
        record = _checked_record(
            remote, key, keys[key], listing.holds, tally, claims, fetched[remote.run_name(key)]
        )
        if record is not None:
            wanted[key] = record
    digests = {digest for record in wanted.values() for digest in _digests(record)}
    fetch_objects(store, remote, digests, meter, tally, listing)
    for key, record in wanted.items():
        if all(store.object_intact(digest) for digest in _digests(record)):
            store.write_run_json(key, record, as_is=True)
            tally.records += 1
    return tally


def fetch_run(
    store: ArtifactStore, remote: Remote, key: str, stage: str, claims: ClaimsSource | None = None
) -> tuple[RunDocument | None, Tally]:
    """Read-through: one key's record and objects, without listing the whole remote (unless an unsigned
    record the user accepted needs `claims`: engine.store.remote_trust)."""
    tally = Tally()
    claims = claims or lazy_claims(lambda: remote_claims(remote, remote.listing().runs))
    record = _checked_record(remote, key, stage, lambda _digest: True, tally, claims)
    if record is None:
        return None, tally
    fetch_objects(store, remote, _digests(record), NoMeter(), tally)
    if tally.problems:
        return None, tally
    store.write_run_json(key, record, as_is=True)
    tally.records += 1
    return store.read_run_json(key), tally


def _digests(record: RunDocument) -> set[str]:
    """The objects a checked record names (its document moves verbatim)."""
    return set(output_digests(record).values())


def _checked_record(
    remote: Remote,
    key: str,
    stage: str,
    holds: Callable[[str], bool],
    tally: Tally,
    claims: ClaimsSource,
    record: Json = None,
) -> RunDocument | None:
    """The remote record for `key` (read here unless given) if it passes the checks a local record must pass
    (its key recomputed, plain output names) and the remote's (engine.store.remote_trust), else None with the
    reason in the tally."""
    if record is None and _refused(
        remote, remote.run_name(key), f"run record {key[:12]} ({stage})", tally
    ):
        return None
    record = record if record is not None else remote.read_json(remote.run_name(key))
    if record is None:
        tally.missing.append(stage)
        return None
    found = checked_remote_record(remote, key, record, holds, claims)
    if isinstance(found, str):
        tally.problems.append(f"{remote.shown}: {stage} not pulled: {found}")
        return None
    return found


def fetch_objects(
    store: ArtifactStore,
    remote: Remote,
    digests: set[str],
    meter: Meter,
    tally: Tally,
    listing: Listing | None = None,
) -> None:
    """Download what the local store lacks; each file is re-hashed and refused when it is not what its name says."""
    need = sorted(d for d in digests if not store.object_intact(d))
    tally.skipped_objects += len(digests) - len(need)
    if not need:
        return
    with store.workdir("pull") as work:
        sizes, trees = _locate(remote, need, listing, tally)
        for digest, manifest in list(trees.items()):
            for member in manifest.values():
                if member not in sizes:
                    size = (
                        listing.objects.get(member)
                        if listing
                        else remote.size(remote.object_name(member))
                    )
                    if size is None:
                        tally.problems.append(
                            f"{remote.shown}: folder object {digest} lacks its file {member}; {DAMAGED}"
                        )
                        trees.pop(digest)
                        break
                    sizes[member] = size
        good = _download(store, remote, sizes, work, meter, tally)
        for digest, plain in good.items():
            if (
                digest in need and digest not in trees
            ):  # a file a folder also holds is copied, not moved
                store.adopt(_copy(plain, work) if _also_in_tree(digest, trees) else plain, digest)
                tally.objects += 1
        for digest, manifest in trees.items():
            if all(m in good for m in manifest.values()):
                folder = work / f"tree-{digest}"
                for rel, member in manifest.items():
                    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(good[member], folder / rel)
                store.add(folder)  # the folder's digest from its files: what it is stored under
                tally.objects += 1


def _locate(
    remote: Remote, need: list[str], listing: Listing | None, tally: Tally
) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    """({file object: bytes}, {folder object: manifest}) for the digests needed."""
    sizes: dict[str, int] = {}
    trees: dict[str, dict[str, str]] = {}
    for digest in need:
        size = listing.objects.get(digest) if listing else remote.size(remote.object_name(digest))
        if size is not None:
            sizes[digest] = size
            continue
        if _refused(remote, remote.tree_name(digest), f"object {digest}", tally):
            continue
        found = checked_manifest(digest, remote.read_json(remote.tree_name(digest)))
        if isinstance(found, str):
            tally.problems.append(f"{remote.shown}: object {digest} {found}")
        else:
            trees[digest] = found
    return sizes, trees


def _download(
    store: ArtifactStore,
    remote: Remote,
    sizes: dict[str, int],
    work: Path,
    meter: Meter,
    tally: Tally,
) -> dict[str, Path]:
    """Download the file objects into `work`; {digest: path} of those whose bytes hash to their name."""
    sizes = {
        d: n
        for d, n in sizes.items()
        if not _refused(remote, remote.object_name(d), f"object {d}", tally)
    }
    meter.start("pull", sum(sizes.values()))
    counted = Counted(meter)
    pairs = [(remote.object_name(d), work / d) for d in sorted(sizes)]
    try:
        hashed = remote.download(pairs, counted)
    except FileNotFoundError as exc:  # removed between the listing and the download (a remote gc)
        tally.problems.append(
            f"{remote.shown}: an object went missing during the download "
            f"({exc.args[0] if exc.args else exc})"
        )
        return {}
    actuals = {path.name: digest for path, digest in hashed.items()}
    counted.top_up(sum(sizes.values()))
    good = {}
    for digest, path in ((d, work / d) for d in sorted(sizes)):
        actual = actuals[digest]
        if actual != digest:
            tally.problems.append(f"{remote.shown}: object {digest} hashes to {actual}: {DAMAGED}")
            path.unlink()
            continue
        good[digest] = path
        tally.bytes += sizes[digest]
    return good


def _refused(remote: Remote, name: str, what: str, tally: Tally) -> bool:
    """A name on a folder remote that is not a regular file inside it is refused before anything reads it."""
    problem = remote.refusal(name)
    if problem:
        tally.problems.append(f"{remote.shown}: {what} {problem}, refused unread; {DAMAGED}")
    return problem is not None


def _also_in_tree(digest: str, trees: dict[str, dict[str, str]]) -> bool:
    return any(digest in manifest.values() for manifest in trees.values())


def _copy(path: Path, work: Path) -> Path:
    copy = work / f"{path.name}.copy"
    shutil.copyfile(path, copy)
    return copy
