"""What gc removes from a store: run records no one keeps, and objects no kept record or digest names."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortflow.engine.contracts.builds import RunRecord
from ortflow.engine.store.base import Objects
from ortflow.engine.store.files import tree_size


@dataclass(frozen=True)
class Collected:
    """What gc removes (or, in a dry run, would remove)."""

    runs: dict[str, str]  # cache key -> the stage it recorded
    objects: dict[str, int]  # digest -> bytes
    stale: dict[str, int] = field(default_factory=dict)  # tmp/ work folders nobody holds -> bytes

    @property
    def bytes(self) -> int:
        return sum(self.objects.values()) + sum(self.stale.values())


def collectable(
    store: Objects,
    keep_keys: set[str],
    keep_digests: set[str],
    records: dict[str, RunRecord | None],
) -> Collected:
    """The records (by key, None for a file that is no record) and objects of `store` that gc may remove."""
    live = set(keep_digests)
    keep = set(keep_keys)
    pending = [k for k in keep_keys if records.get(k)]
    while pending:  # a kept run keeps the steps it ran (engine.run.steps), and theirs
        kept = records[pending.pop()]
        for step in kept.steps if kept is not None else ():
            if step not in keep and records.get(step):
                keep.add(step)
                pending.append(step)
    runs = {}
    for key, record in records.items():
        if key in keep and record is not None:
            live.update(record.digests.values())
        else:
            runs[key] = (record.stage or "?") if record is not None else "?"
    objects = {
        digest: tree_size(store.object_path(digest))
        for digest in store.iter_objects()
        if digest not in live
    }
    return Collected(runs, objects)
