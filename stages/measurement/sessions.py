"""The ONNX Runtime sessions benchmark times: configured from its parameters, and called on feed i either
plainly, through IO binding with every feed already on the provider's device, or through one binding on the
GPU replayed as a CUDA graph (stages.measurement.cuda_graph)."""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ortflow.api import StageError
from ortflow.api import onnx as onnx_model
from ortflow.api.providers import for_session, resolve
from ortflow.api.providers import names as provider_names
from ortflow.stages.measurement import cuda_graph
from ortflow.stages.measurement.benchmark_params import LEVELS
from ortflow.stages.measurement.benchmark_settings import SessionConfig


def configured_session(
    path: Path, params: SessionConfig, threads: int, profile_prefix: str | None = None
) -> Any:
    """An ORT session as the parameters configure it (profiling when `profile_prefix` is given); refused where
    ONNX Runtime could not use every requested provider."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    options.graph_optimization_level = getattr(
        ort.GraphOptimizationLevel, LEVELS[params.optimization_level]
    )
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = params.inter_op_threads
    options.execution_mode = (
        ort.ExecutionMode.ORT_PARALLEL
        if params.execution_mode == "parallel"
        else ort.ExecutionMode.ORT_SEQUENTIAL
    )
    options.log_severity_level = 3
    providers = list(params.providers)
    resolve(providers).require("this benchmark")
    created = onnx_model.load_for_ort(path, options, for_session(providers))
    used = created.get_providers()
    missing = [n for n in provider_names(providers) if n not in used]
    if missing:  # the GPU wheel lists providers it cannot load; the session tells the truth
        raise StageError(
            f"ONNX Runtime could not use {', '.join(missing)} for {path.name} (it used {', '.join(used)})"
            " — install the provider's libraries or remove it from `providers`"
        )
    return created


def caller(session: Any, feeds: list[dict], params: SessionConfig) -> Any:
    """A function running feed i: plain session.run, or run_with_iobinding with every feed bound up front on
    the provider's device, so the timed call does no host-device copies."""
    if not params.io_binding:
        return lambda i: session.run(None, feeds[i % len(feeds)])
    import onnxruntime as ort

    on_gpu = session.get_providers()[0] in ("CUDAExecutionProvider", "TensorrtExecutionProvider")
    device = "cuda" if on_gpu else "cpu"
    device_id = cuda_graph.device_id(list(params.providers)) if on_gpu else 0
    bindings = []
    for feed in feeds:
        binding = session.io_binding()
        for name, array in feed.items():
            binding.bind_ortvalue_input(
                name, ort.OrtValue.ortvalue_from_numpy(array, device, device_id)
            )
        for output in session.get_outputs():
            binding.bind_output(output.name, device, device_id)
        bindings.append(binding)
    return lambda i: session.run_with_iobinding(bindings[i % len(bindings)])


def timed_session(
    path: Path, params: SessionConfig, threads: int, feeds: list[dict]
) -> tuple[Any, float, Callable[[int], Any]]:
    """The session, its creation time in seconds, and the function running feed i. With `cuda_graph`, the CUDA
    provider gets `enable_cuda_graph` and the graph is captured here (untimed); where ONNX Runtime refuses,
    ProviderUnavailable names the nodes it placed off the CUDA provider."""
    if not params.cuda_graph:
        started = time.perf_counter()
        session = configured_session(path, params, threads)
        return session, time.perf_counter() - started, caller(session, feeds, params)
    graphed = replace(params, providers=tuple(cuda_graph.with_cuda_graph(list(params.providers))))
    refusals: tuple[type[BaseException], ...] = (StageError, *onnx_model.ort_errors())
    try:
        started = time.perf_counter()
        session = configured_session(path, graphed, threads)
        created = time.perf_counter() - started
        return (
            session,
            created,
            cuda_graph.graph_caller(session, feeds, cuda_graph.device_id(list(params.providers))),
        )
    except refusals as exc:
        if isinstance(exc, cuda_graph.ProviderUnavailable):
            raise
        said = onnx_model.first_line(exc)
    raise cuda_graph.capture_failure(*_off_cuda(path, params, threads, feeds[0]), said)


def _off_cuda(path: Path, params: SessionConfig, threads: int, feed: dict) -> tuple[list[str], int]:
    """The nodes a profiled run without the graph places off the CUDA provider, and how many nodes ran."""
    with tempfile.TemporaryDirectory(prefix="ortflow-placement-") as folder:
        session = configured_session(
            path, params, threads, profile_prefix=str(Path(folder) / "placement")
        )
        session.run(None, feed)
        return cuda_graph.off_cuda_nodes(Path(session.end_profiling()))
