"""Datasets: pluggable loaders that yield model feeds. A recipe declares them under `datasets:` and stages
take them as `datasets.<name>`; a stage receives a Dataset, never a loader's files directly.

A dataset's identity (its digest, part of every consuming stage's cache key) is its loader type and
version, its parameters, and the content of every file it reads: never a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Iterable, Iterator, Mapping

from ortflow.engine.contracts.provenance import DataProvenance, DataSource
from ortflow.engine.leaves.errors import StageError
from ortflow.engine.leaves.json_types import Json, JsonObject, Params

if TYPE_CHECKING:
    import numpy as np
    import onnx

Feed = dict[str, "np.ndarray"]
__all__ = [
    "BATCH_AXES_PARAM",
    "LIMIT_PARAM",
    "SKIP_PARAM",
    "DataProvenance",
    "DataSource",
    "Dataset",
    "DatasetLoader",
    "Feed",
    "ModelInput",
    "ModelInputs",
    "FROZEN_INPUTS",
    "batched",
    "check_feed",
    "file_param",
    "model_inputs",
]


@dataclass(frozen=True)
class ModelInput:
    """One graph input: its name, numpy dtype, and shape (ints, symbolic names, or None)."""

    name: str
    dtype: str
    shape: tuple[int | str | None, ...]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype} [{dims}]"


# The model metadata key where the specialize stage records the inputs it froze to constants: {name: value}.
FROZEN_INPUTS = "ortflow.frozen_inputs"


class ModelInputs(list[ModelInput]):  # a list, so every caller of model_inputs reads it as before
    """The inputs a caller feeds, and `frozen`: inputs the model was specialized for (constants now), which data
    made for the original model still carries; Dataset.feeds drops them after checking the data's value."""

    def __init__(self, found: Iterable[ModelInput] = (), frozen: dict[str, Json] | None = None):
        super().__init__(found)
        self.frozen = dict(frozen or {})


def model_inputs(model_path: Path) -> ModelInputs:
    """The inputs a caller must feed (initializers that double as inputs are optional and left out)."""
    import onnx
    from google.protobuf.message import DecodeError  # type: ignore[import-untyped]  # protobuf: no stubs here
    from onnx import helper

    try:
        model = onnx.load(str(model_path), load_external_data=False)
    except DecodeError as exc:
        raise StageError(
            f"{Path(model_path).name} is not an ONNX model: its bytes do not parse as one ({exc}) — "
            "check that the path names an .onnx file, or re-export / re-download the model"
        ) from exc
    initializers = {t.name for t in model.graph.initializer}
    found = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dtype = (
            helper.tensor_dtype_to_np_dtype(tensor.elem_type).name
            if tensor.elem_type
            else "float32"
        )
        shape = tuple(
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in tensor.shape.dim
        )
        found.append(ModelInput(value.name, dtype, shape))
    return ModelInputs(found, _frozen(model))


def _frozen(model: onnx.ModelProto) -> dict[str, Json]:
    import json

    for prop in model.metadata_props:
        if prop.key == FROZEN_INPUTS:
            return dict(json.loads(prop.value))
    return {}


def without_frozen(feed: Feed, inputs: list[ModelInput], where: str) -> Feed:
    """The feed less the inputs the model was specialized for; data giving one of them another value than the
    model was specialized for is an error, never silently a different model's answer."""
    import numpy as np

    frozen = inputs.frozen if isinstance(inputs, ModelInputs) else {}
    if not isinstance(feed, dict) or not frozen.keys() & feed.keys():
        return feed
    for name in frozen.keys() & feed.keys():
        if not np.array_equal(np.asarray(feed[name]), np.asarray(frozen[name])):
            raise StageError(
                f"{where}: input '{name}' is {np.asarray(feed[name]).tolist()}, but the model was specialized for "
                f"{name} = {frozen[name]} (its specialize step froze it) — use data of that value, or specialize for it"
            )
    return {k: v for k, v in feed.items() if k not in frozen}


def feeds_fit(candidate: list[ModelInput], reference: list[ModelInput]) -> bool:
    """Whether data made for `reference` feeds `candidate`: the same input names, dtypes and ranks (not their
    order, nor the names of symbolic dims), less the inputs the candidate was specialized for, which the data
    still carries (feeds_for drops them, checking their value). An input both were specialized for, to the same
    value (an INT8 built from a specialized model, judged against it), the data need not carry."""
    import numpy as np

    frozen = candidate.frozen if isinstance(candidate, ModelInputs) else {}
    shared = reference.frozen if isinstance(reference, ModelInputs) else {}
    if any(
        not np.array_equal(np.asarray(frozen[k]), np.asarray(shared[k]))
        for k in frozen.keys() & shared.keys()
    ):
        return False
    wanted = {i.name: (i.dtype, len(i.shape)) for i in reference}
    theirs = {i.name: (i.dtype, len(i.shape)) for i in candidate}
    return frozen.keys() - shared.keys() <= wanted.keys() and theirs == {
        k: v for k, v in wanted.items() if k not in frozen
    }


