"""benchmark's `cuda_graph` axis: ONNX Runtime's CUDA graphs (`enable_cuda_graph` in the CUDA provider's
options) capture the model's kernel launches on the first run and replay them on the same device buffers, so
the inputs and outputs are bound once, on the GPU, and each feed is copied into the bound inputs (the timed
call includes that copy, as a deployment's would). A graph can be captured only when every node runs on the
CUDA provider and every feed has the same shapes; where it cannot, the reason names what stands in the way
(the nodes ORT placed elsewhere, read from its profiler), also on a machine without a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ortflow.api import ProviderUnavailable
from ortflow.api.providers import names as provider_names

if TYPE_CHECKING:
    from ortflow.api import Json, SessionSettings
    from ortflow.stages.measurement.benchmark_settings import SessionConfig

CUDA = "CUDAExecutionProvider"


def with_cuda_graph(providers: list[Any]) -> list[Any]:
    """The providers with `enable_cuda_graph` set in the CUDA provider's options."""
    return [
        {"name": CUDA, "options": {**(p.get("options") or {}), "enable_cuda_graph": "1"}}
        if provider_names([p])[0] == CUDA and isinstance(p, dict)
        else {"name": CUDA, "options": {"enable_cuda_graph": "1"}}
        if p == CUDA
        else p
        for p in providers
    ]


def blocker(providers: list[Any], feeds: list[dict]) -> str | None:
    """Why no CUDA graph can be captured, before any session is made; None where nothing is known to stop it."""
    first = provider_names(providers)[0]
    if first != CUDA:
        return (
            f"a CUDA graph needs {CUDA} first in `providers` (these put {first} first): it replays "
            "CUDA kernel launches, so on this provider there is nothing to capture"
        )
    shapes = {tuple((k, v.shape) for k, v in sorted(f.items())) for f in feeds}
    if len(shapes) > 1:
        return (
            f"a CUDA graph replays fixed shapes, and the feeds have {len(shapes)} different ones — set "
            "`sequence_length` (and one batch_size per configuration) so every feed has the same"
        )
    return None


def require_capturable(providers: list[Any], feeds: list[dict]) -> None:
    """ProviderUnavailable where `blocker` knows why no graph can be captured."""
    reason = blocker(providers, feeds)
    if reason:
        raise ProviderUnavailable(f"no CUDA graph: {reason}")


def graph_caller(session: Any, feeds: list[dict], device_id: int) -> Callable[[int], Any]:
    """A function running feed i through buffers on the GPU bound once: the feed is copied into the bound
    inputs, then the captured graph replays. The first call (here) captures it."""
    import numpy as np
    import onnxruntime as ort

    inputs = {
        name: ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array), "cuda", device_id)
        for name, array in feeds[0].items()
    }
    shapes = session.run(None, feeds[0])  # the outputs' shapes and dtypes, to allocate them once
    binding = session.io_binding()
    for name, value in inputs.items():
        binding.bind_ortvalue_input(name, value)
    for spec, produced in zip(session.get_outputs(), shapes):
        binding.bind_ortvalue_output(
            spec.name,
            ort.OrtValue.ortvalue_from_shape_and_type(
                produced.shape, produced.dtype, "cuda", device_id
            ),
        )

    def call(i: int) -> None:
        for name, array in feeds[i % len(feeds)].items():
            inputs[name].update_inplace(np.ascontiguousarray(array))
        session.run_with_iobinding(binding)

    call(0)  # captures the graph: a failure to capture shows here, untimed
    return call


def capture_failure(off_cuda: list[str], total: int, said: str) -> ProviderUnavailable:
    """The skip when ORT refused to capture: the nodes it placed off the CUDA provider, and the fix."""
    named = ", ".join(off_cuda[:8]) + (
        f" and {len(off_cuda) - 8} more" if len(off_cuda) > 8 else ""
    )
    where = (
        f"{len(off_cuda)} of {total} nodes are not on {CUDA} ({named})"
        if off_cuda
        else f"ONNX Runtime said: {said}"
    )
    return ProviderUnavailable(
        f"no CUDA graph could be captured: {where} — a graph needs every node on CUDA; fix the shapes and fold "
        "the shape arithmetic (a `specialize` stage) so those nodes go away"
    )


def device_id(providers: list[Any]) -> int:
    first = providers[0]
    return int((first.get("options") or {}).get("device_id", 0)) if isinstance(first, dict) else 0


def off_cuda_nodes(profile: Path) -> tuple[list[str], int]:
    """The nodes a profiled run placed off the CUDA provider (names with op types), and the node count."""
    from ortflow.stages.measurement.placement import node_placement

    placed = node_placement(profile)
    return sorted(n for n, p in placed.items() if p != CUDA), len(placed)


def session_settings(params: SessionConfig, threads: int) -> SessionSettings:
    """What reproduces a configuration's timings: the session's providers (with `enable_cuda_graph` where a CUDA
    graph was replayed), level, threads and feeding."""
    from ortflow.api import SessionSettings

    providers: list[Json] = list(params.providers)
    return SessionSettings(
        with_cuda_graph(providers) if params.cuda_graph else providers,
        params.optimization_level,
        threads,
        params.inter_op_threads,
        params.execution_mode,
        params.io_binding,
        params.cuda_graph,
    )
