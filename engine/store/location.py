"""Where the artifact store is, decided in one place for `engine run` and every `engine cache` command."""

from __future__ import annotations

import os
from pathlib import Path

from ortflow.engine.store.links import refuse_link

FOLDER = ".ortflow"


def cache_root(named: Path | str | None = None, recipe: Path | str | None = None) -> Path:
    """The folder the user named (--cache), else $ORTFLOW_CACHE, else `.ortflow` beside the recipe (or in the
    working folder when no recipe is named). The default must not be a link: one that came with a cloned
    folder would put the cache, and gc's removals, wherever it points; a folder the user named is theirs."""
    if named:
        return Path(named)
    if os.environ.get("ORTFLOW_CACHE"):
        return Path(os.environ["ORTFLOW_CACHE"])
    folder = Path(recipe).resolve().parent / FOLDER if recipe is not None else Path(FOLDER)
    refuse_link(folder)
    return folder
