"""Environment facts a stage's outputs can depend on; a stage names the ones it needs for its cache key."""

from __future__ import annotations

import os
import platform
import sys
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from typing import Callable


def _dist_version(*names: str) -> str:
    for name in names:
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            continue
    return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# The instruction-set features that change what integer kernels compute or how fast (x86 flag names as
# /proc/cpuinfo gives them; asimddp is arm64's dot product). u8 x s8 products saturate in non-VNNI x86
# kernels, so an INT8 model's accuracy differs between hosts with the same CPU model name.
ISA_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimddp", "i8mm")
# `target: {cpu: NAME}` in a recipe: the instruction set a named target stands for, as the isa fact says it.
TARGETS = {
    "avx2": "x86_64: avx2",
    "avx512": "x86_64: avx2,avx512f",
    "avx512_vnni": "x86_64: avx2,avx512f,avx512_vnni",
    "avx_vnni": "x86_64: avx2,avx_vnni",
    "amx": "x86_64: avx2,avx512f,avx512_vnni,amx_int8",
    "arm64": "aarch64: baseline",
    "arm64_dotprod": "aarch64: asimddp",
    "arm64_i8mm": "aarch64: asimddp,i8mm",
}
ISA_VARIABLE = (
    "ORTFLOW_ISA"  # a named target or a feature list: what to report instead of this machine's
)


def _cpu_flags() -> set[str]:
    """The CPU's feature flags: /proc/cpuinfo on Linux (instant), py-cpuinfo elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith(("flags", "Features")):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    import cpuinfo  # py-cpuinfo: slower (it may start a process), so only where /proc is missing

    return set(cpuinfo.get_cpu_info().get("flags", []))


def _arch() -> str:
    machine = platform.machine().lower()
    return (
        "aarch64"
        if machine in ("arm64", "aarch64")
        else "x86_64"
        if machine in ("amd64", "x86_64")
        else machine
    )


def _isa() -> str:
    """`x86_64: avx2,avx512f,avx512_vnni`: the architecture and the features of ISA_FEATURES it has.
    $ORTFLOW_ISA (a target name from TARGETS, or a comma list of features) stands in for this machine's."""
    forced = os.environ.get(ISA_VARIABLE, "").strip()
    if forced:
        return (
            TARGETS.get(forced)
            or f"{_arch()}: {','.join(f for f in ISA_FEATURES if f in forced.split(','))}"
        )
    flags = _cpu_flags()
    return f"{_arch()}: {','.join(f for f in ISA_FEATURES if f in flags) or 'baseline'}"


def target_isa(target_cpu: str) -> str:
    """The isa fact of a recipe's `target: {cpu: ...}`: this machine's for native, else the named one's."""
    return fact("isa") if target_cpu == "native" else TARGETS[target_cpu]


def _gpus() -> str:
    """GPU names and driver as nvidia-smi reports them, or "none" (no driver, no GPU)."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return "none"
    try:
        found = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "none"
    return "; ".join(line.strip() for line in found.splitlines()) or "none"


def _tensorrt() -> str:
    """The TensorRT build ORT's TensorRT provider would load: the Python wheel's version, or the library's."""
    import ctypes.util

    found = _dist_version("tensorrt", "tensorrt-cu12", "tensorrt-libs", "tensorrt-cu12-libs")
    if found != "not installed":
        return found
    return ctypes.util.find_library("nvinfer") or "not installed"


def _cuda() -> str:
    """The CUDA runtime version (cudaRuntimeGetVersion), or what the driver reports, or "none"."""
    import ctypes

    for name in ("libcudart.so.12", "libcudart.so.11.0", "libcudart.so"):
        try:
            runtime = ctypes.CDLL(name)
        except OSError:
            continue
        number = ctypes.c_int()
        if runtime.cudaRuntimeGetVersion(ctypes.byref(number)) == 0:
            return f"cuda runtime {number.value // 1000}.{number.value % 1000 // 10}"
    return _dist_version("nvidia-cuda-runtime-cu12") if _gpus() != "none" else "none"


def _providers() -> str:
    import onnxruntime

    return ",".join(onnxruntime.get_available_providers())


FACTS: dict[str, Callable[[], str]] = {
    "onnxruntime": lambda: _dist_version("onnxruntime-gpu", "onnxruntime"),
    "onnx": lambda: _dist_version("onnx"),
    "numpy": lambda: _dist_version("numpy"),
    "tokenizers": lambda: _dist_version("tokenizers"),
    "pillow": lambda: _dist_version("pillow"),
    # The export stage: what traces the PyTorch model, loads Hugging Face folders, and writes dynamo's ONNX.
    "torch": lambda: _dist_version("torch"),
    "transformers": lambda: _dist_version("transformers"),
    "onnxscript": lambda: _dist_version("onnxscript"),
    "python": lambda: platform.python_version(),
    "platform": lambda: f"{sys.platform}-{platform.machine()}",
    # Hardware a machine-specific artifact (an ORT 'all'-level model, a benchmark) was made for.
    "cpu": lambda: f"{_cpu_model()} x{os.cpu_count()}",
    "isa": _isa,
    # Stands for the recipe's target (job_key fills it in); the machine's own isa when it names none.
    "target_isa": _isa,
    "providers": _providers,
    "gpu": _gpus,
    "tensorrt": _tensorrt,
    "cuda": _cuda,
}


# Facts about this machine rather than its software: a result keyed on one is this machine's (a benchmark,
# an accuracy measured with its kernels), so the lock file records it without them (record/lockfile.py).
# target_isa is not one: a recipe that names its target builds the same model everywhere.
HOST_FACTS = frozenset({"cpu", "isa", "providers", "gpu", "tensorrt", "cuda", "platform"})


PLUGIN_FACT = "plugin:"  # `plugin:<entry-point group>:<name>`: the package (and its version) that provides a plugin


def _plugin_origin(name: str) -> str:
    """What provides a plugin a stage uses by name (e.g. a metric): its distribution and version, so a cached
    result is not served after the plugin changed."""
    from importlib.metadata import entry_points

    _, group, plugin = name.split(":", 2)
    found = [ep for ep in entry_points(group=group) if ep.name == plugin]
    if not found:
        return "not installed"
    dist = found[0].dist
    return f"{dist.name} {dist.version}" if dist is not None else found[0].value


@lru_cache(maxsize=None)
def fact(name: str) -> str:
    if name.startswith(PLUGIN_FACT):
        return _plugin_origin(name)
    if name not in FACTS:
        raise KeyError(f"unknown environment fact '{name}'; known: {', '.join(sorted(FACTS))}")
    return FACTS[name]()


def facts(names: tuple[str, ...]) -> dict[str, str]:
    return {name: fact(name) for name in sorted(set(names))}
