"""Helpers for stages that read and write ONNX models: find the model file, save loadable files (with
external data when over protobuf's 2 GB limit), check them, count their ops.

A model artifact is either one .onnx file, or a folder holding one .onnx file and the external-data files
it references (what a stage writes for a model over 2 GB). Stages go through `model_file` and `output_file`."""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from ortflow.engine.leaves.errors import StageError

TWO_GB = 2**31 - 1  # protobuf's limit: larger models must keep their weights in external data


def needs_external_data(size: int) -> bool:
    """True for a model of `size` bytes past protobuf's 2 GB limit, which must keep its weights in external
    data. Reads TWO_GB when called, never a copy taken at import (tests lower it to exercise the large path)."""
    return size > TWO_GB


@lru_cache(maxsize=1)
def ort_errors() -> tuple[type[BaseException], ...]:
    """The exception types ONNX Runtime raises (Fail, InvalidGraph, ...: plain Exception subclasses from its
    C++ bindings), to catch ORT's failures without catching everything."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = [v for v in vars(state).values() if isinstance(v, type) and issubclass(v, Exception)]
    return (RuntimeError, *found)


@lru_cache(maxsize=1)
def max_ir_version() -> int:
    """The newest IR version the installed ONNX Runtime loads (onnx may write a newer one than ORT reads)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    for version in range(onnx.IR_VERSION, 6, -1):
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = version
        try:
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except ort_errors():  # this IR version is too new for this build
            continue
        return version
    return 7


def model_file(path: Path | str) -> Path:
    """The .onnx file of a model artifact (a file, or a folder with one .onnx file and its data)."""
    path = Path(path)
    if not path.is_dir():
        return path
    found = sorted(path.glob("*.onnx"))
    if len(found) != 1:
        raise StageError(f"{path} should hold exactly one .onnx file (found {len(found)})")
    return found[0]


def private_model(artifact: Path | str, folder: Path) -> Path:
    """The model's .onnx file, linked (copied across file systems) into the stage's own work folder, with a
    copy of its external data.

    ORT's quantization tools write side files beside the model they are given (shape inference saves
    `<model>-inferred.onnx` there and deletes it after); beside a cache object, two stages quantizing the same
    model at once (a matrix on a Dask cluster, `-j 2`) delete each other's file."""
    artifact, target = Path(artifact), Path(folder) / "input"
    if artifact.is_dir():
        external_data_files(model_file(artifact))  # refuses data named outside the folder
        base, files = (
            artifact,
            [p.relative_to(artifact) for p in artifact.rglob("*") if p.is_file()],
        )
    else:  # a single file, with any external data it names beside it
        base, files = (
            artifact.parent,
            [Path(artifact.name), *map(Path, external_data_files(artifact))],
        )
    for name in files:
        if not (base / name).is_file():
            continue  # a missing external-data file: loading the model says so, with the fix
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.suffix != ".onnx" and name != Path(artifact.name):
            shutil.copyfile(
                base / name, dest
            )  # external data: onnx refuses a linked file ("hardlink attack")
            continue
        try:
            os.link(base / name, dest)
        except OSError:
            shutil.copyfile(base / name, dest)
    return model_file(target) if artifact.is_dir() else target / artifact.name


class NotAnOnnxModel(StageError):
    """The file's bytes do not parse as an ONNX model (so every load of it fails the same way)."""


class ExternalDataOutside(StageError):
    """A model names external data outside its own folder (or the model file itself)."""


NOT_A_MODEL_HINT = "check that the path names an .onnx file, or re-export / re-download the model"


