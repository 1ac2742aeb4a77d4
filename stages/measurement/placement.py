"""Which execution provider ran each node, read from ONNX Runtime's profiler: the place where a silent
fallback (a node the GPU provider could not take, run on the CPU with copies around it) becomes visible."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ortflow.api import Placement


def node_placement(profile: Path) -> dict[str, str]:
    """Node name -> the provider that ran it, from a profile file (`session.end_profiling()`)."""
    events = json.loads(Path(profile).read_text(encoding="utf-8"))
    placed: dict[str, str] = {}
    unnamed = 0
    for event in events:
        if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
            args = event.get("args") or {}
            if not args.get("provider"):
                continue
            name = event["name"].removesuffix("_kernel_time")
            if (
                not name
            ):  # unnamed nodes must not collapse into one entry; the profile repeats per run
                unnamed += 1
                name = f"<unnamed {args.get('op_name', '?')} #{unnamed}>"
            placed[name] = args["provider"]
    return placed


def summary(placed: dict[str, str], requested: str) -> Placement:
    """Node counts per provider, and the nodes not on `requested` (the first provider asked for). A
    TensorRT engine shows up as one node per fused subgraph (`TensorrtExecutionProvider_TRTKernel_...`)."""
    elsewhere = sorted(node for node, provider in placed.items() if provider != requested)
    return {
        "requested": requested,
        "nodes_by_provider": dict(sorted(Counter(placed.values()).items())),
        "fallback_nodes": len(elsewhere),
        "fallback_examples": elsewhere[:20],
    }
