"""benchmark's section of the run report: the latency table (one row per model and configuration), the session
settings each configuration was timed with (what reproduces the number) and the configurations not timed,
each model's top operators and node placement when profiled, and every run's latency as a distribution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ortflow.api import Json

if TYPE_CHECKING:  # annotations only: the documents load when a stage runs
    from ortflow.api import BenchmarkRow, Profile, ReportSection, Table


def benchmark_report(
    results: list[BenchmarkRow],
    profiles: dict[str, Profile],
    baseline: str,
    skipped: list[str] | None = None,
) -> ReportSection:
    tables: list[Table] = [_latency_table(results, baseline), _session_table(results)]
    if skipped:
        tables.append(
            {
                "title": "Not timed",
                "columns": ["configuration: why"],
                "rows": [[s] for s in skipped],
            }
        )
    for model, profile in profiles.items():
        tables.append(
            {
                "title": f"Top operators: {model}",
                "columns": ["op type", "% of time"],
                "rows": profile["op_types_percent"],
            }
        )
    if profiles:
        tables.append(_placement_table(profiles))
    return {
        "tables": tables,
        "charts": [
            {
                "kind": "distribution",
                "title": "Latency per run (ms)",
                "series": _latency_series(results),
            }
        ],
    }


def _latency_table(results: list[BenchmarkRow], baseline: str) -> Table:
    columns = [
        "model",
        "threads",
        "batch",
        "length",
        "IO binding",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "mean ms",
        "throughput/s",
        f"vs {baseline}",
        "size MB",
        "peak MB",
        "providers",
    ]
    rows: list[list[Json]] = [
        [
            r.model,
            r.intra_op_threads or "default",
            r.batch_size,
            r.sequence_length or "data",
            "yes" if r.io_binding else "no",
            r.latency_ms.p50,
            r.latency_ms.p90,
            r.latency_ms.p99,
            r.latency_ms.mean,
            r.throughput_per_s,
            f"{r.speedup:.2f}x",
            r.size_mb,
            r.peak_rss_mb if r.peak_rss_mb is not None else "not measured",
            ",".join(p.removesuffix("ExecutionProvider") for p in r.providers_used),
        ]
        for r in results
    ]
    return {"title": "Latency", "columns": columns, "rows": rows}


def _configuration(r: BenchmarkRow) -> str:
    return (
        f"threads {r.intra_op_threads or 'default'}, batch {r.batch_size}, length {r.sequence_length or 'data'}"
        f"{', IO binding' if r.io_binding else ''}{', CUDA graph' if r.cuda_graph else ''}"
    )


def _session_table(results: list[BenchmarkRow]) -> Table:
    """Each configuration's session as it was made: providers with their options, level, threads, feeding."""
    rows: dict[str, str] = {}
    for r in results:
        rows.setdefault(_configuration(r), r.session.describe() if r.session else "not recorded")
    return {
        "title": "Session settings: what reproduces the timings",
        "columns": ["configuration", "session"],
        "rows": [[c, s] for c, s in rows.items()],
    }


def _placement_table(profiles: dict[str, Profile]) -> Table:
    """Where each profiled model's nodes ran: those not on the first provider fall back."""
    return {
        "title": "Node placement (nodes not on the first provider fall back, with copies around them)",
        "columns": ["model", "requested", "nodes by provider", "fallback nodes", "e.g."],
        "rows": [
            [
                m,
                p["placement"]["requested"],
                ", ".join(
                    f"{k.removesuffix('ExecutionProvider')} {v}"
                    for k, v in p["placement"]["nodes_by_provider"].items()
                ),
                p["placement"]["fallback_nodes"],
                ", ".join(p["placement"]["fallback_examples"][:3]),
            ]
            for m, p in profiles.items()
        ],
    }


def _latency_series(results: list[BenchmarkRow]) -> dict[str, Json]:
    """Every run's latency per model, named by its configuration too when the benchmark swept any."""
    swept = len({r.config() for r in results}) > 1
    return {
        (f"{r.model} ({_configuration(r)})" if swept else r.model): list(r.latencies_ms)
        for r in results
    }
