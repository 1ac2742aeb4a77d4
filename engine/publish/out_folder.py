"""out/<recipe>/<stage>/: the folders a run publishes for people to use, each holding exactly its stage's
outputs of the last run, and a marker that says ortflow made it (so only its own stale folders are removed).
No level of out/ below the recipe's folder (or below an --out the user named outside it) may be a symbolic link:
ortflow writes and deletes there, and would do so wherever a planted link points (engine.store.links)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ortflow.engine.contracts.types import QuietObserver, StageOutcome
from ortflow.engine.leaves.disk_space import OUT_FIX, disk_full_message
from ortflow.engine.leaves.errors import no_space
from ortflow.engine.publish.report import stage_folder
from ortflow.engine.store import atomic
from ortflow.engine.store.base import Store
from ortflow.engine.store.links import real_folder, refuse_link, refuse_links_below

STAGE_MARKER = ".ortflow-stage"  # in each out/<recipe>/<stage>/ folder ortflow publishes


def remove_stale_folders(out_dir: Path, stages: Iterable[str]) -> None:
    """A stage taken out of the recipe (or a value out of a matrix) leaves no output folder behind to be
    mistaken for a current one. Only folders ortflow published (they hold its marker) are removed."""
    if not real_folder(out_dir):
        return
    current = {stage_folder(out_dir, name).name for name in stages}
    for entry in out_dir.iterdir():
        if real_folder(entry) and entry.name not in current and (entry / STAGE_MARKER).is_file():
            shutil.rmtree(entry)


def refuse_out_links(out_dir: Path, workspace: Path, stages: Iterable[str]) -> None:
    """Before a run writes anything: LinkRefused (exit 2) for a link at any level of `out_dir` below the
    recipe's folder `workspace` (below `out_dir` itself when the user named one outside it), at any stage's
    folder or inside one."""
    out_dir, workspace = Path(out_dir).absolute(), Path(workspace).absolute()
    refuse_links_below(workspace if workspace in out_dir.parents else out_dir, out_dir)
    if real_folder(out_dir):
        for name in stages:
            _refuse_in_stage_folder(stage_folder(out_dir, name))


def _refuse_in_stage_folder(folder: Path) -> None:
    refuse_link(folder)
    if real_folder(folder):
        for entry in folder.iterdir():
            refuse_link(entry)


def publish_stage(store: Store, out_dir: Path, outcome: StageOutcome) -> None:
    """Make out/<recipe>/<stage>/ hold exactly this run's outputs of the stage (nothing stale)."""
    # checked at the start of the run too: this is for a link made since
    _refuse_in_stage_folder(stage_folder(out_dir, outcome.name))
    folder = stage_folder(out_dir, outcome.name)
    if (
        outcome.record is None or outcome.record.refused
    ):  # failed, refused or skipped: nothing to show
        shutil.rmtree(folder, ignore_errors=True)
        return
    outputs = outcome.record.outputs.values()
    atomic.remove_stale_staging(folder)  # what a killed run was copying here
    for out in outputs:
        store.materialize(out.digest, folder / out.filename)
    atomic.write_text(folder / STAGE_MARKER, outcome.name + "\n")  # ours, to remove when stale
    keep = {out.filename for out in outputs}
    for entry in folder.iterdir():
        if entry.name not in keep and not entry.name.startswith("."):
            shutil.rmtree(entry) if real_folder(entry) else entry.unlink()


@dataclass
class Publisher(QuietObserver):
    """Publishes each finished stage to out/ as the run goes. A full disk there ends the publishing, not the
    run: the cache is elsewhere, so the stages still build, are cached and go into the lock file; the stage
    whose copy failed keeps no folder (half this run's outputs beside the last run's would be neither), and
    `full` says which disk filled and what to do (the run then exits 5)."""

    store: Store
    out_dir: Path
    full: str | None = None

    def stage_finished(self, outcome: StageOutcome) -> None:
        self.publish(outcome)

    def publish(self, outcome: StageOutcome) -> None:
        if self.full is not None:
            return
        try:
            publish_stage(self.store, self.out_dir, outcome)
        except OSError as exc:
            if no_space(exc) is None:
                raise
            shutil.rmtree(stage_folder(self.out_dir, outcome.name), ignore_errors=True)
            self.filled()

    def filled(self) -> None:
        self.full = disk_full_message("the outputs folder", self.out_dir, OUT_FIX)