def load_graph(path: Path, external_data: bool = False) -> Any:
    """onnx.load, with a file that is not an ONNX model said as such (by name) instead of protobuf's riddle."""
    import onnx
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]  # protobuf: no stubs installed

    try:
        model = onnx.load(str(path), load_external_data=external_data)
    except DecodeError as exc:
        raise NotAnOnnxModel(
            f"{Path(path).name} is not an ONNX model: its bytes do not parse as one "
            f"({first_line(exc)}) — {NOT_A_MODEL_HINT}"
        ) from exc
    # protobuf parses an empty file (or stray bytes) as an empty message: said so, not as "a model with no inputs"
    if not model.HasField("graph"):
        what = "is empty (0 bytes)" if Path(path).stat().st_size == 0 else "holds no graph"
        raise NotAnOnnxModel(f"{Path(path).name} {what}: not an ONNX model — {NOT_A_MODEL_HINT}")
    return model


def external_data_files(path: Path) -> list[str]:
    """Locations (relative to the model's folder) of the external-data files a model references. Each
    must resolve inside the model's folder, as onnx and ORT require: a hostile model naming
    `../../secret` or `/etc/passwd` is refused here, before any caller reads, stats or copies the file."""
    import onnx

    model = load_graph(path)
    found: set[str] = set()
    for tensor in all_tensors(model.graph):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            found.update(e.value for e in tensor.external_data if e.key == "location")
    for location in found:
        check_data_location(path, location)
    return sorted(found)


def all_tensors(graph: Any) -> Iterator[Any]:
    """Every tensor a graph holds, where ORT may read external data for any of them: initializers (sparse
    ones too), `Constant`-style tensor attributes, and the same in every subgraph (If, Loop, Scan bodies)."""
    for sparse in graph.sparse_initializer:
        yield from (sparse.values, sparse.indices)
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            yield from (attribute.t, *attribute.tensors)
            for sparse in (attribute.sparse_tensor, *attribute.sparse_tensors):
                yield from (sparse.values, sparse.indices)
            for sub in (attribute.g, *attribute.graphs):
                yield from all_tensors(sub)


def check_data_location(model: Path, location: str) -> None:
    """Raises ExternalDataOutside unless `location` names a file inside the model's folder (no absolute
    path, no `..`, no symbolic link leading out of it) other than the model file itself."""
    folder = model.parent.resolve()
    why = ""
    if (
        not location
        or "\\" in location
        or os.path.isabs(location)
        or re.match(r"^[A-Za-z]:", location)
    ):
        why = "an absolute or empty path"
    elif ".." in Path(location).parts:
        why = "a path climbing out of the model's folder"
    else:
        target = (folder / location).resolve()
        if target == model.resolve():
            why = "the model file itself"
        elif folder not in target.parents:
            why = "a symbolic link leading out of the model's folder"
    if why:
        raise ExternalDataOutside(
            f"{model.name} names external data at '{location}', {why}; a model's data files must lie inside "
            f"its own folder ({folder}) — re-save the model with onnx.save_model(..., save_as_external_data=True)"
            " beside the .onnx file, or do not use a model from an untrusted source"
        )


def has_external_data(path: Path) -> bool:
    """Whether the model keeps weights in external-data files (False for a file that is not a model: the load
    that follows reports it, with the fix)."""
    try:
        return bool(external_data_files(model_file(path)))
    except NotAnOnnxModel:
        return False


def total_size(path: Path) -> int:
    """Bytes of a model including its external data."""
    path = model_file(path)
    try:
        external = external_data_files(path)
    except NotAnOnnxModel:
        external = []  # the load that follows reports it with the fix
    return path.stat().st_size + sum(
        (path.parent / f).stat().st_size for f in external if (path.parent / f).exists()
    )


def output_file(output: Path, large: bool) -> Path:
    """Where a stage writes its model: the output path itself, or for a model that needs external data a
    folder at the output path holding model.onnx and model.onnx.data (kept together as one artifact)."""
    if not large:
        return output
    output.mkdir(exist_ok=True)
    return output / "model.onnx"


