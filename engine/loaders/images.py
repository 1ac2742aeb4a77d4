"""Moved to `ortflow.loaders.images` (dataset loaders are plugins, which import only ortflow.api). This module
re-exports it for one release, with a DeprecationWarning."""

from ortflow.engine.loaders import moved
from ortflow.loaders.images import ImagesLoader

moved(__name__, "ImagesLoader")

__all__ = ["ImagesLoader"]
