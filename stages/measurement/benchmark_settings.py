"""benchmark's parameters read typed: a frozen dataclass standing for benchmark_params.PARAMS_SCHEMA, read
with ctx.settings() rather than by key, and the values of a swept one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from ortflow.api import Json

T = TypeVar("T")


@dataclass(frozen=True)
class BenchmarkSettings:
    """Benchmark's parameters (benchmark_params.PARAMS_SCHEMA; tests/unit/test_stages_typed.py holds the two
    together); a swept one is a value or a list of them."""

    providers: tuple[str | dict[str, Json], ...] = ("CPUExecutionProvider",)
    optimization_level: str = "all"
    intra_op_threads: int | tuple[int, ...] = 0
    inter_op_threads: int = 0
    execution_mode: str = "sequential"
    batch_size: int | tuple[int, ...] = 1
    sequence_length: int | tuple[int, ...] | None = None  # None: as fed
    samples: int = 16
    warmup: int = 10
    runs: int = 100
    seconds: float | None = None  # None: `runs` runs, not a time budget
    io_binding: bool | tuple[bool, ...] = False
    cuda_graph: bool | tuple[bool, ...] = False
    rounds: int = 5
    baseline: str | None = None  # None: the first model
    note: str = ""
    peak_memory: bool = True
    profile: bool = False


def swept(value: T | tuple[T, ...]) -> list[T]:
    """A swept parameter's values: its list (read as a tuple), or the one value given."""
    return list(value) if isinstance(value, tuple) else [value]


@dataclass(frozen=True)
class SessionConfig:
    """One configuration of the sweep as its sessions are made and called: the providers and session options
    (the same across the sweep) and how this configuration feeds them (IO binding, a CUDA graph). The sessions,
    profiles and peak-memory helpers take it instead of the parameters by key."""

    providers: tuple[str | dict[str, Json], ...]  # each a name or {name, options}
    optimization_level: str
    inter_op_threads: int
    execution_mode: str
    io_binding: bool = False
    cuda_graph: bool = False

    @classmethod
    def of(
        cls, settings: BenchmarkSettings, io_binding: bool = False, cuda_graph: bool = False
    ) -> SessionConfig:
        """The configuration from the parameters, feeding plainly unless told otherwise."""
        return cls(
            settings.providers,
            settings.optimization_level,
            settings.inter_op_threads,
            settings.execution_mode,
            io_binding,
            cuda_graph,
        )
