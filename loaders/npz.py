"""npz: one .npz file whose arrays are named after the model's inputs, samples along the first axis.

Arrays are read from the zip members' .npy headers first and materialized only as far as needed: a small
compressed file can declare an array of gigabytes (zeros compress a thousandfold), so what would be read is
checked against `max_bytes` before any of it is allocated, and `limit` reads only the first rows.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator

from ortflow.api import (
    BATCH_AXES_PARAM,
    LIMIT_PARAM,
    SKIP_PARAM,
    DataProvenance,
    Feed,
    ModelInput,
    SettingsLoader,
    StageError,
    file_param,
)

MAX_BYTES = (
    1 << 30
)  # per array, once read: far above a calibration or evaluation set, far below a machine's memory
CHUNK = 16 << 20  # bytes decompressed per read
ZIP_MAGIC = (
    b"PK\x03\x04",
    b"PK\x05\x06",
)  # a zip's first local file header, or an empty zip's directory
FIX = "save the arrays with numpy.savez(path, <input name>=array, ...)"
_READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error)  # a damaged or truncated zip


@dataclass(frozen=True)
class _Member:
    """One array in the archive, as its .npy header describes it."""

    key: str
    info: zipfile.ZipInfo
    shape: tuple[int, ...]
    fortran: bool
    dtype: Any  # numpy.dtype

    def rows_to_read(self, limit: int | None) -> int:
        """Rows read to give the first `limit` samples: all of them for a column-major (Fortran) array,
        whose first rows are not stored together."""
        return self.shape[0] if self.fortran or not limit else min(self.shape[0], limit)

    def bytes_for(self, rows: int) -> int:
        count = rows * int(self.dtype.itemsize)
        for extent in self.shape[1:]:
            count *= extent
        return count


@dataclass(frozen=True)
class NpzSettings:
    """The loader's parameters as validated against its params_schema (`path` resolved)."""

    path: Path
    skip: int | None = None
    limit: int | None = None
    batch_axes: dict[str, int | None] | None = None
    labels: str | None = None
    max_bytes: int = MAX_BYTES


class NpzLoader(SettingsLoader[NpzSettings]):
    type = "npz"
    provenance = DataProvenance.REAL
    description = (
        "Arrays named after the model's inputs in one .npz file; sample i is row i of every array, laid out "
        "with its batch axis where batch_axes says (none for an input that is not batched, e.g. a sample rate "
        "stored as one value per sample)."
    )
    file_params = ("path",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": file_param("the .npz file"),
            "skip": SKIP_PARAM,
            "limit": LIMIT_PARAM,
            "batch_axes": BATCH_AXES_PARAM,
            "labels": {
                "type": "string",
                "description": "an array of ground-truth labels (not fed to the model)",
            },
            # No schema `default`: defaults enter the dataset's digest, and a bound changes no data.
            "max_bytes": {
                "type": "integer",
                "minimum": 1,
                "description": f"the most bytes one array may take once read (default {MAX_BYTES}, 1 GiB): "
                "a small compressed file can declare a huge array",
            },
        },
    }

    settings = NpzSettings

    def samples(self, settings: NpzSettings, inputs: list[ModelInput]) -> Iterator[Feed]:
        path = settings.path
        with _open_npz(path) as archive:
            members = _members(archive, path.name)
            scalars = sorted(m.key for m in members if not m.shape)
            if scalars:
                raise StageError(
                    f"{path.name}: {', '.join(scalars)} hold single values; "
                    "each array needs samples along its first axis"
                )
            counts = {m.key: m.shape[0] for m in members}
            if len(set(counts.values())) > 1:
                raise StageError(f"{path.name}: arrays have different sample counts {counts}")
            arrays = {
                m.key: _read(archive, m, settings, path.name)
                for m in members
                if m.key != settings.labels
            }

        axes = settings.batch_axes or {}
        for i in range(min((len(a) for a in arrays.values()), default=0)):
            yield {key: _with_batch_axis(a[i], axes.get(key, 0)) for key, a in arrays.items()}

    def labels_of(self, settings: NpzSettings) -> Any:
        if not settings.labels:
            return None
        path = settings.path
        with _open_npz(path) as archive:
            members = {m.key: m for m in _members(archive, path.name)}
            if settings.labels not in members:
                raise StageError(
                    f"{path.name} has no array '{settings.labels}' (it has {', '.join(members)})"
                )
            return _read(archive, members[settings.labels], settings, path.name)


