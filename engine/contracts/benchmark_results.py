"""benchmark.json as a typed document: a benchmark stage's rows (one model timed under one configuration),
their latencies, the machine's load and the profiles. Written and read through engine.contracts.documents (which
checks it against schemas/benchmark_results.schema.json); the JSON is key for key what the stage wrote
before these classes existed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, TypedDict, cast

from ortflow.engine.contracts.json_values import (
    flag,
    integer,
    json_value,
    number_map,
    real,
    reals,
    texts,
)
from ortflow.engine.contracts.report_section import ReportSection
from ortflow.engine.leaves.json_types import Json, obj, objects, text


class Placement(TypedDict):
    requested: str
    nodes_by_provider: dict[str, int]
    fallback_nodes: int
    fallback_examples: list[str]


class Profile(TypedDict):
    """One model's profile: time share by op type and by node ([name, percent] pairs), and node placement."""

    op_types_percent: list[list[Json]]
    nodes_percent: list[list[Json]]
    placement: Placement


class MachineLoad(TypedDict):
    cpus: int
    load_1min: float | None
    others_percent: float | None
    steal_percent: float | None


@dataclass(frozen=True)
class Latency:
    """Milliseconds per run: mean, extremes and percentiles (in this order in the JSON)."""

    mean: float
    min: float
    max: float
    p50: float
    p90: float
    p95: float
    p99: float

    def to_json(self) -> dict[str, float]:
        return {
            "mean": self.mean,
            "min": self.min,
            "max": self.max,
            "p50": self.p50,
            "p90": self.p90,
            "p95": self.p95,
            "p99": self.p99,
        }


BENCHMARK_CONFIG = (
    "intra_op_threads",
    "batch_size",
    "sequence_length",
    "io_binding",
    "cuda_graph",
)  # BenchmarkRow.config()


@dataclass(frozen=True)
class SessionSettings:
    """How the session behind a row's timings was made, so that whoever takes the model can reproduce the
    number: the providers with their options as passed to InferenceSession (a CUDA graph shows as
    `enable_cuda_graph` in the CUDA provider's), the graph optimization level, the threads, and how it was fed."""

    providers: list[Json]  # names, or {name, options}
    optimization_level: str  # benchmark's names: disabled, basic, extended, all
    intra_op_threads: int  # 0: ORT's default
    inter_op_threads: int
    execution_mode: str  # sequential or parallel
    io_binding: bool
    cuda_graph: bool

    def to_json(self) -> dict[str, Json]:
        return {
            "providers": list(self.providers),
            "optimization_level": self.optimization_level,
            "intra_op_threads": self.intra_op_threads,
            "inter_op_threads": self.inter_op_threads,
            "execution_mode": self.execution_mode,
            "io_binding": self.io_binding,
            "cuda_graph": self.cuda_graph,
        }

    @classmethod
    def from_json(cls, data: dict[str, Json]) -> SessionSettings:
        providers = data["providers"]
        return cls(
            providers if isinstance(providers, list) else [],
            text(data["optimization_level"]),
            integer(data["intra_op_threads"]),
            integer(data["inter_op_threads"]),
            text(data["execution_mode"]),
            flag(data["io_binding"]),
            flag(data["cuda_graph"]),
        )

    def describe(self) -> str:
        """One line, e.g. "CUDAExecutionProvider {enable_cuda_graph: 1}, IO binding, CUDA graph, threads default"."""
        providers = ", ".join(
            p if isinstance(p, str) else f"{obj(p)['name']} {obj(p).get('options') or {}}"
            for p in self.providers
        )
        feeding = ", IO binding" if self.io_binding else ""
        graph = ", CUDA graph" if self.cuda_graph else ""
        return (
            f"{providers}{feeding}{graph}, optimization {self.optimization_level}, "
            f"threads {self.intra_op_threads or 'default'}"
        )


