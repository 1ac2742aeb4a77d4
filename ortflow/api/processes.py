"""Child processes for stages that measure or transform a model in a process of its own: `child_command` builds a
`python -c` command line whose process dies with the engine's (a `kill -9` of `engine run` takes it along). Part
of the stable plugin API (see ortflow.api)."""

from ortflow.engine.ort.child_process import child_command

__all__ = ["child_command"]