def feeds_for(model_path: Path, feeds: list[Feed]) -> list[Feed]:
    """Feeds made for the original model, as the model at `model_path` takes them: less the inputs it was
    specialized for (each value checked against what it was specialized for); the same list where it has none."""
    inputs = model_inputs(model_path)
    if not inputs.frozen:
        return feeds
    return [without_frozen(f, inputs, f"{model_path.name} feed {i}") for i, f in enumerate(feeds)]


# The most values one input of one synthetic sample may hold (1 GiB of float32, the npz loader's default bound):
# the random loader refuses more before allocating, and `engine init` refuses a model whose fixed dims declare more.
MAX_FEED_VALUES = 1 << 28

# Schema fragments every loader uses the same way. `skip` and `limit` are applied by the engine (Dataset.feeds):
# two datasets over one source, one with `limit: N` and one with `skip: N`, never share a sample, which is how a
# held-out set is cut from the same folder or file as the calibration set.
LIMIT_PARAM: JsonObject = {
    "type": "integer",
    "minimum": 1,
    "description": "use only the first N samples (after `skip`)",
}
SKIP_PARAM: JsonObject = {
    "type": "integer",
    "minimum": 0,
    "description": "leave out the first N samples (a held-out set beside a calibration set with `limit: N`)",
}
# Where each input's batch axis is, for stages that join samples into batches (calibrate, benchmark).
BATCH_AXES_PARAM: JsonObject = {
    "type": "object",
    "additionalProperties": {"type": ["integer", "null"], "minimum": 0},
    "description": "per input, the axis that holds the batch (e.g. {state: 1} for a recurrent state "
    "[layers, batch, hidden]) or null for an input that is not batched (e.g. a sample rate); "
    "default: axis 0, and 0-d (scalar) inputs are never batched",
}


def file_param(what: str) -> JsonObject:
    """A parameter naming a file or folder (also list its name in the loader's `file_params`)."""
    return {"description": f"{what} (relative to the recipe, or {{package: DIST, file: PATH}})"}


