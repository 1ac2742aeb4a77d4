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


def _gpus() -> str:
    """GPU names and driver as nvidia-smi reports them, or "none" (no driver, no GPU)."""
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return "none"
    try:
        found = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20, check=True).stdout.strip()
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
    "python": lambda: platform.python_version(),
    "platform": lambda: f"{sys.platform}-{platform.machine()}",
    # Hardware a machine-specific artifact (an ORT 'all'-level model, a benchmark) was made for.
    "cpu": lambda: f"{_cpu_model()} x{os.cpu_count()}",
    "providers": _providers,
    "gpu": _gpus,
    "tensorrt": _tensorrt,
    "cuda": _cuda,
}


@lru_cache(maxsize=None)
def fact(name: str) -> str:
    if name not in FACTS:
        raise KeyError(f"unknown environment fact '{name}'; known: {', '.join(sorted(FACTS))}")
    return FACTS[name]()


def facts(names: tuple[str, ...]) -> dict[str, str]:
    return {name: fact(name) for name in sorted(set(names))}
