"""Moved to `ortflow.loaders.npy_dir` (dataset loaders are plugins, which import only ortflow.api). This module
re-exports it for one release, with a DeprecationWarning."""

from ortflow.engine.loaders import moved
from ortflow.loaders.npy_dir import NpyDirLoader

moved(__name__, "NpyDirLoader")

__all__ = ["NpyDirLoader"]
