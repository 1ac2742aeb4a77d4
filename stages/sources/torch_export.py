"""PyTorch models for the export stage: a local Hugging Face model folder (config, safetensors, tokenizer) or a
function in a Python file returning (model, example inputs), brought to one shape: a module whose forward
takes named tensors in a fixed order, the example inputs in that order, and the output names."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ortflow.api import StageError

TORCH_EXTRA = (
    'pip install "ortflow[torch]" (PyTorch, transformers and onnxscript; for a CPU-only PyTorch, install torch '
    "from PyTorch's CPU wheel index first)"
)
TOKEN_INPUTS = (
    "input_ids",
    "attention_mask",
    "token_type_ids",
)  # what Hugging Face tokenizers return, in BERT's order


@dataclass
class Exportable:
    module: Any  # torch.nn.Module, in eval mode
    input_names: list[str]
    examples: tuple[Any, ...]  # one tensor per input name
    output_names: list[str]
    dynamic_axes: dict[str, dict[int, str]]


def missing_torch() -> str | None:
    """What to install when PyTorch is not importable (checked before any stage runs)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (
        ValueError
    ):  # sys.modules["torch"] is None: importing it is blocked, as if it were not installed
        spec = None
    if spec is None:
        return f"the export stage needs PyTorch, which is not installed — {TORCH_EXTRA}"
    return None


def _hf_wrapper(model: Any, outputs: list[str]) -> Any:
    import torch

    class HuggingFaceOutputs(torch.nn.Module):
        """Named tensors in, the chosen fields of the model's output (a ModelOutput) out, as a tuple."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: Any, attention_mask: Any = None, token_type_ids: Any = None
        ) -> tuple[Any, ...]:
            found = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return tuple(found[name] for name in outputs)

    return HuggingFaceOutputs().eval()


def from_hf_folder(folder: Path, texts: list[str], outputs: list[str]) -> Exportable:
    """AutoModel (eager attention) and AutoTokenizer from a local folder only (never a hub), the example a batch of
    `texts`."""
    try:
        from transformers import AutoModel, AutoTokenizer
    except ImportError as exc:
        raise StageError(
            f"exporting a Hugging Face folder needs transformers ({exc.name} is missing) — {TORCH_EXTRA}"
        ) from exc
    if not (folder / "config.json").is_file():
        raise StageError(
            f"{folder}: no config.json — give a Hugging Face model folder (config.json, model.safetensors, tokenizer)"
        )
    tokenizer = AutoTokenizer.from_pretrained(
        folder, local_files_only=True, trust_remote_code=False
    )
    # eager attention: the explicit MatMul/Softmax pattern transformer_fusion fuses into Attention from either
    # exporter (transformers' default, SDPA, exported by TorchScript matches no fusion)
    model = AutoModel.from_pretrained(
        folder, local_files_only=True, trust_remote_code=False, attn_implementation="eager"
    ).eval()
    encoded = tokenizer(texts, return_tensors="pt", padding=True)
    names = [n for n in TOKEN_INPUTS if n in encoded]
    extra = sorted(set(encoded) - set(TOKEN_INPUTS))
    if extra:
        raise StageError(
            f"{folder}: the tokenizer also returns {', '.join(extra)}, which the export does not feed — "
            "export it with a `source` .py file and `function` instead"
        )
    import torch

    with torch.no_grad():
        produced = model(**{n: encoded[n] for n in names})
    unknown = [o for o in outputs if o not in produced]
    if unknown:
        raise StageError(
            f"the model has no output {', '.join(unknown)}; it returns {', '.join(produced.keys())} — set `outputs`"
        )
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    for name in outputs:
        axes[name] = {0: "batch", 1: "sequence"} if produced[name].dim() == 3 else {0: "batch"}
    return Exportable(
        _hf_wrapper(model, outputs), names, tuple(encoded[n] for n in names), list(outputs), axes
    )


def from_function(
    path: Path,
    function: str,
    input_names: list[str],
    output_names: list[str],
    dynamic_axes: dict[str, dict[str, str]],
) -> Exportable:
    """`function()` from the Python file at `path` returns (model, example inputs): a dict of named tensors, a
    tuple of tensors, or one tensor. Without `dynamic_axes`, axis 0 of every input and output is `batch`."""
    spec = importlib.util.spec_from_file_location(f"ortflow_export_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise StageError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    if not callable(getattr(module, function, None)):
        raise StageError(
            f"{path.name}: no function '{function}' — set `function` to the one returning (model, example inputs)"
        )
    model, examples = getattr(module, function)()
    if isinstance(examples, dict):
        input_names = input_names or list(examples)
        examples = tuple(examples[n] for n in input_names)
    elif not isinstance(examples, (tuple, list)):
        examples = (examples,)
    input_names = input_names or [f"input_{i}" for i in range(len(examples))]
    if len(input_names) != len(examples):
        raise StageError(
            f"{path.name}:{function}: {len(examples)} example inputs but {len(input_names)} input_names"
        )
    import torch

    with torch.no_grad():
        produced = model.eval()(*examples)
    count = len(produced) if isinstance(produced, (tuple, list)) else 1
    output_names = output_names or (
        ["output"] if count == 1 else [f"output_{i}" for i in range(count)]
    )
    axes = (
        {
            name: {int(axis): label for axis, label in spec_.items()}
            for name, spec_ in dynamic_axes.items()
        }
        if dynamic_axes
        else {name: {0: "batch"} for name in [*input_names, *output_names]}
    )
    return Exportable(model.eval(), list(input_names), tuple(examples), list(output_names), axes)
