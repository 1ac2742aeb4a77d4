"""The sizes `engine init` gives a model's inputs: an image input's sides (fixed, named in the file, the
median of the user's images, or a default), a guess for every other axis the model leaves open (a
`SizeGuess`, which the trial run may replace), and the caps that keep a random feed small enough to
allocate."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ortflow.engine.contracts.dataset import MAX_FEED_VALUES
from ortflow.engine.leaves.errors import OrtflowError
from ortflow.engine.starter.roles import InputInfo, InputRole, ModelKind, ModelRoles

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
SEQUENCE_LENGTH = 128  # tokens: what sentence encoders are usually served at
AUDIO_CHUNK = 512  # samples: 32 ms at 16 kHz, the chunk streaming speech models take
# values in one input of one random sample (64 MiB of float32): init's cap on its guesses
MAX_FEED_ELEMENTS = 1 << 24
# values an input's fixed dims may declare: the random loader's bound (1 GiB of float32, the npz loader's too)
MAX_FIXED_ELEMENTS = MAX_FEED_VALUES


def image_axes(info: InputInfo) -> tuple[int, int]:
    """The (height, width) axes of an image input: NCHW when axis 1 holds 1 or 3 channels, else NHWC."""
    return (2, 3) if info.fact.shape[1] in (1, 3) else (1, 2)


STRIDE = 32  # image sides proposed from data are multiples of it: most CNNs and detectors downsample by up to 32
MAX_SIDE = 1024  # and at most this long, aspect kept: calibration holds every activation of a batch in memory


def image_size(roles: ModelRoles, info: InputInfo, folder: Path | None = None) -> tuple[int, int]:
    """The image input's [height, width]: its fixed sizes, a size in the file name (`320n.onnx`), the median size of
    the images in `folder` (rounded up to a multiple of 32: a recogniser of text lines gets lines, not 640 x 640
    squares whose attention outgrows the machine's memory), else a default; a fixed height or width always stays."""
    fixed = fixed_sides(info)
    if fixed[0] and fixed[1]:
        return int(fixed[0]), int(fixed[1])
    named = [
        int(n)
        for n in re.findall(r"(?<!\d)(\d{3,4})(?!\d)", roles.facts.path.stem)
        if 96 <= int(n) <= 2048 and int(n) % 32 == 0
    ]
    if named:
        guess = (named[0], named[0])
    elif folder is not None and (seen := median_size(folder)):
        guess = seen
    else:
        side = 640 if roles.kind in (ModelKind.DETECTOR, ModelKind.CNN) else 224
        guess = (side, side)
    return int(fixed[0] or guess[0]), int(fixed[1] or guess[1])


def fixed_sides(info: InputInfo) -> list[int | None]:
    dims = [info.fact.shape[a] for a in image_axes(info)]
    return [int(d) if isinstance(d, int) and d > 0 else None for d in dims]


def median_size(folder: Path) -> tuple[int, int] | None:
    """The median [height, width] of the folder's images (their headers only), rounded up to a multiple of STRIDE and
    scaled down to at most MAX_SIDE; None when no image there can be read."""
    from PIL import Image, UnidentifiedImageError

    sizes = []
    for path in sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)[:64]:
        try:
            with Image.open(path) as image:
                sizes.append((image.height, image.width))
        except (OSError, UnidentifiedImageError):
            continue
    if not sizes:
        return None
    height, width = (sorted(side)[len(side) // 2] for side in zip(*sizes))
    shrink = min(1.0, MAX_SIDE / max(height, width))
    return tuple(
        max(STRIDE, -(-round(side * shrink) // STRIDE) * STRIDE) for side in (height, width)
    )


def _axis_size(roles: ModelRoles, info: InputInfo, axis: int) -> int:
    if axis == info.batch_axis:
        return 1
    if info.role in (InputRole.TOKEN_IDS, InputRole.ATTENTION_MASK, InputRole.TOKEN_TYPES):
        return SEQUENCE_LENGTH
    if info.role == InputRole.IMAGE:
        height, width = image_size(roles, info)
        return height if axis == image_axes(info)[0] else width
    if info.role == InputRole.AUDIO:
        return AUDIO_CHUNK
    return 128


@dataclass
class SizeGuess:
    """A size init chose for axes the model leaves open: one named dim (every axis with that name) or one
    unnamed axis. The trial run may replace it (engine.starter.trial), and the recipe says why."""

    key: str  # the dim's name, or "INPUT axis N" for an axis with no name
    size: int
    axes: list[tuple[str, int]]  # (input, axis) it sizes
    named: bool


def size_guesses(roles: ModelRoles) -> dict[str, SizeGuess]:
    guesses: dict[str, SizeGuess] = {}
    for info in roles.inputs:
        for axis in info.fact.symbolic_axes():
            dim = info.fact.shape[axis]
            key = dim if isinstance(dim, str) and dim else f"{info.fact.name} axis {axis}"
            size = _axis_size(roles, info, axis)
            if key in guesses:  # a later input's guess for a shared name wins, as it always has
                guesses[key].axes.append((info.fact.name, axis))
                guesses[key].size = size
            else:
                guesses[key] = SizeGuess(
                    key, size, [(info.fact.name, axis)], isinstance(dim, str) and bool(dim)
                )
    return guesses


def resolved_shape(info: InputInfo, guesses: dict[str, SizeGuess]) -> list[int]:
    by_axis = {a: g.size for g in guesses.values() for name, a in g.axes if name == info.fact.name}
    shape = []
    for axis, dim in enumerate(info.fact.shape):
        size = by_axis.get(axis, dim)
        if not isinstance(size, int):  # size_guesses guessed every open axis: a fixed one is an int
            raise TypeError(f"{info.fact.name} axis {axis} ({dim}) has no size guessed")
        shape.append(size)
    return shape


def cap_sizes(roles: ModelRoles, guesses: dict[str, SizeGuess]) -> list[str]:
    """Shrink guessed sizes until every input's random feed holds at most MAX_FEED_ELEMENTS values (halving
    the largest guess on it), before anything is allocated; an input whose fixed dims alone exceed
    MAX_FIXED_ELEMENTS is refused. Returns what was capped, for the recipe's comment and init's output."""
    remarks = []
    for info in roles.inputs:
        fixed = math.prod(d for d in info.fact.shape if isinstance(d, int) and d > 0)
        if fixed > MAX_FIXED_ELEMENTS:
            raise OrtflowError(
                f"input {info.fact.describe()} declares {fixed:,} values a sample, over init's cap of "
                f"{MAX_FIXED_ELEMENTS:,} values an input, the random loader's bound (no feed was allocated) — re-export the model "
                "with a smaller (or symbolic) size, or write the recipe by hand with a `python` dataset"
            )
        before = resolved_shape(info, guesses)
        mine = [g for g in guesses.values() if any(name == info.fact.name for name, _ in g.axes)]
        while mine and math.prod(resolved_shape(info, guesses)) > MAX_FEED_ELEMENTS:
            largest = max(mine, key=lambda g: g.size)
            largest.size = max(1, largest.size // 2)
        if resolved_shape(info, guesses) != before:
            remarks.append(
                f"{info.fact.name}: {before} would be {math.prod(before):,} values; capped at "
                f"{resolved_shape(info, guesses)} (init's cap: {MAX_FEED_ELEMENTS:,} values an input)"
            )
    return remarks
