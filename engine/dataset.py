"""Datasets: pluggable loaders that yield model feeds. A recipe declares them under `datasets:` and stages
take them as `datasets.<name>`; a stage receives a Dataset, never a loader's files directly.

A dataset's identity (its digest, part of every consuming stage's cache key) is its loader type and
version, its parameters, and the content of every file it reads: never a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Iterator

from engine.errors import StageError

if TYPE_CHECKING:
    import numpy as np

Feed = dict[str, "np.ndarray"]

# ONNX tensor element types as ORT names them, and the numpy dtype each takes.
ONNX_TO_NUMPY = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint8)": "uint8", "tensor(uint16)": "uint16", "tensor(bool)": "bool", "tensor(string)": "object",
}


@dataclass(frozen=True)
class ModelInput:
    """One graph input: its name, numpy dtype, and shape (ints, symbolic names, or None)."""

    name: str
    dtype: str
    shape: tuple[int | str | None, ...]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype} [{dims}]"


def model_inputs(model_path: Path) -> list[ModelInput]:
    """The inputs a caller must feed (initializers that double as inputs are optional and left out)."""
    import onnx
    from onnx import helper

    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    found = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type).name if tensor.elem_type else "float32"
        shape = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim)
        found.append(ModelInput(value.name, dtype, shape))
    return found


class DatasetLoader:
    """Base class of a data source. Register subclasses under the `ortflow.datasets` entry-point group."""

    type: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    params_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {}, "additionalProperties": False}
    # Parameters naming files or folders: resolved against the recipe's folder (or an installed package,
    # with {package: ..., file: ...}) and hashed by content into the dataset's digest.
    file_params: ClassVar[tuple[str, ...]] = ()

    def feeds(self, params: dict[str, Any], inputs: list[ModelInput]) -> Iterable[Feed]:
        """Yield one feed (input name -> array with a leading batch axis) per sample."""
        raise NotImplementedError


@dataclass
class Dataset:
    """What a stage receives for a `datasets.<name>` input."""

    name: str
    loader: DatasetLoader
    params: dict[str, Any]  # file parameters already resolved to absolute Paths
    digest: str
    location: str  # where the recipe declares it, for messages

    def current_digest(self, hashes: Any) -> str:
        return content_digest(type(self.loader), self.params, hashes)

    def feeds(self, inputs: list[ModelInput], limit: int | None = None) -> Iterator[Feed]:
        """The loader's feeds, each checked against the model's inputs before anyone runs it."""
        count = 0
        for feed in self.loader.feeds(self.params, inputs):
            if limit is not None and count >= limit:
                return
            check_feed(feed, inputs, f"dataset '{self.name}' ({self.location}) sample {count}")
            count += 1
            yield feed
        if count == 0:
            raise StageError(f"dataset '{self.name}' ({self.location}) gave no samples — check its files and parameters")


def content_digest(loader_cls: type[DatasetLoader], params: dict[str, Any], hashes: Any) -> str:
    """A dataset's identity: loader type and version, parameters, and its files by content (never by path)."""
    from engine.hashing import hash_bytes
    from engine.keys import canonical_json

    files = set(loader_cls.file_params)
    hashed = {k: hashes.hash_path(v) if k in files else v for k, v in params.items()}
    return hash_bytes(canonical_json({"loader": loader_cls.type, "version": loader_cls.version, "params": hashed}).encode())


def check_feed(feed: Feed, inputs: list[ModelInput], where: str) -> None:
    """A wrong name, dtype or rank is an error naming both sides."""
    wanted = {i.name: i for i in inputs}
    unknown = sorted(set(feed) - set(wanted))
    missing = sorted(set(wanted) - set(feed))
    if unknown or missing:
        model_side = ", ".join(f"{i.name}: {i.describe()}" for i in inputs)
        parts = []
        if unknown:
            parts.append(f"gives {', '.join(unknown)}, which the model does not take")
        if missing:
            parts.append(f"lacks {', '.join(missing)}")
        raise StageError(f"{where} {' and '.join(parts)}; the model's inputs are {model_side}"
                         " — rename the arrays or choose the dataset made for this model")
    for name, array in feed.items():
        spec = wanted[name]
        if str(array.dtype) != spec.dtype or array.ndim != len(spec.shape):
            raise StageError(f"{where}: input '{name}' is {array.dtype} with {array.ndim} dims {list(array.shape)},"
                             f" the model wants {spec.describe()} — convert the data or fix the loader's parameters")
        for axis, (got, want) in enumerate(zip(array.shape, spec.shape, strict=False)):
            if isinstance(want, int) and want > 0 and got != want:
                raise StageError(f"{where}: input '{name}' has size {got} on axis {axis}, the model fixes it"
                                 f" at {want} ({spec.describe()})")


def batched(feeds: Iterable[Feed], batch_size: int) -> Iterator[Feed]:
    """Concatenate consecutive feeds along the batch axis (samples in one batch must share shapes)."""
    import numpy as np

    pending: list[Feed] = []
    for feed in feeds:
        pending.append(feed)
        if len(pending) == batch_size:
            yield {k: np.concatenate([f[k] for f in pending]) for k in pending[0]}
            pending = []
    if pending:
        yield {k: np.concatenate([f[k] for f in pending]) for k in pending[0]}
