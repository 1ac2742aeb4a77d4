"""images: a folder of pictures, resized, cropped, normalised and laid out as the model's image input wants."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from ortflow.api import (
    LIMIT_PARAM,
    SKIP_PARAM,
    DataProvenance,
    Feed,
    ModelInput,
    SettingsLoader,
    StageError,
    file_param,
)

EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class ImagesSettings:
    """The loader's parameters as validated against its params_schema (`path` resolved; arrays as tuples)."""

    path: Path
    input: str | None = None
    size: tuple[int, int] | None = None
    resize: str = "stretch"
    layout: str = "auto"
    channels: str = "RGB"
    scale: float = 0.00392156862745098
    mean: tuple[float, ...] = (0, 0, 0)
    std: tuple[float, ...] = (1, 1, 1)
    pad_value: int = 114
    pad_position: str = "centre"
    skip_unreadable: bool = False
    skip: int | None = None
    limit: int | None = None


class ImagesLoader(SettingsLoader[ImagesSettings]):
    type = "images"
    provenance = DataProvenance.REAL
    description = (
        "Every image in a folder (sorted by name), as one sample of the model's image input: resized "
        "(stretch, crop or letterbox), scaled, normalised by mean/std, in NCHW or NHWC, RGB or BGR. A model "
        "with an integer (uint8) image input gets the pixels unscaled."
    )
    file_params = ("path",)
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["path"],
        "properties": {
            "path": file_param("the folder of images"),
            "input": {
                "type": "string",
                "description": "the model input to fill (default: the model's only input)",
            },
            "size": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1},
                "minItems": 2,
                "maxItems": 2,
                "description": "[height, width]; default: the model's fixed sizes",
            },
            "resize": {
                "enum": ["stretch", "crop", "letterbox"],
                "default": "stretch",
                "description": "stretch to size; or scale the shorter side then centre-crop; or fit and pad",
            },
            "layout": {
                "enum": ["auto", "NCHW", "NHWC"],
                "default": "auto",
                "description": "auto: from the model's shape",
            },
            "channels": {
                "enum": ["RGB", "BGR", "gray"],
                "default": "RGB",
                "description": "channel order; gray: one channel (luminance), for a 1-channel model",
            },
            "scale": {
                "type": "number",
                "default": 0.00392156862745098,
                "description": "multiply pixel values (default 1/255)",
            },
            "mean": {
                "type": "array",
                "items": {"type": "number"},
                "minItems": 1,
                "maxItems": 3,
                "default": [0, 0, 0],
                "description": "per channel (in `channels` order), subtracted after `scale`: (x * scale - mean) / std; "
                "ImageNet: [0.485, 0.456, 0.406]; one value for all channels (gray: one)",
            },
            "std": {
                "type": "array",
                "items": {"type": "number", "exclusiveMinimum": 0},
                "minItems": 1,
                "maxItems": 3,
                "default": [1, 1, 1],
                "description": "per channel, divides after the mean; ImageNet: [0.229, 0.224, 0.225]",
            },
            "pad_value": {
                "type": "integer",
                "minimum": 0,
                "maximum": 255,
                "default": 114,
                "description": "letterbox: the grey level of the padding (YOLO: 114; some detectors pad with 0)",
            },
            "pad_position": {
                "enum": ["centre", "bottom_right"],
                "default": "centre",
                "description": "letterbox: the image centred, or in the top-left corner with padding at the "
                "bottom and right",
            },
            "skip_unreadable": {
                "type": "boolean",
                "default": False,
                "description": "skip (and count, in a warning) files that are not readable images instead of "
                "failing",
            },
            "skip": SKIP_PARAM,
            "limit": LIMIT_PARAM,
        },
    }

    def env_facts(self) -> tuple[str, ...]:
        return ("pillow",)  # resampling can change between Pillow releases

    settings = ImagesSettings

    def samples(self, settings: ImagesSettings, inputs: list[ModelInput]) -> Iterator[Feed]:
        import numpy as np
        from PIL import Image

        spec = self._input(settings, inputs)
        layout = self._layout(settings.layout, spec)
        height, width = self._size(settings, spec, layout)
        if not Path(settings.path).is_dir():
            raise StageError(f"{settings.path} is not a folder — `path` names a folder of images")
        files = sorted(p for p in Path(settings.path).iterdir() if p.suffix.lower() in EXTENSIONS)
        if not files:
            raise StageError(f"{settings.path} holds no images ({', '.join(EXTENSIONS)})")
        depth = 1 if settings.channels == "gray" else 3
        mean = _per_channel(settings.mean, depth, "mean")
        std = _per_channel(settings.std, depth, "std")
        raw = np.issubdtype(
            np.dtype(spec.dtype), np.integer
        )  # an integer input takes the pixels as they are
        skipped: list[str] = []
        for path in files:
            try:
                pixels = self._resized(path, settings, height, width)
            except StageError:
                if not settings.skip_unreadable:
                    raise
                skipped.append(path.name)
                continue
            if settings.channels == "BGR":
                pixels = pixels[..., ::-1]
            elif settings.channels == "gray":
                pixels = np.asarray(Image.fromarray(pixels).convert("L"))[..., None]
            array = pixels if raw else (pixels.astype(np.float32) * settings.scale - mean) / std
            if layout == "NCHW":
                array = array.transpose(2, 0, 1)
            yield {spec.name: np.ascontiguousarray(array[None]).astype(spec.dtype)}
        if skipped:
            logging.getLogger("ortflow").warning(
                "images: skipped %d unreadable file(s) of %d in %s: %s",
                len(skipped),
                len(files),
                settings.path,
                ", ".join(skipped[:5]),
            )
            if len(skipped) == len(files):
                raise StageError(
                    f"none of the {len(files)} files in {settings.path} is a readable image"
                )

    @staticmethod
    def _input(settings: ImagesSettings, inputs: list[ModelInput]) -> ModelInput:
        if settings.input is not None:
            found = [i for i in inputs if i.name == settings.input]
            if not found:
                raise StageError(
                    f"the model has no input '{settings.input}' (it has {', '.join(i.name for i in inputs)})"
                )
            return found[0]
        if len(inputs) != 1:
            raise StageError(
                f"the model has {len(inputs)} inputs ({', '.join(i.name for i in inputs)}) — say which one"
                " takes the images with `input`, and feed the others with a `python` dataset"
            )
        return inputs[0]

    @staticmethod
    def _layout(layout: str, spec: ModelInput) -> str:
        if len(spec.shape) != 4:
            raise StageError(f"input '{spec.name}' is {spec.describe()}, not a 4-D image batch")
        if layout != "auto":
            return layout
        if spec.shape[1] in (1, 3):
            return "NCHW"
        if spec.shape[3] in (1, 3):
            return "NHWC"
        raise StageError(
            f"cannot tell the layout of '{spec.name}' {spec.describe()} — set `layout: NCHW` or `NHWC`"
        )

    @staticmethod
    def _size(settings: ImagesSettings, spec: ModelInput, layout: str) -> tuple[int, int]:
        if settings.size is not None:
            return settings.size[0], settings.size[1]
        height, width = spec.shape[2:4] if layout == "NCHW" else spec.shape[1:3]
        if isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0:
            return height, width
        raise StageError(
            f"input '{spec.name}' {spec.describe()} has no fixed height and width — set `size: [h, w]`"
        )

    @staticmethod
    def _resized(path: Path, settings: ImagesSettings, height: int, width: int) -> Any:
        import numpy as np
        from PIL import Image

        mode = settings.resize
        try:
            image = Image.open(path).convert("RGB")
        except (OSError, ValueError, Image.DecompressionBombError) as exc:
            raise StageError(
                f"cannot read image {path.name}: {exc} — remove it, or set skip_unreadable: true"
            ) from exc
        if mode == "stretch":
            return np.asarray(image.resize((width, height), Image.Resampling.BILINEAR))
        if mode == "crop":
            ratio = max(width / image.width, height / image.height)
            image = image.resize(
                (round(image.width * ratio), round(image.height * ratio)), Image.Resampling.BILINEAR
            )
            left, top = (image.width - width) // 2, (image.height - height) // 2
            return np.asarray(image.crop((left, top, left + width, top + height)))
        ratio = min(width / image.width, height / image.height)
        image = image.resize(
            (max(1, round(image.width * ratio)), max(1, round(image.height * ratio))),
            Image.Resampling.BILINEAR,
        )
        canvas = Image.new("RGB", (width, height), (settings.pad_value,) * 3)
        corner = (
            (0, 0)
            if settings.pad_position == "bottom_right"
            else ((width - image.width) // 2, (height - image.height) // 2)
        )
        canvas.paste(image, corner)
        return np.asarray(canvas)


def _per_channel(values: Sequence[float], width: int, name: str) -> Any:
    """`mean` or `std` as one value a channel: one value serves all; three for one gray channel is an error."""
    import numpy as np

    if len(values) not in (1, width) and not (width == 1 and len(set(values)) == 1):
        raise StageError(
            f"`{name}` has {len(values)} values for {width} channel(s) — give {width} or one"
        )
    return np.resize(np.asarray(values, dtype=np.float32), width)
