"""Generate the document-like images the CNN recipe calibrates and validates an OCR text detector on:
lines of printed text in varied sizes, colours and positions. Deterministic (seeded); the PNGs are
committed, so recipes need only Pillow, which ortflow already depends on.

    python recipes/data/make_images.py
"""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).parent
SPLITS = {"calibration": 16, "validation": 8}


def main() -> None:
    rng = random.Random(20261122)
    sentences = (HERE / "calibration.txt").read_text(encoding="utf-8").splitlines()
    for split, count in SPLITS.items():
        folder = HERE / "images" / split
        folder.mkdir(parents=True, exist_ok=True)
        for index in range(count):
            width, height = rng.choice([(640, 480), (800, 600), (480, 640), (720, 720)])
            shade = rng.randint(200, 255)
            image = Image.new("RGB", (width, height), (shade, shade - rng.randint(0, 20), shade - rng.randint(0, 30)))
            draw = ImageDraw.Draw(image)
            y = rng.randint(10, 40)
            while y < height - 40:
                size = rng.randint(14, 36)
                font = ImageFont.load_default(size=size)
                text = rng.choice(sentences)[: rng.randint(12, 60)]
                ink = tuple(rng.randint(0, 90) for _ in range(3))
                draw.text((rng.randint(10, 60), y), text, fill=ink, font=font)
                y += size + rng.randint(8, 40)
            image.save(folder / f"{split}-{index:02d}.png", optimize=True)
        print(f"{folder}: {count} images")


if __name__ == "__main__":
    main()
