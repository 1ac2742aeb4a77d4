"""Moved to `ortflow.loaders.text` (dataset loaders are plugins, which import only ortflow.api). This module
re-exports it for one release, with a DeprecationWarning."""

from ortflow.engine.loaders import moved
from ortflow.loaders.text import TextLoader

moved(__name__, "TextLoader")

__all__ = ["TextLoader"]
