"""Builds vad-calibration.npz and vad-held-out.npz from arctic_a0007.wav: the streaming feeds of Silero VAD
(16 kHz, 512-sample chunks with the 64 samples before each as context, as silero_vad's OnnxWrapper feeds it),
each with the recurrent state the float model carried into that chunk, and the sample rate, one per chunk.

calibration: the first half of the utterance; held-out: its second half, and the whole utterance with white
noise at 10 dB SNR (seeded). Run: python recipes/data/audio/make_chunks.py (needs silero-vad installed)."""

from __future__ import annotations

import wave
from importlib.metadata import distribution
from pathlib import Path

import numpy as np
import onnxruntime as ort

HERE = Path(__file__).parent
CHUNK, CONTEXT, RATE = 512, 64, 16000


def audio() -> np.ndarray:
    with wave.open(str(HERE / "arctic_a0007.wav")) as w:
        assert w.getframerate() == RATE and w.getnchannels() == 1 and w.getsampwidth() == 2
        return np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768


def streamed(samples: np.ndarray, session: ort.InferenceSession) -> dict[str, np.ndarray]:
    """Every chunk's feed, with the state the float model carried into it."""
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros(CONTEXT, np.float32)
    inputs, states = [], []
    for start in range(0, len(samples) - CHUNK + 1, CHUNK):
        window = np.concatenate([context, samples[start:start + CHUNK]])[None]
        inputs.append(window[0])
        states.append(state[:, 0])
        _, state = session.run(None, {"input": window, "state": state, "sr": np.array(RATE, np.int64)})
        context = window[0, -CONTEXT:]
    count = len(inputs)
    return {"input": np.stack(inputs), "state": np.stack(states), "sr": np.full(count, RATE, np.int64)}


def main() -> None:
    model = Path(distribution("silero-vad").locate_file("silero_vad/data/silero_vad_16k_op15.onnx"))
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    clean = audio()
    half = len(clean) // 2 // CHUNK * CHUNK
    noise = np.random.default_rng(0).standard_normal(len(clean)).astype(np.float32)
    noisy = clean + noise * np.sqrt(np.mean(clean**2) / 10 / np.mean(noise**2))
    np.savez(HERE / "vad-calibration.npz", **streamed(clean[:half], session))
    held = [streamed(clean[half:], session), streamed(noisy, session)]
    np.savez(HERE / "vad-held-out.npz", **{k: np.concatenate([h[k] for h in held]) for k in held[0]})


if __name__ == "__main__":
    main()
