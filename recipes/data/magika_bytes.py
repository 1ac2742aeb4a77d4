"""magika's byte features, computed as magika 1.0.3 does (Magika._extract_features_from_seekable, v3 models):
the first and last 1024 bytes after stripping whitespace, padded with token 256. `feeds` is the `python`
dataset of recipes/classifier-cpu-int8.yaml: one feed per file of the folder it is given as `data`."""
from pathlib import Path

import numpy as np

WHITESPACE = b" \t\n\r\x0b\x0c"


def features(path, beg=1024, end=1024, block=4096, padding=256):
    data = Path(path).read_bytes()
    head = data[:block].lstrip(WHITESPACE)[:beg]
    tail = data[-block:].rstrip(WHITESPACE)[-end:] if data else b""
    first = list(head) + [padding] * (beg - len(head))
    last = [padding] * (end - len(tail)) + list(tail)
    return np.array([first + last], dtype=np.int32)


def feeds(inputs, data, pattern="*"):
    for path in sorted(Path(data).rglob(pattern)):
        if path.is_file() and path.stat().st_size >= 8:
            yield {"bytes": features(path)}
