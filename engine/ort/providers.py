"""Which execution providers ONNX Runtime can really use here.

The GPU wheel lists CUDA and TensorRT in `get_available_providers()` even when their libraries cannot
load; only a session says what it got. `resolve` creates a tiny session with the requested providers and
reads `session.get_providers()`, and says for each provider it did not get what is missing and how to
install it.
"""

from __future__ import annotations

import ctypes.util
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ortflow.engine.leaves.errors import ProviderUnavailable, StageError
from ortflow.engine.ort.onnx_model import first_line, ort_errors

INSTALL = {
    "CUDAExecutionProvider": "CUDA 12 and cuDNN 9 libraries (e.g. `pip install onnxruntime-gpu[cuda,cudnn]`)",
    "TensorrtExecutionProvider": "TensorRT 10 libraries (e.g. `pip install tensorrt`) besides CUDA and cuDNN",
}


@dataclass(frozen=True)
class ProviderCheck:
    requested: tuple[str, ...]
    usable: tuple[str, ...]
    missing: dict[str, str] = field(
        default_factory=dict
    )  # provider -> what is missing and how to install it

    def require(self, what: str) -> None:
        if self.missing:
            details = "; ".join(f"{name}: {reason}" for name, reason in self.missing.items())
            raise ProviderUnavailable(
                f"{what} needs {', '.join(self.missing)}, which ONNX Runtime cannot use here "
                f"({details}) — install it, remove it from `providers`, or mark the stage "
                "`optional: true`"
            )


def names(providers: list[Any]) -> tuple[str, ...]:
    """Provider names from a recipe's list of names or {name, options} objects."""
    return tuple(p if isinstance(p, str) else p["name"] for p in providers)


def for_session(providers: list[Any]) -> list[Any]:
    """The `providers` argument of an InferenceSession: names, or (name, options) pairs."""
    return [p if isinstance(p, str) else (p["name"], p.get("options", {})) for p in providers]


@lru_cache(maxsize=None)
def _resolve(requested: tuple[str, ...]) -> ProviderCheck:
    import onnxruntime as ort
    from onnx import TensorProto, helper

    unknown = [p for p in requested if p not in ort.get_all_providers()]
    if unknown:
        raise StageError(
            f"unknown execution provider {', '.join(unknown)} — known: {', '.join(ort.get_all_providers())}"
        )
    built_in = set(ort.get_available_providers())
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.log_severity_level = 4  # the failed loads are reported below, with the fix
    ort.set_default_logger_severity(
        4
    )  # provider libraries that fail to load log through the default logger
    said = ""
    try:
        usable = tuple(
            ort.InferenceSession(
                model.SerializeToString(), options, providers=list(requested)
            ).get_providers()
        )
    except ort_errors() as exc:  # e.g. a provider library that cannot load
        usable, said = ("CPUExecutionProvider",), first_line(exc)
    finally:
        ort.set_default_logger_severity(2)  # ORT's default: warnings
    missing = {
        p: _why(p, p in built_in) + (f" (ONNX Runtime said: {said})" if said else "")
        for p in requested
        if p not in usable
    }
    return ProviderCheck(requested, usable, missing)


def resolve(providers: list[Any]) -> ProviderCheck:
    return _resolve(names(providers))


def _why(provider: str, built_in: bool) -> str:
    if not built_in:
        return (
            "this onnxruntime build does not include it (install the onnxruntime package that does)"
        )
    if provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider") and not shutil.which(
        "nvidia-smi"
    ):
        return "no NVIDIA driver or GPU found (nvidia-smi is missing)"
    if provider == "TensorrtExecutionProvider" and not ctypes.util.find_library("nvinfer"):
        return f"libnvinfer not found: install {INSTALL[provider]}"
    return f"its libraries did not load: install {INSTALL.get(provider, 'the provider libraries')}"
