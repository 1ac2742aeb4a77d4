"""Work folders under the store's tmp/ that nobody holds: a killed run's (its stages' files and the temporary
files ORT and libraries made there: engine.run.temp_folder) or a killed pull's partial download, on this
machine or another sharing the cache. Each work folder has a mutex file beside it, held (flock) while it is in
use, so a folder whose mutex can be taken is abandoned whatever host made it."""

from __future__ import annotations

import os
from pathlib import Path

from ortflow.engine.store import atomic
from ortflow.engine.store.atomic import ProcessMutex
from ortflow.engine.store.files import remove_path, tree_size
from ortflow.engine.store.links import link_target, real_folder


def stale_work(tmp: Path, dry_run: bool = False) -> dict[str, int]:
    """{name under `tmp`: bytes} of what nobody holds; removed unless `dry_run`. A link there is not ours:
    the link itself goes, never what it points to."""
    stale: dict[str, int] = {}
    for mutex_path in sorted(tmp.glob("*.lock")):
        if link_target(mutex_path) is not None:
            stale[mutex_path.name] = 0
            if not dry_run:
                mutex_path.unlink()
            continue
        mutex = ProcessMutex(mutex_path)
        if not mutex.acquire(blocking=False):
            continue  # a live run, here or on another host sharing the cache
        try:
            if mutex.still_current():
                folder = mutex_path.with_suffix("")
                stale[folder.name] = tree_size(folder)
                if not dry_run:
                    remove_path(folder)
                    mutex_path.unlink(missing_ok=True)
        finally:
            mutex.release()
    for entry in sorted(tmp.iterdir()):  # one whose mutex file is gone was abandoned mid-cleanup
        orphan = not os.path.lexists(entry.with_name(entry.name + ".lock"))
        if orphan and entry.name not in stale and (real_folder(entry) or link_target(entry)):
            stale[entry.name] = tree_size(entry)
            if not dry_run:
                remove_path(entry)
    if not dry_run:
        atomic.remove_stale_staging(tmp)
    return stale
