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


# What a `native` target and the `isa` fact hold: the INT8 kernel family ORT's MLAS dispatches its quantized
# GEMMs to (onnxruntime/core/mlas/lib/platform.cpp, MLAS_PLATFORM's constructor), not the CPU's flag list, so
# two hosts that differ only in flags those kernels never use share their keys. x86-64, uint8 activations x
# int8 weights (what ORT's dynamic and QDQ quantization write), each later check overriding the earlier:
# avx2 (avx2+fma; vpmaddubsw, whose int16 pair sums saturate), avx2-vnni (avx_vnni), avx512-core
# (avx512f+bw+dq+vl: still vpmaddubsw, so it saturates too), avx512-vnni (core + avx512_vnni: an avx_vnni
# beside it changes nothing), amx (amx_tile+amx_int8 and, on Linux, the kernel granting AMX state: from 5.16).
# uint8 weights and int8 activations take other kernels (u8 x u8 widens to int16; s8 x s8 is MLAS's portable
# C++ loop) unless the CPU has avx_vnni_int8, which moves both to VNNI-INT8: that adds "+vnni-int8".
# arm64: neon (u8 x s8 widened), neon-dot (asimddp: udot/sdot), i8mm (ummla/smmla; MLAS uses it on Linux only).
# Below AVX2: sse (SSE2, widened to int16: exact), or sse41 on Windows builds (pmaddubsw: saturates).
X86_FAMILIES = ("sse", "sse41", "avx2", "avx2-vnni", "avx512-core", "avx512-vnni", "amx")
ARM_FAMILIES = ("neon", "neon-dot", "i8mm")
# The x86 u8 x s8 kernels whose int16 pair sums saturate (pmaddubsw without VNNI's exact dot product).
SATURATING = frozenset({"sse41", "avx2", "avx512-core"})
_AVX512_CORE = {"avx512f", "avx512bw", "avx512dq", "avx512vl"}


def int8_kernel_family(flags: frozenset[str] | set[str], arch: str, system: str = "linux") -> str:
    """The INT8 kernel family MLAS picks on a CPU with these feature flags (/proc/cpuinfo names), e.g.
    `avx512-vnni`: the one thing cache keys and `engine doctor` say about the instruction set, so that only
    a change of kernel changes a key. Pure: tests inject the flag lists of the hosts they stand for."""
    if arch == "aarch64":
        if "i8mm" in flags and system.startswith("linux"):
            return "i8mm"
        return "neon-dot" if "asimddp" in flags else "neon"
    if arch != "x86_64":
        return "portable"  # MLAS's C++ kernels
    family = "sse41" if system.startswith("win") and "sse4_1" in flags else "sse"
    if {"avx2", "fma"} <= flags:
        family = "avx2-vnni" if "avx_vnni" in flags else "avx2"
        if _AVX512_CORE <= flags:
            family = "avx512-vnni" if "avx512_vnni" in flags else "avx512-core"
        if {"amx_tile", "amx_int8"} <= flags:
            family = "amx"
        if "avx_vnni_int8" in flags:
            family += "+vnni-int8"
    return family


def int8_saturates(isa: str) -> bool:
    """Whether an isa fact (`x86_64: avx2`) names u8 x s8 kernels whose int16 pair sums saturate (x86 without
    VNNI): where ORT advises 7-bit weights (stages/quantization/isa.py)."""
    arch, _, family = isa.partition(": ")
    return arch.strip() == "x86_64" and family.split("+")[0] in SATURATING


# `target: {cpu: NAME}` in a recipe: the kernel family a named target stands for, as the isa fact says it.
TARGETS = {
    "avx2": "x86_64: avx2",
    "avx512": "x86_64: avx512-core",
    "avx512_vnni": "x86_64: avx512-vnni",
    "avx_vnni": "x86_64: avx2-vnni",
    "amx": "x86_64: amx",
    "arm64": "aarch64: neon",
    "arm64_dotprod": "aarch64: neon-dot",
    "arm64_i8mm": "aarch64: i8mm",
}
# Test-only and what-if: a target name from TARGETS, a family, or a comma list of CPU flags to report in place
# of this machine's (docs/quantization.md).
ISA_VARIABLE = "ORTFLOW_ISA"


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


def host_flags() -> set[str]:
    """This machine's flags as MLAS can use them: Linux grants AMX tile state from kernel 5.16 on (before,
    MlasInitAMX's arch_prctl fails and MLAS keeps its AVX-512 kernels, whatever cpuinfo lists)."""
    flags = _cpu_flags()
    if sys.platform.startswith("linux") and _kernel_version() < (5, 16):
        flags.discard("amx_tile")
    return flags


def _kernel_version() -> tuple[int, int]:
    parts = platform.release().split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


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
    """`x86_64: avx512-vnni`: the architecture and the INT8 kernel family MLAS uses on it.
    $ORTFLOW_ISA (a target name, a family, or a comma list of CPU flags) stands in for this machine's."""
    forced = os.environ.get(ISA_VARIABLE, "").strip()
    if forced in TARGETS:
        return TARGETS[forced]
    if forced in X86_FAMILIES + ARM_FAMILIES:
        return f"{'aarch64' if forced in ARM_FAMILIES else 'x86_64'}: {forced}"
    flags = {f.strip() for f in forced.split(",")} if forced else host_flags()
    return f"{_arch()}: {int8_kernel_family(flags, _arch(), sys.platform)}"


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


def _cuda_provider() -> str:
    from ortflow.engine.leaves.cuda_provider import describe

    return describe().fact()


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
    # The CUDA provider build ORT would load (in-tree or plugin EP, its package, CUDA and cuDNN majors), read
    # from its files without a GPU: stages that run on it (engine/leaves/cuda_provider.py) name it.
    "cuda_provider": _cuda_provider,
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


# `data:<package>/<file>`: the sha256 of a data file a stage reads and ships with its package (a measured rule such
# as stages/quantization/int8_op_table.json), so that a change of the data, and not a timing, changes the key.
DATA_FACT = "data:"


def _data_digest(name: str) -> str:
    import hashlib
    from importlib.resources import files

    package, _, file = name.removeprefix(DATA_FACT).partition("/")
    try:
        found = files(package).joinpath(file).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        return "missing"
    return "sha256:" + hashlib.sha256(found).hexdigest()


@lru_cache(maxsize=None)
def fact(name: str) -> str:
    if name.startswith(PLUGIN_FACT):
        return _plugin_origin(name)
    if name.startswith(DATA_FACT):
        return _data_digest(name)
    if name not in FACTS:
        raise KeyError(f"unknown environment fact '{name}'; known: {', '.join(sorted(FACTS))}")
    return FACTS[name]()


def facts(names: tuple[str, ...]) -> dict[str, str]:
    return {name: fact(name) for name in sorted(set(names))}