def write_initializers_beside(options: Any, target: Path) -> None:
    """Have ORT, saving an optimized model to `target` (optimized_model_filepath), write every initializer of
    1 KB or more to its own `<target>.data` beside it. Needed for a model over 2 GB, and for any model read with
    external data: ORT saves an initializer it read from a data file as a reference to that file (its name,
    relative to the new model), not as bytes, so the written model would name a file that is not beside it."""
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", f"{target.name}.data"
    )
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
    )


def gathered(written: Path, output: Path) -> Path:
    """A model written with its weights in a data file, saved again at `output` the usual way: one file when it
    fits in 2 GB (as any model that fits is stored), the folder form otherwise."""
    return save(load_graph(written, external_data=True), output)


def save(model: Any, output: Path) -> Path:
    """Save with an IR version ORT accepts, and with external data when the model is over 2 GB."""
    import onnx

    model.ir_version = min(model.ir_version, max_ir_version())
    large = serialized_size(model) > TWO_GB
    if large:  # onnx moves only tensors stored as raw_data out of the file (fp16 converters use int32_data)
        from onnx import numpy_helper

        for tensor in model.graph.initializer:
            if (
                not tensor.HasField("raw_data")
                and tensor.data_location != onnx.TensorProto.EXTERNAL
            ):
                tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor), tensor.name))
    path = output_file(output, large)
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=large,
        all_tensors_to_one_file=True,
        location=f"{path.name}.data" if large else None,
    )
    return path


def serialized_size(model: Any) -> int:
    """Bytes the model takes serialized; past protobuf's 2 GB limit, more than TWO_GB (protobuf cannot count
    that far: ByteSize raises the EncodeError a save would)."""
    import numpy as np
    import onnx
    from google.protobuf.message import EncodeError

    held = 0  # the weights held in the message, from their shapes: counting costs nothing
    for tensor in model.graph.initializer:
        if (
            tensor.data_location != onnx.TensorProto.EXTERNAL
            and tensor.data_type != onnx.TensorProto.STRING
        ):
            held += (
                int(np.prod(tensor.dims, dtype=np.int64))
                * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
            )
    if held > TWO_GB:
        return held  # ByteSize would encode up to 2 GB before it gave up
    try:
        return int(model.ByteSize())
    except EncodeError:
        return TWO_GB + 1


def cap_ir_version(path: Path) -> None:
    """Rewrite a saved model whose IR version is newer than ORT loads (e.g. written by a newer onnx)."""
    import onnx

    model = load_graph(path)
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
        raise StageError(
            f"the written model {path.name} fails onnx.checker: {first_line(exc)}"
        ) from exc
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        ort.InferenceSession(
            str(path), sess_options=options, providers=providers or ["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise StageError(
            f"the written model {path.name} does not load into ONNX Runtime: {first_line(exc)}"
        ) from exc


def load_for_ort(
    path: Path, options: Any = None, providers: list[Any] | None = None, **session_args: Any
) -> Any:
    """An ORT session (default: CPU, ORT's default optimizations), raising StageError for unloadable files."""
    import onnxruntime as ort

    if options is None:
        options = ort.SessionOptions()
        options.log_severity_level = 3
    try:
        return ort.InferenceSession(
            str(path),
            sess_options=options,
            providers=providers or ["CPUExecutionProvider"],
            **session_args,
        )
    except Exception as exc:  # ORT raises its own exception types for every load failure
        raise StageError(
            f"ONNX Runtime cannot load {path.name}: {first_line(exc)} — check that the file is a "
            "complete ONNX model (re-export or re-download it)"
        ) from exc


def op_counts(path: Path) -> Counter[str]:
    """Nodes by op type (contrib ops as domain.op), subgraphs included."""
    import onnx

    model = load_graph(path)
    counts: Counter[str] = Counter()

    def visit(graph: Any) -> None:
        for node in graph.node:
            counts[
                node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
            ] += 1
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g)

    visit(model.graph)
    return counts


def first_line(exc: BaseException) -> str:
    """What a library's exception says, on one line (ORT's messages run to a page)."""
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