def _open_npz(path: Path) -> zipfile.ZipFile:
    """The archive, after its first bytes show it is a zip: numpy would otherwise try a pickle or a .npy."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(8)
        if start[:4] not in ZIP_MAGIC:
            raise StageError(
                f"{path.name} is not an .npz file (a zip of .npy arrays): {_what_it_is(start)} — {FIX}"
            )
        return zipfile.ZipFile(path)
    except _READ_ERRORS as exc:
        raise StageError(f"cannot read {path.name} as an .npz of numeric arrays: {exc}") from exc


def _what_it_is(start: bytes) -> str:
    if start.startswith(b"\x93NUMPY"):
        return "it holds one .npy array"
    if start[:1] == b"\x80":
        return "it looks like a Python pickle, which the loader never unpickles"
    return f"it starts with {start!r}" if start else "it is empty"


def _members(archive: zipfile.ZipFile, name: str) -> list[_Member]:
    """Every array's name, shape and dtype, from the .npy headers alone."""
    found = []
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            raise StageError(f"{name}: '{info.filename}' is not a .npy array — {FIX}")
        try:
            with archive.open(info) as member:
                shape, fortran, dtype = _header(member)
        except (*_READ_ERRORS, ValueError) as exc:  # ValueError: numpy's "not a .npy header"
            raise StageError(
                f"{name}: '{info.filename}' is not a readable .npy array: {exc}"
            ) from exc
        if dtype.hasobject:
            raise StageError(
                f"{name}: '{info.filename}' holds Python objects ({dtype}), which the loader never "
                "unpickles — store numeric arrays"
            )
        found.append(_Member(info.filename.removesuffix(".npy"), info, shape, fortran, dtype))
    return found


def _header(member: IO[bytes]) -> tuple[tuple[int, ...], bool, Any]:
    """(shape, fortran order, dtype) of a .npy stream, which is left at the first byte of the data."""
    import numpy as np

    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(member)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(member)
    raise ValueError(
        f".npy format version {version[0]}.{version[1]} (this loader reads 1.0 and 2.0)"
    )


def _with_batch_axis(row: Any, axis: int | None) -> Any:
    """One sample's array with its batch axis where `batch_axes` puts it (None: an input not batched)."""
    import numpy as np

    return np.asarray(row) if axis is None else np.expand_dims(row, axis)


def _read(archive: zipfile.ZipFile, member: _Member, settings: NpzSettings, name: str) -> Any:
    """The rows of `member` that `skip` and `limit` ask for (the engine drops the skipped ones), refused before
    allocation if they exceed `max_bytes`."""
    import numpy as np

    limit = settings.limit
    rows = member.rows_to_read(limit + (settings.skip or 0) if limit else None)
    size, bound = member.bytes_for(rows), settings.max_bytes
    if size > bound:
        raise StageError(
            f"{name}: array '{member.key}' is {member.dtype} {list(member.shape)}, {_gib(size)} once "
            f"read, over the loader's bound of {_gib(bound)} (max_bytes) — read fewer samples "
            "with `limit:`, or raise max_bytes if this machine has the memory"
        )
    array = np.empty((rows, *member.shape[1:]), member.dtype, order="F" if member.fortran else "C")
    if size:
        try:
            with archive.open(member.info) as stream:
                _header(stream)
                # The array's own bytes, in the order the file stores them (column-major for a Fortran array).
                _fill(
                    stream,
                    (array.T if member.fortran else array).reshape(-1).view(np.uint8),
                    member,
                    name,
                )
        except _READ_ERRORS as exc:
            raise StageError(f"cannot read array '{member.key}' of {name}: {exc}") from exc
    return array


def _fill(stream: IO[bytes], flat: Any, member: _Member, name: str) -> None:
    """Decompress straight into `flat` (uint8), a chunk at a time: no second copy of the data."""
    if not isinstance(stream, io.BufferedIOBase):  # zipfile's member streams are (ZipExtFile)
        raise TypeError(f"{type(stream).__name__} cannot read into a buffer")
    filled = 0
    while filled < flat.size:
        got = stream.readinto(memoryview(flat[filled : filled + CHUNK]))
        if not got:
            raise StageError(
                f"{name}: array '{member.key}' is truncated: its header says "
                f"{member.dtype} {list(member.shape)}, the file holds less — {FIX}"
            )
        filled += got


def _gib(count: int) -> str:
    return f"{count / (1 << 30):.2f} GiB" if count >= 1 << 28 else f"{count / (1 << 20):.1f} MiB"
