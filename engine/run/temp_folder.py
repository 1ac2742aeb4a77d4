"""The temporary files of a run (ORT's `pre.quant.*` and `ort.quant.*` folders, a library's scratch files) in
the cache's own tmp/, not in $TMPDIR: a run killed mid-stage leaves them in a work folder whose mutex died with
it, which the next run removes and `engine cache gc` counts, instead of tens of MB in /tmp nobody cleans.
Children the run starts (ORT's quant_pre_process runs in one) inherit the folder through TMPDIR."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ortflow.engine.store.base import Store


@contextmanager
def run_temp_folder(store: Store) -> Iterator[Path]:
    """TMPDIR (and Python's tempfile) pointed at a work folder of `store` for the duration, then restored."""
    with store.workdir("tmpdir") as folder:
        saved_env, saved = os.environ.get("TMPDIR"), tempfile.tempdir
        os.environ["TMPDIR"] = str(folder)
        tempfile.tempdir = str(folder)
        try:
            yield folder
        finally:
            tempfile.tempdir = saved
            if saved_env is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = saved_env
