"""Which CUDA provider build ONNX Runtime would load: in-tree or plugin EP, the package and version that ship
it, and the CUDA and cuDNN majors its library links. Read without a GPU (the build info string, the wheel's
build_and_package_info, the ELF NEEDED entries of libonnxruntime_providers_cuda.so), so that a CPU machine
and a GPU machine with the same wheel key a stage alike, and a result built by one provider build (the
in-tree provider, or the plugin EP with its own CUDA graphs and per-session arenas) is never served for
another. $ORTFLOW_CUDA_PROVIDER stands in for this machine's build (tests, what-ifs), as $ORTFLOW_ISA does
for its CPU.
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from ortflow.engine.leaves.errors import OrtflowError

VARIABLE = "ORTFLOW_CUDA_PROVIDER"
# The CUDA and TensorRT providers: a stage using either runs on the CUDA provider's kernels and allocator.
ON_CUDA = frozenset({"CUDAExecutionProvider", "TensorrtExecutionProvider"})
LIBRARY = {
    "win32": "onnxruntime_providers_cuda.dll",
    "darwin": "libonnxruntime_providers_cuda.dylib",
}.get(sys.platform, "libonnxruntime_providers_cuda.so")
PLUGIN_MARK = (
    ", cuda-plugin-ep="  # in get_build_info() of a wheel whose CUDA library is a plugin EP
)


class Build(str, Enum):
    IN_TREE = "in-tree"
    PLUGIN = "plugin EP"
    NONE = "none"


@dataclass(frozen=True)
class CudaProvider:
    build: Build
    package: str  # what ships the library: "onnxruntime-gpu 1.31.1"
    cuda: str  # the CUDA major its library links ("13"), "unknown" where it cannot be read
    cudnn: str  # the cuDNN major, "not linked" where neither it nor a sibling provider links cuDNN
    library: str = ""  # the provider library's path ("" for a stand-in without one)

    def fact(self) -> str:
        """The cache keys' and doctor's one line: `plugin EP, onnxruntime-gpu 1.31.1, CUDA 13, cuDNN 9`."""
        if self.build is Build.NONE:
            return f"none ({self.package} has no CUDA provider)"
        return f"{self.build.value}, {self.package}, CUDA {self.cuda}, cuDNN {self.cudnn}"


def uses_cuda(providers: list[Any]) -> bool:
    """Whether a stage's `providers` parameter (names or {name, options}) puts nodes on the CUDA provider."""
    named = {p if isinstance(p, str) else p.get("name") for p in providers}
    return bool(named & ON_CUDA)


def elf_needed(path: Path) -> tuple[str, ...]:
    """The DT_NEEDED entries of an ELF shared library (what `readelf -d` lists), read from its section
    headers and dynamic section only: a 280 MB provider library costs a few reads, and no GPU."""
    with open(path, "rb") as handle:
        ident = handle.read(16)
        if ident[:4] != b"\x7fELF":
            raise ValueError(f"{path} is not an ELF file")
        wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
        header = handle.read(48 if wide else 36)
        offset_at, size_at = (24, 42) if wide else (16, 30)  # e_shoff; e_shentsize, e_shnum
        (table,) = struct.unpack_from(order + ("Q" if wide else "I"), header, offset_at)
        entry_size, count = struct.unpack_from(order + "HH", header, size_at)
        layout = order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
        handle.seek(table)
        raw = handle.read(entry_size * count)
        sections = [struct.unpack_from(layout, raw, i * entry_size) for i in range(count)]

        def body(section: tuple[int, ...]) -> bytes:
            handle.seek(section[4])  # sh_offset, then sh_size
            return handle.read(section[5])

        dynamic = [s for s in sections if s[1] == 6]  # SHT_DYNAMIC
        if not dynamic:
            return ()
        entries, strings = (
            body(dynamic[0]),
            body(sections[dynamic[0][6]]),
        )  # sh_link: its string table
    pair = order + ("qQ" if wide else "iI")
    step = struct.calcsize(pair)
    needed = []
    for start in range(0, len(entries) - step + 1, step):
        tag, value = struct.unpack_from(pair, entries, start)
        if tag == 0:  # DT_NULL
            break
        if tag == 1:  # DT_NEEDED
            needed.append(strings[value : strings.index(b"\0", value)].decode())
    return tuple(needed)


