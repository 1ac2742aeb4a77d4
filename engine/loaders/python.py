"""Moved to `ortflow.loaders.python` (dataset loaders are plugins, which import only ortflow.api). This module
re-exports it for one release, with a DeprecationWarning."""

from ortflow.engine.loaders import moved
from ortflow.loaders.python import PythonLoader

moved(__name__, "PythonLoader")

__all__ = ["PythonLoader"]
