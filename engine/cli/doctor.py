"""`engine doctor`: this machine in one screen, as a bug report should hold it.

Everything here is read, nothing is changed: the software (Python, ortflow, the onnxruntime build), which
execution providers a session really gets and why the others do not (engine.ort.providers), the CPU and the
INT8 kernel family ORT's MLAS runs on it (the same `int8_kernel_family` that keys a `native` target), the
GPU, driver and CUDA/cuDNN/TensorRT libraries where present, the CUDA provider's build (in-tree or plugin EP,
CUDA and cuDNN majors: what keys stages on CUDA, read without a GPU), the cache, and the remote and signing setup with
every secret left out. `--json` gives the same facts to a script.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ortflow.engine.leaves import environment
from ortflow.engine.leaves.errors import OrtflowError

if TYPE_CHECKING:
    from ortflow.engine.cli.output import Output

# The CPU flags MLAS's INT8 dispatch reads (engine/leaves/environment.py: int8_kernel_family); doctor lists those present.
INT8_FLAGS = (
    "fma", "avx2", "avx_vnni", "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512_vnni",
    "amx_tile", "amx_int8", "avx_vnni_int8", "asimddp", "i8mm",
)  # fmt: skip
# What the family's uint8-activation x int8-weight GEMM (ORT's default INT8) runs on.
KERNELS = {
    "sse": "SSE2, widened to int16: exact",
    "sse41": "SSE4.1 pmaddubsw: int16 pair sums saturate",
    "avx2": "AVX2 vpmaddubsw: int16 pair sums saturate (reduce_range: auto uses 7-bit weights)",
    "avx2-vnni": "AVX-VNNI vpdpbusd: exact int32 dot products",
    "avx512-core": "AVX-512BW vpmaddubsw: int16 pair sums saturate (reduce_range: auto uses 7-bit weights)",
    "avx512-vnni": "AVX-512 VNNI vpdpbusd: exact int32 dot products",
    "amx": "AMX tiles (AVX-512 VNNI for small products): exact int32 dot products",
    "neon": "NEON, widened to 16 bits",
    "neon-dot": "NEON udot/sdot dot products",
    "i8mm": "NEON ummla/smmla matrix multiply",
    "portable": "MLAS's portable C++ kernels",
}
GPU_QUERY = "name,driver_version,memory.total,compute_cap"
SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL", re.IGNORECASE)


@dataclass(frozen=True)
class Provider:
    name: str
    usable: bool
    why: str  # empty when usable: what is missing and how to install it


@dataclass(frozen=True)
class Gpu:
    name: str
    driver: str
    memory: str
    compute_capability: str


@dataclass(frozen=True)
class Cpu:
    model: str
    cores: int
    int8_flags: tuple[str, ...]  # the INT8_FLAGS it has
    int8_kernel_family: str  # the isa fact: `x86_64: avx512-vnni`
    int8_kernels: str  # what the family's u8 x s8 GEMM (ORT's default INT8) runs on
    other_int8_kernels: str  # uint8 weights, int8 activations
    forced_by: str  # "$ORTFLOW_ISA=..." when a what-if stands in for this CPU, else ""


@dataclass(frozen=True)
class Gpus:
    devices: tuple[Gpu, ...]
    cuda_driver: str  # the newest CUDA the driver supports, from nvidia-smi's header
    cuda_runtime: str
    cudnn: str
    tensorrt: str


@dataclass(frozen=True)
class Doctor:
    python: str
    ortflow: str
    platform: str
    onnxruntime: str  # distribution, version and build
    cuda_provider: (
        str  # the cuda_provider fact: in-tree or plugin EP, package, CUDA and cuDNN majors
    )
    providers: tuple[Provider, ...]
    cpu: Cpu
    gpu: Gpus
    cache: str
    cache_size: str
    remote: str
    signing: tuple[str, ...]  # one line per key setting, never a key
    settings: tuple[str, ...]  # the ORTFLOW_* variables set, secrets hidden


def _redact(text: str) -> str:
    from ortflow.engine.leaves.secrets import redact  # the one redactor every output passes through

    return redact(text)


def examine(cache: Path | None, here: Path) -> Doctor:
    """All of it, read from this machine (`here`: where ortflow.yaml and the default cache are looked for)."""
    import onnxruntime

    import ortflow

    return Doctor(
        python=f"{platform.python_version()} ({sys.executable})",
        ortflow=ortflow.__version__,
        platform=platform.platform(),
        onnxruntime=f"{environment.fact('onnxruntime')} ({onnxruntime.get_device()} build)",
        cuda_provider=_cuda_provider(),
        providers=_providers(),
        cpu=_cpu(),
        gpu=_gpus(),
        **_cache(cache, here),
        remote=_remote(here),
        signing=_signing(),
        settings=_settings(),
    )


def _cuda_provider() -> str:
    """The build the cache keys of stages on CUDA name, read from the wheel's files (no GPU needed), with its
    library, or the what-if standing in for it."""
    from ortflow.engine.leaves import cuda_provider

    found = cuda_provider.describe()
    forced = os.environ.get(cuda_provider.VARIABLE, "").strip()
    where = f" (what-if: ${cuda_provider.VARIABLE})" if forced else ""
    return found.fact() + (where or (f" ({found.library})" if found.library else ""))


def _providers() -> tuple[Provider, ...]:
    """Each provider this onnxruntime build lists, as a session really gets it (ORT prints its own fallback
    notice on stdout, which would break --json: it is kept out)."""
    import onnxruntime

    from ortflow.engine.ort import providers

    found = []
    for name in onnxruntime.get_available_providers():
        with contextlib.redirect_stdout(io.StringIO()):
            check = providers.resolve([name])
        found.append(Provider(name, name not in check.missing, check.missing.get(name, "")))
    return tuple(found)


def _cpu() -> Cpu:
    forced = os.environ.get(environment.ISA_VARIABLE, "").strip()
    flags = environment.host_flags()
    isa = environment.fact("isa")
    family = isa.partition(": ")[2]
    base, _, extra = family.partition("+")
    others = (
        "uint8 weights and int8 activations: AVX-VNNI-INT8"
        if extra
        else "uint8 weights: a widening u8 x u8 kernel; int8 activations: MLAS's portable C++ loop (slow)"
        if isa.startswith("x86_64")
        else "int8 activations and uint8 weights: the same family's kernels"
    )
    return Cpu(
        model=environment.fact("cpu").rsplit(" x", 1)[0],
        cores=os.cpu_count() or 0,
        int8_flags=tuple(f for f in INT8_FLAGS if f in flags),
        int8_kernel_family=isa,
        int8_kernels=KERNELS.get(base, base),
        other_int8_kernels=others,
        forced_by=f"${environment.ISA_VARIABLE}={forced}" if forced else "",
    )


def _nvidia_smi(*args: str) -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", *args], capture_output=True, text=True, timeout=20, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _gpus() -> Gpus:
    """GPUs as nvidia-smi reports them, and the CUDA libraries this process can load (none: no driver)."""
    if not shutil.which("nvidia-smi"):
        return Gpus((), "none (no nvidia-smi: no NVIDIA driver)", "none", "none", "none")
    rows = _nvidia_smi(f"--query-gpu={GPU_QUERY}", "--format=csv,noheader").splitlines()
    devices = tuple(
        Gpu(*(cell.strip() for cell in row.split(",")))
        for row in rows
        if row.count(",") == GPU_QUERY.count(",")
    )
    header = re.search(r"CUDA Version:\s*([\d.]+)", _nvidia_smi())
    if not devices:
        return Gpus((), "none (nvidia-smi lists no GPU: check the driver)", "none", "none", "none")
    return Gpus(
        devices,
        header.group(1) if header else "unknown",
        environment.fact("cuda"),
        _cudnn(),
        environment.fact("tensorrt"),
    )


def _cudnn() -> str:
    """cuDNN's version (cudnnGetVersion) where the library loads, else the pip wheel's, else "not found"."""
    for name in ("libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"):
        try:
            number = ctypes.CDLL(name).cudnnGetVersion()
        except (OSError, AttributeError):
            continue
        major, minor = (
            (number // 10000, number % 10000 // 100)
            if number >= 10000
            else divmod(number // 100, 10)
        )
        return f"cudnn {major}.{minor}"
    from importlib.metadata import PackageNotFoundError, version

    for wheel in ("nvidia-cudnn-cu12", "nvidia-cudnn-cu13"):
        with contextlib.suppress(PackageNotFoundError):
            return f"{wheel} {version(wheel)}"
    return "not found"


def _cache(cache: Path | None, here: Path) -> dict[str, str]:
    if cache is not None:
        root, origin = cache, "--cache"
    elif os.environ.get("ORTFLOW_CACHE"):
        root, origin = Path(os.environ["ORTFLOW_CACHE"]), "$ORTFLOW_CACHE"
    else:
        root, origin = here / ".ortflow", ".ortflow/ beside each recipe; this folder's shown"
    if not root.is_dir():
        return {"cache": f"{root} ({origin})", "cache_size": "not created yet"}
    size = files = 0
    for folder, _, names in os.walk(root):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
                files += 1
    return {"cache": f"{root} ({origin})", "cache_size": f"{size / 1e6:.1f} MB in {files} files"}


def _remote(here: Path) -> str:
    from ortflow.engine.store.remote_config import remote_setting, shown

    try:
        setting = remote_setting(None, here)
    except OrtflowError as exc:  # a broken ortflow.yaml is itself a finding
        return _redact(f"cannot be read: {exc}")
    text = shown(setting)
    if setting is not None and setting.options:
        text += f"; options: {', '.join(sorted(map(str, setting.options)))}"
    return text


def _signing() -> tuple[str, ...]:
    """Which keys this machine has, by fingerprint (the first 12 hex digits of the key's SHA-256), never the
    key: enough to tell whether two machines share the team key."""
    from ortflow.engine.store import signing

    try:
        team = signing.shared_key()
        said = f"set, fingerprint {hashlib.sha256(team).hexdigest()[:12]}" if team else "not set"
    except OrtflowError as exc:  # a key the other commands refuse: doctor says why instead
        said = f"unusable: {exc}"
    local = signing.config_dir() / "local.key"
    return (
        f"team key (${signing.SIGNING_KEY_ENV}): " + said,
        f"local key: {local if local.is_file() else 'not created yet'}",
    )


def _settings() -> tuple[str, ...]:
    return tuple(
        f"{name}=" + ("(set, hidden)" if SECRET_NAME.search(name) else _redact(value))
        for name, value in sorted(os.environ.items())
        if name.startswith("ORTFLOW_") and name != "ORTFLOW_TEST_LOG"
    )


def lines(doctor: Doctor) -> list[str]:
    """The one screen: a heading per part, `name: value` under it."""
    cpu, gpu = doctor.cpu, doctor.gpu
    out = [
        f"python       {doctor.python}",
        f"ortflow      {doctor.ortflow}",
        f"platform     {doctor.platform}",
        f"onnxruntime  {doctor.onnxruntime}",
        f"  CUDA provider: {doctor.cuda_provider}",
        "providers",
        *(
            f"  {p.name}: " + ("usable" if p.usable else f"not usable: {p.why}")
            for p in doctor.providers
        ),
        f"cpu          {cpu.model}, {cpu.cores} cores",
        f"  INT8 flags: {', '.join(cpu.int8_flags) or 'none'}",
        f"  INT8 kernel family: {cpu.int8_kernel_family}"
        + (f" (what-if: {cpu.forced_by})" if cpu.forced_by else ""),
        f"  uint8 x int8 kernels: {cpu.int8_kernels}",
        f"  other INT8 types: {cpu.other_int8_kernels}",
        "gpu" + ("" if gpu.devices else f"          {gpu.cuda_driver}"),
        *(
            f"  {g.name}, {g.memory}, compute {g.compute_capability}, driver {g.driver}"
            for g in gpu.devices
        ),
    ]
    if gpu.devices:
        out.append(
            f"  CUDA: driver supports {gpu.cuda_driver}; runtime: {gpu.cuda_runtime}; cuDNN: {gpu.cudnn}; TensorRT: {gpu.tensorrt}"
        )
    out += [
        f"cache        {doctor.cache}: {doctor.cache_size}",
        f"remote       {doctor.remote}",
        "signing",
        *(f"  {line}" for line in doctor.signing),
        "settings     " + (", ".join(doctor.settings) or "no ORTFLOW_* variables set"),
    ]
    return out


def register(sub: Any) -> None:
    """The `doctor` subcommand on the CLI's parser (engine/cli/app.py)."""
    parser = sub.add_parser("doctor", help="this machine as a bug report should describe it")
    parser.add_argument("--cache", type=Path, metavar="DIR", help="the artifact store to measure")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.set_defaults(handler=command)


def command(args: Any, out: Output) -> int:
    """`engine doctor [--json] [--cache DIR]`."""
    found = examine(args.cache, Path.cwd())
    if args.json:
        out.json(asdict(found))
    else:
        for line in lines(found):
            out.say(line)
    return 0