def linked_major(needed: tuple[str, ...], stem: str) -> str:
    """The major a library links `stem` at: ("libcudart.so.13", ...) and "libcudart" give "13"."""
    for name in needed:
        found = re.fullmatch(re.escape(stem) + r"(?:_\w+)?\.so\.(\d+)(?:\..*)?", name)
        if found:
            return found.group(1)
    return ""


def _needed(path: Path) -> tuple[str, ...]:
    try:
        return elf_needed(path)
    except (
        OSError,
        ValueError,
        struct.error,
    ):  # not ELF (Windows, macOS) or unreadable: other sources
        return ()


def _cudnn(library: Path) -> str:
    """cuDNN's major from the provider library, else from a sibling provider of the same build (ORT's CUDA
    library may load cuDNN at run time; its TensorRT provider, built beside it, links it)."""
    found = linked_major(_needed(library), "libcudnn")
    for sibling in sorted(library.parent.glob("libonnxruntime_providers_*.so")):
        found = found or linked_major(_needed(sibling), "libcudnn")
    return found or "not linked"


def installed() -> CudaProvider:
    """This machine's onnxruntime's CUDA provider, as its files describe it."""
    import onnxruntime

    try:
        from onnxruntime.capi import build_and_package_info as info

        package, built_for = f"{info.package_name} {info.__version__}", str(info.cuda_version or "")
    except (ImportError, AttributeError):  # an older or source build
        package, built_for = f"onnxruntime {onnxruntime.__version__}", ""
    library = Path(onnxruntime.__file__).parent / "capi" / LIBRARY
    if not library.is_file():
        return CudaProvider(Build.NONE, package, "", "")
    build = Build.PLUGIN if PLUGIN_MARK in onnxruntime.get_build_info() else Build.IN_TREE
    cuda = linked_major(_needed(library), "libcudart") or built_for.split(".")[0] or "unknown"
    return CudaProvider(build, package, cuda, _cudnn(library), str(library))


def stand_in(text: str) -> CudaProvider:
    """$ORTFLOW_CUDA_PROVIDER: a JSON object, or a JSON file, describing a build, e.g.
    {"build": "plugin EP", "package": "onnxruntime-gpu 1.32.0", "cuda": "13", "cudnn": "9"}; a "library"
    path in place of the majors has them read from its ELF NEEDED entries."""
    try:
        said = json.loads(Path(text).read_text() if not text.lstrip().startswith("{") else text)
        build = Build(said["build"])
        library = Path(said["library"]) if said.get("library") else None
        needed = _needed(library) if library else ()
        return CudaProvider(
            build,
            str(said["package"]),
            str(said.get("cuda") or linked_major(needed, "libcudart") or "unknown"),
            str(said.get("cudnn") or linked_major(needed, "libcudnn") or "not linked"),
            str(library or ""),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OrtflowError(
            f"${VARIABLE} does not describe a CUDA provider build ({type(exc).__name__}: {exc}) — "
            'give JSON such as {"build": "in-tree", "package": "onnxruntime-gpu 1.31.1", "cuda": "13", '
            f'"cudnn": "9"}} (build: {", ".join(b.value for b in Build)}), or unset it'
        ) from None


def describe() -> CudaProvider:
    """The stand-in where $ORTFLOW_CUDA_PROVIDER is set, else this machine's build."""
    forced = os.environ.get(VARIABLE, "").strip()
    return stand_in(forced) if forced else installed()
