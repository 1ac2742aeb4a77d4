"""The pixel preprocessing `engine init` assumes for an image input, and how a user corrects it in one flag.

A model trained on ImageNet-normalised pixels and fed [0, 1] ones still runs, so nothing downstream notices:
calibration ranges and accuracy are then measured on inputs the model never sees in use. So init looks at the
model's first nodes: a Sub/Div/Mul/Add by constants (or a BatchNormalization) before the first Conv/MatMul means
the model normalises its input itself; otherwise the pixels' scaling is a guess, said in the recipe's comment and
in init's and optimize's closing lines, with `--preprocess NAME` or `--mean/--std` to set it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict

from ortflow.engine.leaves.errors import OrtflowError

# mean and std on pixels scaled to [0, 1] (x / 255), per RGB channel: the images loader's `mean` and `std`
PRESETS: dict[str, tuple[tuple[float, ...], tuple[float, ...], str]] = {
    "zero-one": (
        (0.0, 0.0, 0.0),
        (1.0, 1.0, 1.0),
        "pixels in [0, 1], no mean/std",
    ),  # YOLO detectors, many exports
    "minus-one-one": (
        (0.5, 0.5, 0.5),
        (0.5, 0.5, 0.5),
        "pixels in [-1, 1], (x - 0.5) / 0.5",
    ),  # Inception, PaddleOCR
    "imagenet": (
        (0.485, 0.456, 0.406),
        (0.229, 0.224, 0.225),
        "ImageNet's mean/std",
    ),  # torchvision, timm
    "clip": (
        (0.48145466, 0.4578275, 0.40821073),
        (0.26862954, 0.26130258, 0.27577711),
        "CLIP's mean/std",
    ),
}


class PixelWith(TypedDict, total=False):
    """The images loader's pixel parameters as init writes them into a recipe's `with:` (each left out at the
    loader's default), a type of their own so that the dataset's block (engine.starter.data.LoaderWith) takes
    them by name."""

    channels: str
    scale: int
    mean: list[float]
    std: list[float]


PRESET_HELP = "; ".join(f"{name}: {why}" for name, (_, _, why) in PRESETS.items())
NORMALISING = {"Sub", "Div", "Mul", "Add", "BatchNormalization"}
WEIGHTED = {
    "Conv",
    "ConvTranspose",
    "MatMul",
    "Gemm",
    "ConvInteger",
    "MatMulInteger",
    "QLinearConv",
    "QLinearMatMul",
}
PASS_THROUGH = {
    "Transpose",
    "Cast",
    "Identity",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Resize",
    "Pad",
    "Slice",
    "Split",
    "Flatten",
    "Concat",  # YOLOX's Focus: four Slices of the image joined, then a Conv
}


@dataclass(frozen=True)
class Preprocessing:
    """Pixels scaled to [0, 1], then (x - mean) / std per channel; `given` when the user said so."""

    mean: tuple[float, ...] = PRESETS["zero-one"][0]
    std: tuple[float, ...] = PRESETS["zero-one"][1]
    name: str | None = "zero-one"  # a preset's name, or None for values given with --mean/--std
    given: bool = False
    channels: str = "RGB"  # RGB, BGR or gray (--channels)
    pixels: str = (
        "0-1"  # 0-1: x / 255 before mean/std; 0-255: the pixel values as they are (--pixels)
    )

    def describe(self) -> str:
        said = (
            f"{PRESETS[self.name][2]} ({self.name})"
            if self.name is not None
            else f"(x / {'255' if self.pixels == '0-1' else '1'} - mean) / std, mean {list(self.mean)}, "
            f"std {list(self.std)}"
        )
        if self.pixels == "0-255" and self.name == "zero-one":
            said = "pixels in [0, 255], no mean/std"
        return said + ("" if self.channels == "RGB" else f", {self.channels} channels")

    def write_params(self, block: PixelWith) -> None:
        """The images loader's parameters, set in its `with:` block after the keys it holds (none for the
        loader's own default, RGB [0, 1] with no mean/std)."""
        if self.channels != "RGB":
            block["channels"] = self.channels
        if self.pixels == "0-255":
            block["scale"] = 1
        width = 1 if self.channels == "gray" else 3
        if set(self.mean) != {0.0} or set(self.std) != {1.0}:
            block["mean"] = list(self.mean[:width])
            block["std"] = list(self.std[:width])

    def value_range(self) -> list[float]:
        """Where the pixels land once normalised: the range of random image feeds."""
        top = 1 if self.pixels == "0-1" else 255
        low = min((0 - m) / s for m, s in zip(self.mean, self.std, strict=True))
        high = max((top - m) / s for m, s in zip(self.mean, self.std, strict=True))
        return [round(low, 4), round(high, 4)]


def from_flags(
    preset: str | None,
    mean: list[float] | None,
    std: list[float] | None,
    channels: str | None = None,
    pixels: str | None = None,
) -> Preprocessing | None:
    """--preprocess NAME, then --mean/--std (three values, one a channel, or one for all three) over it;
    --channels (RGB, BGR, gray) and --pixels (0-1, 0-255) beside them."""
    if preset is None and mean is None and std is None and channels is None and pixels is None:
        return None
    chosen = _from_flags(preset, mean, std)
    return replace(chosen, channels=channels or "RGB", pixels=pixels or "0-1")


def _from_flags(
    preset: str | None, mean: list[float] | None, std: list[float] | None
) -> Preprocessing:
    if preset is not None and preset not in PRESETS:
        raise OrtflowError(
            f"--preprocess {preset}: not a preset — choose one of {', '.join(PRESETS)}, or give --mean/--std"
        )
    base = PRESETS[preset or "zero-one"]

    def three(
        flag: str, values: list[float] | None, default: tuple[float, ...]
    ) -> tuple[float, ...]:
        if values is None:
            return default
        if len(values) not in (1, 3):
            raise OrtflowError(
                f"{flag}: give three values (one a channel, in --channels order) or one for all channels, "
                f"not {len(values)}"
            )
        if flag == "--std" and any(v <= 0 for v in values):
            raise OrtflowError(f"--std {' '.join(map(str, values))}: every std must be above 0")
        return tuple(float(v) for v in (values * 3 if len(values) == 1 else values))

    chosen_mean, chosen_std = three("--mean", mean, base[0]), three("--std", std, base[1])
    named = preset or "zero-one"
    name = named if (chosen_mean, chosen_std) == base[:2] else None
    return Preprocessing(chosen_mean, chosen_std, name, given=True)


@dataclass(frozen=True)
class FirstNodes:
    """What the image input meets first: a normalising op by constants (`normalises`), a weighted op, or neither."""

    normalises: bool
    said: str  # e.g. "Sub by a constant, then Div", "Conv"


def _constant_names(graph: Any) -> set[str]:
    names = {t.name for t in graph.initializer}
    names.update(o for n in graph.node if n.op_type == "Constant" for o in n.output)
    return names


def first_nodes(model: Path, input_name: str) -> FirstNodes:
    """The ops the image input reaches first, past layout ops (Transpose, Cast, Resize, ...)."""
    from ortflow.engine.ort.onnx_model import load_graph

    graph = load_graph(model).graph
    constants = _constant_names(graph)
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    frontier, seen = [input_name], set()
    while frontier:
        name = frontier.pop(0)
        for node in consumers.get(name, []):
            if id(node) in seen:
                continue
            seen.add(id(node))
            others = [i for i in node.input if i and i != name]
            if node.op_type in NORMALISING and others and all(i in constants for i in others):
                return FirstNodes(True, f"{node.op_type} by a constant")
            if node.op_type in WEIGHTED:
                return FirstNodes(False, node.op_type)
            if node.op_type in PASS_THROUGH:
                frontier.extend(node.output)
    return FirstNodes(False, "no Conv, MatMul or normalising op near the input")


def assumed_note(first: FirstNodes, chosen: Preprocessing) -> str:
    """One line for the recipe's comment and the closing line: what the pixels are, and on what grounds."""
    if chosen.given:
        return f"preprocessing: {chosen.describe()}, as given" + (
            f" (the model's first op on the image is {first.said}, not a normalisation)"
            if not first.normalises
            else ""
        )
    if first.normalises:
        return (
            f"preprocessing: pixels in [0, 1]; the model normalises them itself (its first op on the image is "
            f"{first.said}), so no mean/std is applied"
        )
    return (
        f"preprocessing assumed: {chosen.describe()} — the model's first op on the image is {first.said}, not a "
        "normalisation; if it was trained on other pixels, say so with --preprocess "
        f"{'|'.join(PRESETS)} or --mean R G B --std R G B, --channels BGR|gray, --pixels 0-255"
    )
