"""benchmark's profile pass: time share by op type, the slowest nodes, and where each node ran, from ONNX
Runtime's profiler, in a separate untimed session configured as the timed one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ortflow.stages.measurement.benchmark_settings import SessionConfig
from ortflow.stages.measurement.sessions import configured_session

if TYPE_CHECKING:
    from ortflow.api import Json, Profile


def profile(
    path: Path, feeds: list[dict], params: SessionConfig, threads: int, workdir: Path
) -> Profile:
    """Time share by op type, the slowest nodes, and where each node ran, from ORT's profiler (a separate,
    untimed pass)."""
    from ortflow.stages.measurement.placement import node_placement, summary

    session = configured_session(
        path, params, threads, profile_prefix=str(workdir / f"profile-{path.stem}")
    )
    for feed in list(feeds)[:20]:
        session.run(None, feed)
    trace = Path(session.end_profiling())
    events = json.loads(trace.read_text())
    by_type: dict[str, float] = {}
    by_node: dict[str, float] = {}
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            op_type = event.get("args", {}).get("op_name", "?")
            by_type[op_type] = by_type.get(op_type, 0) + event["dur"]
            node = event["name"].removesuffix("_kernel_time")
            by_node[f"{node} ({op_type})"] = by_node.get(f"{node} ({op_type})", 0) + event["dur"]
    total = sum(by_type.values()) or 1

    def top(d: dict[str, float]) -> list[list[Json]]:
        return [
            [k, round(100 * v / total, 1)] for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:10]
        ]

    placement = summary(node_placement(trace), session.get_providers()[0])
    return {"op_types_percent": top(by_type), "nodes_percent": top(by_node), "placement": placement}