class DatasetLoader:
    """Base class of a data source. Register subclasses under the `ortflow.datasets` entry-point group."""

    type: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str] = ""
    params_schema: ClassVar[JsonObject] = {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    # Parameters naming files or folders: resolved against the recipe's folder (or an installed package,
    # with {package: ..., file: ...}) and hashed by content into the dataset's digest.
    file_params: ClassVar[tuple[str, ...]] = ()
    # What its samples are, said in every accuracy verdict on them. The default is UNKNOWN, never REAL: a
    # loader must declare REAL to have its data's verdicts read as measured on real inputs. The loader's type
    # and version are in the dataset's digest, so a loader that changes what it declares bumps its version.
    provenance: ClassVar[DataProvenance] = DataProvenance.UNKNOWN
    # The file parameters that hold the samples, named in verdicts (default: every file parameter; a text
    # loader's tokenizer is a file it reads, not its data).
    data_params: ClassVar[tuple[str, ...] | None] = None

    def data_provenance(self, params: Mapping[str, Json | Path]) -> DataProvenance:
        """What these parameters' samples are (by default the class's `provenance`); a loader whose data
        depends on its parameters (a user function) says so here."""
        return self.provenance

    # `params` typed as the other hooks take them once no caller builds them as a dict of objects (the quantizers'
    # sanity check feeds the random loader so: stages/quantization/sanity.py)
    def feeds(self, params: Params, inputs: list[ModelInput]) -> Iterable[Feed]:
        """Yield one feed (input name -> array with a leading batch axis) per sample. A `limit` parameter,
        if the schema declares one, is applied by the engine."""
        raise NotImplementedError

    def env_facts(self) -> tuple[str, ...]:
        """Environment facts (engine.leaves.environment) the feeds depend on, e.g. the tokenizers version."""
        return ()

    def labels(self, params: Mapping[str, Json | Path]) -> "np.ndarray | None":
        """Ground-truth labels, one per sample in feed order, if the data has them."""
        return None

    def key_caveat(self, params: Mapping[str, Json | Path]) -> str | None:
        """What the dataset's cache key cannot cover (e.g. files a user function reads), said by plan and run."""
        return None


@dataclass
class Dataset:
    """What a stage receives for a `datasets.<name>` input."""

    name: str
    loader: DatasetLoader
    # validated, defaults filled in: JSON values, its file parameters resolved to absolute Paths
    params: Mapping[str, Json | Path]
    digest: str
    location: str  # where the recipe declares it, for messages

    def source(self) -> DataSource:
        """Where its samples come from, for the verdicts made on them: the loader's declared provenance, and the
        files it reads (its file parameters, resolved) by path."""
        paths = []
        named = (
            self.loader.data_params
            if self.loader.data_params is not None
            else self.loader.file_params
        )
        for name in named:
            value = self.params.get(name)
            if isinstance(value, (str, Path)):
                paths.append(str(value))
        return DataSource(
            self.loader.data_provenance(self.params), self.loader.type, self.name, tuple(paths)
        )

    @property
    def batch_axes(self) -> dict[str, int | None]:
        """Per input, its batch axis (None: not batched) where the dataset declares one."""
        axes = self.params.get("batch_axes")
        if not isinstance(axes, dict):
            return {}
        return {name: axis for name, axis in axes.items() if axis is None or isinstance(axis, int)}

    def _count(self, name: str) -> int | None:
        """`skip` or `limit`: an integer the engine applies (the loader's schema declares it), or None."""
        value = self.params.get(name)
        return value if isinstance(value, int) else None

    def labels(self, limit: int | None = None) -> "np.ndarray | None":
        """The dataset's labels for its first `limit` samples, or None if it has none."""
        found = self.loader.labels(self.params)
        if found is None:
            return None
        found = found[self._count("skip") or 0 :]
        limits = [n for n in (limit, self._count("limit")) if n]
        return found[: min(limits)] if limits else found

    def feeds(self, inputs: list[ModelInput], limit: int | None = None) -> Iterator[Feed]:
        """The loader's feeds, each checked against the model's inputs before anyone runs it."""
        where = f"dataset '{self.name}' ({self.location})"
        limits = [n for n in (limit, self._count("limit")) if n]
        most = min(limits) if limits else None
        count = 0
        feeds = iter(self.loader.feeds(self.params, inputs))
        skip, skipped = self._count("skip") or 0, 0
        while most is None or count < most:
            try:
                feed = next(feeds)
            except StopIteration:
                break
            except StageError as exc:
                raise StageError(f"{where}: {exc}") from exc
            except (
                Exception
            ) as exc:  # the loader's (or a user function's) own failure: say whose it is
                raise StageError(
                    f"{where} failed reading sample {skipped + count}: {type(exc).__name__}: {exc}"
                ) from exc
            if (
                skipped < skip
            ):  # `skip`: read past, unchecked (another dataset over the same source holds them)
                skipped += 1
                continue
            feed = without_frozen(feed, inputs, f"{where} sample {skipped + count}")
            check_feed(feed, inputs, f"{where} sample {skipped + count}")
            count += 1
            yield feed
        if count == 0 and skip:
            raise StageError(
                f"{where} gave no samples after `skip: {skip}` left out the first ones — lower `skip`"
            )
        if count == 0:
            raise StageError(f"{where} gave no samples — check its files and parameters")


def check_feed(feed: Feed, inputs: list[ModelInput], where: str) -> None:
    """A wrong name, dtype or rank is an error naming both sides."""
    import numpy as np

    if not isinstance(feed, dict) or not all(isinstance(v, np.ndarray) for v in feed.values()):
        raise StageError(
            f"{where} is a {type(feed).__name__}, not a mapping of input names to numpy arrays"
            " — a feed is {input name: array with a leading batch axis}"
        )
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
        raise StageError(
            f"{where} {' and '.join(parts)}; the model's inputs are {model_side}"
            " — rename the arrays or choose the dataset made for this model"
        )
    for name, array in feed.items():
        spec = wanted[name]
        if str(array.dtype) != spec.dtype or array.ndim != len(spec.shape):
            raise StageError(
                f"{where}: input '{name}' is {array.dtype} with {array.ndim} dims {list(array.shape)},"
                f" the model wants {spec.describe()} — convert the data or fix the loader's parameters"
            )
        for axis, (got, want) in enumerate(zip(array.shape, spec.shape, strict=False)):
            if isinstance(want, int) and want > 0 and got != want:
                raise StageError(
                    f"{where}: input '{name}' has size {got} on axis {axis}, the model fixes it"
                    f" at {want} ({spec.describe()})"
                )


def batched(
    feeds: Iterable[Feed], batch_size: int, axes: dict[str, int | None] | None = None
) -> Iterator[Feed]:
    """Join consecutive feeds along each input's batch axis (`axes`: per input, None for one that is not
    batched; default axis 0, and a 0-d input is never batched). Samples in one batch must share shapes, and
    an input that is not batched the same value."""
    import numpy as np

    def join(pending: list[Feed]) -> Feed:
        joined = {}
        for name in pending[0]:
            axis = (axes or {}).get(name, 0 if pending[0][name].ndim else None)
            if axis is None:
                if any(not np.array_equal(f[name], pending[0][name]) for f in pending[1:]):
                    raise StageError(
                        f"input '{name}' is not batched but differs between samples — set batch_size: 1, "
                        f"or declare its batch axis (batch_axes: {{{name}: 0}})"
                    )
                joined[name] = pending[0][name]
                continue
            try:
                joined[name] = np.concatenate([f[name] for f in pending], axis=axis)
            except ValueError as exc:  # numpy's AxisError is a ValueError too
                raise StageError(
                    f"samples of different shapes cannot share a batch (input '{name}', axis {axis}: {exc}) — "
                    "set batch_size: 1, make the samples one shape (e.g. the text loader's padding: "
                    "max_length), or declare the input's batch axis (batch_axes)"
                ) from exc
        return joined

    pending: list[Feed] = []
    for feed in feeds:
        pending.append(feed)
        if len(pending) == batch_size:
            yield join(pending)
            pending = []
    if pending:
        yield join(pending)
