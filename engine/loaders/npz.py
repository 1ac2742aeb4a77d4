"""Moved to `ortflow.loaders.npz` (dataset loaders are plugins, which import only ortflow.api). This module
re-exports it for one release, with a DeprecationWarning."""

from ortflow.engine.loaders import moved
from ortflow.loaders.npz import NpzLoader

moved(__name__, "NpzLoader")

__all__ = ["NpzLoader"]
