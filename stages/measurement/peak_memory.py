"""A model's peak resident memory, measured in a process of its own that loads and runs it."""

from __future__ import annotations

from pathlib import Path

from ortflow.api.processes import child_command
from ortflow.api.providers import for_session
from ortflow.stages.measurement.benchmark_params import LEVELS
from ortflow.stages.measurement.benchmark_settings import SessionConfig

PEAK_MEMORY_SCRIPT = """
import pickle, sys
import onnxruntime as ort
path, providers, level, threads, feed = pickle.load(sys.stdin.buffer)
options = ort.SessionOptions()
options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
options.intra_op_num_threads = threads
options.log_severity_level = 3
session = ort.InferenceSession(path, sess_options=options, providers=providers)
for _ in range(3):
    session.run(None, feed)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec, so it would report the (large) parent's peak
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


def peak_memory_mb(path: Path, params: SessionConfig, threads: int, feed: dict) -> float | None:
    """Peak resident memory of a fresh process that loads the model and runs it: models timed in one
    process share its memory, so only a process of its own says what serving a model costs. The process dies
    with the engine's (child_command): a `kill -9` of `engine run` must not leave a model loaded."""
    import pickle
    import subprocess

    payload = pickle.dumps(
        (
            str(path),
            for_session(list(params.providers)),
            LEVELS[params.optimization_level],
            threads,
            feed,
        )
    )
    try:
        done = subprocess.run(
            child_command(PEAK_MEMORY_SCRIPT),
            input=payload,
            capture_output=True,
            timeout=600,
            check=True,
        )
    except (subprocess.SubprocessError, OSError):
        return None
    return round(int(done.stdout.split()[-1]) / 1024, 1)  # VmHWM is in kB
