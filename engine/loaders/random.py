"""Moved to `ortflow.loaders.random` (dataset loaders are plugins, which import only ortflow.api). This module
re-exports it for one release, with a DeprecationWarning."""

from ortflow.engine.loaders import moved
from ortflow.loaders.random import RandomLoader

moved(__name__, "RandomLoader")

__all__ = ["RandomLoader"]
