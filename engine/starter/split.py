"""How `engine init` cuts a held-out set from the user's `--data`: the first samples calibrate, the last ones
check accuracy, so a verdict never rests on the samples the quantizer was tuned on. Both datasets name the same
file or folder; `limit: N` and `skip: N` (applied by the engine to every loader) keep them apart."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from ortflow.engine.leaves.errors import OrtflowError

HELD_OUT_MOST = (
    16  # samples the accuracy check uses (validate_accuracy's `samples` in init's recipes)
)
HELD_OUT_LEAST = (
    4  # below this many held-out samples a split says too little: the data is shared, and said so
)
IMAGE_EXTENSIONS = (
    ".jpg",
    ".jpeg",
    ".png",
    ".bmp",
    ".webp",
    ".tif",
    ".tiff",
)  # the images loader's


@dataclass(frozen=True)
class Split:
    """`calibration` samples first, then `held_out` ones; held_out 0: too few samples, both use them all."""

    total: int
    calibration: int
    held_out: int

    def note(self, source: str) -> str:
        if not self.held_out:
            return (
                f"{source} holds {self.total} samples, too few to split: the accuracy check reuses the calibration "
                f"samples (its verdict says so); give at least {2 * HELD_OUT_LEAST} for a held-out check"
            )
        return (
            f"the first {self.calibration} of {source}'s {self.total} samples calibrate (limit), the last "
            f"{self.held_out} check accuracy (skip): a verdict on samples the quantizer never saw"
        )


def split(total: int) -> Split:
    held = min(total // 2, HELD_OUT_MOST)
    if held < HELD_OUT_LEAST:
        return Split(total, total, 0)
    return Split(total, total - held, held)


def count_samples(data: Path) -> int:
    """Samples in a folder of images, a .txt/.jsonl (non-empty lines) or an .npz (rows of its first array)."""
    if data.is_dir():
        return sum(1 for p in data.iterdir() if p.suffix.lower() in IMAGE_EXTENSIONS)
    if data.suffix.lower() == ".npz":
        return _npz_rows(data)
    with open(data, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.strip())


def _npz_rows(path: Path) -> int:
    """The first axis of the archive's first array, from its .npy header alone."""
    from numpy.lib import format as npy

    try:
        with zipfile.ZipFile(path) as archive, archive.open(archive.infolist()[0]) as member:
            version = npy.read_magic(member)
            read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
            shape = read(member)[0]
    except (OSError, zipfile.BadZipFile, IndexError, ValueError) as exc:
        raise OrtflowError(
            f"--data {path}: not a readable .npz of arrays ({exc}) — give an .npz saved by numpy.savez"
        ) from exc
    return int(shape[0]) if shape else 1
