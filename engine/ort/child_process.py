"""Child processes that die with the process that started them: a `kill -9` of `engine run` must not leave a
child running for seconds or minutes, writing into the cache's tmp/ or holding memory."""

from __future__ import annotations

# The first lines of a child's script: on Linux it asks the kernel to SIGKILL it when its parent dies
# (PR_SET_PDEATHSIG), then checks the parent did not die before it asked (argv[1] is the parent's pid). A
# `kill -9` of `engine run` then takes the child with it, instead of leaving it writing into the cache's tmp/
# for seconds. (The signal comes when the parent's thread that started the child ends; that thread waits for
# the child, so only the parent's death ends it first.)
DIE_WITH_PARENT = (
    "import os, signal, sys\n"
    "if sys.platform.startswith('linux'):\n"
    "    import ctypes\n"
    "    ctypes.CDLL(None).prctl(1, signal.SIGKILL)\n"
    "    if os.getppid() != int(sys.argv[1]):\n"
    "        os._exit(1)\n"
)


def child_command(script: str, *args: str) -> list[str]:
    """`python -c script args...` for a child that dies with this process (DIE_WITH_PARENT runs first; the
    script finds its own arguments from sys.argv[2] on)."""
    import os
    import sys

    return [sys.executable, "-c", DIE_WITH_PARENT + script, str(os.getpid()), *args]