@dataclass(frozen=True)
class BenchmarkRow:
    """One model timed under one configuration (threads, batch size, sequence length, IO binding)."""

    model: str
    intra_op_threads: int
    batch_size: int
    providers_used: list[str]
    session_create_s: float
    peak_rss_mb: float | None
    size_mb: float
    latencies_ms: list[float]
    latency_ms: Latency
    throughput_per_s: float
    runs: int
    sequence_length: int | None = None
    io_binding: bool = False
    speedup: float = 1.0
    cuda_graph: bool = False
    session: SessionSettings | None = (
        None  # None in documents written before sessions were recorded
    )
    # each round's median, in round order: what the run-to-run spread of a speedup is read from (select's
    # rule that an optimized model beats the original in every round); empty in documents from before
    round_p50_ms: tuple[float, ...] = ()

    def config(self) -> tuple[int, int, int | None, bool, bool]:
        """What makes two rows comparable: the same configuration (the order of BENCHMARK_CONFIG)."""
        return (
            self.intra_op_threads,
            self.batch_size,
            self.sequence_length,
            self.io_binding,
            self.cuda_graph,
        )

    def to_json(self) -> dict[str, Json]:
        return {
            "model": self.model,
            "intra_op_threads": self.intra_op_threads,
            "batch_size": self.batch_size,
            "providers_used": list(self.providers_used),
            "session_create_s": self.session_create_s,
            "peak_rss_mb": self.peak_rss_mb,
            "size_mb": self.size_mb,
            "latencies_ms": list(self.latencies_ms),
            "latency_ms": json_value(self.latency_ms.to_json()),
            "throughput_per_s": self.throughput_per_s,
            "runs": self.runs,
            "sequence_length": self.sequence_length,
            "io_binding": self.io_binding,
            "speedup": self.speedup,
            # absent from documents written before CUDA graphs and sessions were recorded (kept byte for byte)
            **({"cuda_graph": self.cuda_graph} if self.cuda_graph or self.session else {}),
            **({"session": self.session.to_json()} if self.session is not None else {}),
            **({"round_p50_ms": list(self.round_p50_ms)} if self.round_p50_ms else {}),
        }

    @classmethod
    def from_json(cls, row: dict[str, Json]) -> BenchmarkRow:
        session, sequence = row.get("session"), row.get("sequence_length")
        return cls(
            text(row["model"]),
            integer(row["intra_op_threads"]),
            integer(row["batch_size"]),
            texts(row["providers_used"]),
            real(row["session_create_s"]),
            None if row["peak_rss_mb"] is None else real(row["peak_rss_mb"]),
            real(row["size_mb"]),
            reals(row["latencies_ms"]),
            Latency(**number_map(row["latency_ms"])),
            real(row["throughput_per_s"]),
            integer(row["runs"]),
            None if sequence is None else integer(sequence),
            flag(row.get("io_binding", False)),
            real(row.get("speedup", 1.0)),
            flag(row.get("cuda_graph", False)),
            SessionSettings.from_json(obj(session)) if session else None,
            tuple(reals(row.get("round_p50_ms"))),
        )


@dataclass(frozen=True)
class BenchmarkResults:
    """benchmark.json: every row, the baseline speedups are relative to, how busy the machine was, and the
    profiles (when asked for, or on a GPU provider)."""

    baseline: str
    note: str
    load: MachineLoad
    machine: dict[str, str]
    results: list[BenchmarkRow]
    profiles: dict[str, Profile]
    report: ReportSection
    skipped: tuple[str, ...] = ()  # configurations not timed, each with why

    SCHEMA = "benchmark_results"

    def row(self, model: str, like: BenchmarkRow | None = None) -> BenchmarkRow | None:
        """The row of `model` (under the configuration of `like`, when given)."""
        return next(
            (
                r
                for r in self.results
                if r.model == model and (like is None or r.config() == like.config())
            ),
            None,
        )

    def to_json(self) -> dict[str, Json]:
        return {
            "baseline": self.baseline,
            "note": self.note,
            "load": json_value(self.load),
            "machine": json_value(self.machine),
            "results": [r.to_json() for r in self.results],
            "profiles": json_value(self.profiles),
            "report": json_value(self.report),
            **({"skipped": list(self.skipped)} if self.skipped else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Json]) -> BenchmarkResults:
        # read() checked `data` against the schema: its parts have the shapes the TypedDicts name
        return cls(
            text(data["baseline"]),
            text(data.get("note", "")),
            cast(MachineLoad, obj(data.get("load"))),
            {key: text(value) for key, value in obj(data.get("machine")).items()},
            [BenchmarkRow.from_json(r) for r in objects(data["results"])],
            cast("dict[str, Profile]", obj(data.get("profiles"))),
            cast(ReportSection, obj(data.get("report"))),
            tuple(texts(data.get("skipped"))),
        )


def with_speedups(
    rows: list[BenchmarkRow], baseline: str, speedup: Callable[[BenchmarkRow, BenchmarkRow], float]
) -> list[BenchmarkRow]:
    """Each row with its speedup against the baseline's row of the same configuration; where the baseline has
    none with a CUDA graph (none could be captured for it), against its row of the configuration without (and
    with neither timed, against itself: 1.0)."""
    bases = {r.config(): r for r in rows if r.model == baseline}

    def base(r: BenchmarkRow) -> BenchmarkRow:
        return bases.get(r.config()) or bases.get(replace(r, cuda_graph=False).config()) or r

    return [replace(r, speedup=speedup(base(r), r)) for r in rows]
