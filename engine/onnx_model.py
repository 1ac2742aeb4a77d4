"""Helpers for stages that write ONNX models: save loadable files, check them, count their ops."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.errors import StageError

TWO_GB = 2**31 - 1  # protobuf's limit: larger models must keep their weights in external data


@lru_cache(maxsize=1)
def max_ir_version() -> int:
    """The newest IR version the installed ONNX Runtime loads (onnx may write a newer one than ORT reads)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "probe",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    for version in range(onnx.IR_VERSION, 6, -1):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = version
        try:
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            return version
        except Exception:
            continue
    return 7


def save(model: Any, path: Path) -> None:
    """Save with an IR version ORT accepts, and with external data when the model is over 2 GB."""
    import onnx

    model.ir_version = min(model.ir_version, max_ir_version())
    large = model.ByteSize() > TWO_GB if hasattr(model, "ByteSize") else False
    onnx.save_model(model, str(path), save_as_external_data=large, all_tensors_to_one_file=True,
                    location=f"{path.name}.data" if large else None)


def cap_ir_version(path: Path) -> None:
    """Rewrite a saved model whose IR version is newer than ORT loads (e.g. written by a newer onnx)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    if model.ir_version > max_ir_version():
        model.ir_version = max_ir_version()
        onnx.save_model(model, str(path))


def check(path: Path, providers: list[str] | None = None) -> None:
    """The model passes onnx.checker and loads into an ORT session; raises StageError otherwise."""
    import onnx
    import onnxruntime as ort

    try:
        onnx.checker.check_model(str(path))
    except Exception as exc:
        raise StageError(f"the written model {path.name} fails onnx.checker: {_first_line(exc)}") from exc
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        ort.InferenceSession(str(path), sess_options=options, providers=providers or ["CPUExecutionProvider"])
    except Exception as exc:
        raise StageError(f"the written model {path.name} does not load into ONNX Runtime: {_first_line(exc)}") from exc


def load_for_ort(path: Path) -> Any:
    """An ORT session on the CPU with ORT's default optimizations, raising StageError for unloadable files."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise StageError(f"ONNX Runtime cannot load {path.name}: {_first_line(exc)} — check that the file is a "
                         "complete ONNX model (re-export or re-download it)") from exc


def op_counts(path: Path) -> Counter[str]:
    """Nodes by op type (contrib ops as domain.op), subgraphs included."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    counts: Counter[str] = Counter()

    def visit(graph: Any) -> None:
        for node in graph.node:
            counts[node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"] += 1
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g)

    visit(model.graph)
    return counts


def pre_processed(source: Path, target: Path) -> Path:
    """ORT's quant_pre_process (symbolic shape inference with auto_merge, then ORT's basic optimizations), the
    graph both calibration and static quantization work on. auto_merge: without it shape inference stops
    ("Incomplete symbolic shape inference") on BERT-style and YOLO-style exports."""
    import contextlib
    import io

    from onnxruntime.quantization import quant_pre_process

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            quant_pre_process(str(source), str(target), auto_merge=True,
                              save_as_external_data=source.stat().st_size > TWO_GB)
    except Exception as exc:
        raise StageError(f"quant_pre_process failed: {type(exc).__name__}: {exc} — set pre_process: false to skip it") from exc
    return target


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
