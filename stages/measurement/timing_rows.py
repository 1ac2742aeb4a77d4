"""benchmark's row for a model while it is timed (what it ran on, its session's creation time, size and peak
memory, and the latencies gathered round by round), and the BenchmarkRow it becomes: the latency statistics
rounded to the microsecond."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.api import onnx as onnx_model
from ortflow.stages.measurement.benchmark_settings import SessionConfig
from ortflow.stages.measurement.peak_memory import peak_memory_mb

if TYPE_CHECKING:  # the result documents are imported when the stage runs (engine plan stays light)
    from ortflow.api import BenchmarkRow

PERCENTILES = (50, 90, 95, 99)


@dataclass
class Timing:
    """A model's row before its statistics: filled by the rounds, then read once into a BenchmarkRow."""

    model: str
    intra_op_threads: int
    batch_size: int
    providers_used: list[str]
    session_create_s: float
    peak_rss_mb: float | None
    size_mb: float
    latencies_ms: list[float] = field(default_factory=list)
    round_p50_ms: list[float] = field(default_factory=list)

    @classmethod
    def started(
        cls,
        name: str,
        path: Path,
        session: Any,
        created: float,
        threads: int,
        batch_size: int,
        config: SessionConfig,
        feed: dict,
        peak_memory: bool,
    ) -> Timing:
        """A model's row before its timings: what it ran on, how long its session took, its size and memory
        (`feed`: the one a separate process runs to measure the peak, when `peak_memory`)."""
        return cls(
            model=name,
            intra_op_threads=threads,
            batch_size=batch_size,
            providers_used=session.get_providers(),
            session_create_s=round(created, 3),
            peak_rss_mb=peak_memory_mb(path, config, threads, feed) if peak_memory else None,
            size_mb=round(onnx_model.total_size(path) / 1e6, 2),
        )

    def row(self) -> BenchmarkRow:
        """The model's row from its timings: the latency statistics rounded to the microsecond."""
        import numpy as np

        from ortflow.api import BenchmarkRow, Latency

        latencies = np.asarray(self.latencies_ms)
        stats = {
            "mean": latencies.mean(),
            "min": latencies.min(),
            "max": latencies.max(),
            **{f"p{q}": np.percentile(latencies, q) for q in PERCENTILES},
        }
        return BenchmarkRow(
            model=self.model,
            intra_op_threads=self.intra_op_threads,
            batch_size=self.batch_size,
            providers_used=self.providers_used,
            session_create_s=self.session_create_s,
            peak_rss_mb=self.peak_rss_mb,
            size_mb=self.size_mb,
            latencies_ms=self.latencies_ms,
            round_p50_ms=tuple(self.round_p50_ms),
            latency_ms=Latency(**{k: round(float(v), 3) for k, v in stats.items()}),
            throughput_per_s=round(self.batch_size * 1000 / float(latencies.mean()), 2),
            runs=len(latencies),
        )
