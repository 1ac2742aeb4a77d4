"""Which family's entries a lock file's stage gets (docs/cache.md, "One lock, entries per CPU family").

A `target: native` stage builds another model on another INT8 kernel family (its key holds `target_isa`), and a
float result may differ in its last bits from CPU to CPU. So a lock file keeps, beside `stages` (the entries of
the family that wrote it first, named by `family`), `families: {family: {stage: entry}}`: the entries another
family's runs made where they differ from `stages`. A run reads `stages` overlaid with its own family's entries,
adds its own where they differ, and never removes or rewrites another family's: a team with two kinds of CPU
gets one lock diff, once, instead of one on every run."""

from __future__ import annotations

from typing import Mapping

from ortflow.engine.contracts.builds import LockEntry
from ortflow.engine.contracts.types import Recipe


def inferred_family(stages: Mapping[str, LockEntry], recipe: Recipe) -> str | None:
    """The family a lock written before `family` was recorded was written on: the `target_isa` its
    `native` stages were keyed on (None where it has none: then no entry of it depends on the CPU)."""
    for name, entry in sorted(stages.items()):
        spec = recipe.stages.get(name)
        if spec is not None and spec.target_cpu == "native" and "target_isa" in entry.env:
            return entry.env["target_isa"]
    return None


def family_specific(
    name: str,
    entry: LockEntry,
    recipe: Recipe,
    base: LockEntry | None,
    family_digests: set[str],
) -> bool:
    """Whether a run's entry for `name` is its family's own (kept apart from `stages`): a `native` stage's,
    one whose inputs are another family-specific entry's outputs, one with the base's key but other output
    bytes (cross-CPU drift the run accepted), or one `stages` lacks (the base family has not run it yet).
    Anything else, a changed recipe above all, is the same for every family and goes to `stages`."""
    spec = recipe.stages.get(name)
    if spec is not None and spec.target_cpu == "native" and "target_isa" in entry.env:
        return True
    if base is None or _digests_in(entry.inputs) & family_digests:
        return True
    return base.key is not None and base.key == entry.key and entry.digests != base.digests


def drifted(entry: LockEntry, base: LockEntry | None) -> bool:
    """The base's key, other output bytes: a result this CPU made differently (accepted as drift)."""
    return (
        base is not None
        and base.key is not None
        and base.key == entry.key
        and entry.digests != base.digests
    )


def _digests_in(inputs: Mapping[str, str | list[str]]) -> set[str]:
    """The store digests a lock entry's inputs name: one per port, or a list for a port that takes several."""
    found: set[str] = set()
    for value in inputs.values():
        found.update(value if isinstance(value, list) else [str(value)])
    return found


def split_by_family(
    stages: Mapping[str, LockEntry],
    own: Mapping[str, LockEntry],
    fresh: Mapping[str, LockEntry],
    recipe: Recipe,
) -> tuple[dict[str, LockEntry], dict[str, LockEntry]]:
    """(entries for `stages`, this family's entries) after a run on a family other than the base's: `own`
    (what it recorded before) updated with the run's `fresh` entries that are family-specific; the others
    (the same on every family) go to `stages`, and this family's entry for them is dropped. Repeated until
    nothing moves, so a stage downstream of a family-specific one is family-specific too."""
    family = {name: entry for name, entry in own.items() if name in recipe.stages}
    pending = dict(fresh)
    shared = {digest for entry in stages.values() for digest in entry.digests.values()}
    moved = True
    while moved:
        moved = False
        digests = {d for entry in family.values() for d in entry.digests.values()} - shared
        for name, entry in sorted(pending.items()):
            if family_specific(name, entry, recipe, stages.get(name), digests):
                family[name] = pending.pop(name)
                moved = True
    for name in pending:
        family.pop(name, None)
    return pending, family
