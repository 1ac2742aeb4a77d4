"""Attention fusion for transformer_fusion on what torch.onnx's dynamo exporter writes. ORT's own optimizer
(onnxruntime.transformers) matches the attention subgraph the TorchScript exporter writes for eager attention;
the dynamo exporter (the export stage's default) writes another one, for eager and SDPA attention alike, which
onnxscript's rewriter for ORT (onnxscript.rewriter.ort_fusions, kept by the exporter's authors) fuses into
Attention. Where neither fuses it, the stage says why and how to re-export, instead of a fused model that is
quietly half as fast on a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Fused attention ops either optimizer writes (com.microsoft contrib ops)
ATTENTION_OPS = ("Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention")
EAGER_HINT = (
    'export it with eager attention: AutoModel.from_pretrained(..., attn_implementation="eager") or '
    'config._attn_implementation = "eager" before torch.onnx.export (ortflow\'s export stage does this)'
)


def attention_fused(stats: dict[str, int]) -> int:
    """How many fused attention nodes the optimizer's statistics count."""
    return sum(stats.get(op, 0) for op in ATTENTION_OPS)


def onnxscript_fusions(source: Path, target: Path) -> dict[str, int] | str:
    """onnxscript's ORT fusions on `source`, written to `target`: the fusions it applied (name -> count), or why
    it could not run."""
    try:
        import onnx_ir as ir
        from onnxscript.rewriter.ort_fusions import optimize_for_ort
    except ImportError as exc:
        return f"onnxscript is not installed ({exc.name}): pip install onnxscript"
    model = ir.load(str(source))
    try:
        model, counts = optimize_for_ort(model)
    except Exception as exc:  # noqa: BLE001 - boundary: a third-party rewriter on any user graph; ORT's fusion result stands
        return f"onnxscript's fusions failed: {type(exc).__name__}: {str(exc)[:200]}"
    # a model with external data: its tensors go to one data file beside `target` (left as references, they
    # would name the source's data file relative to a folder that does not hold it)
    external = any(
        init.const_value is not None and isinstance(init.const_value, ir.ExternalTensor)
        for init in model.graph.initializers.values()
    )
    ir.save(model, str(target), external_data=f"{target.name}.data" if external else None)
    return {name: count for name, count in sorted(counts.items()) if count}


def unfused_attention(graph: Any) -> str | None:
    """Why attention is left unfused in an onnx GraphProto, and what to do; None where no Softmax remains (no
    attention, or all of it fused). PyTorch's scaled_dot_product_attention as the TorchScript exporter writes it
    shows as a Softmax whose output goes through IsNaN/Where (rows with every position masked)."""
    softmax_outputs = {n.output[0] for n in graph.node if n.op_type == "Softmax"}
    if not softmax_outputs:
        return None
    sdpa = any(n.op_type == "IsNaN" and n.input[0] in softmax_outputs for n in graph.node)
    why = (
        "it is PyTorch's scaled_dot_product_attention (SDPA) as the TorchScript exporter writes it (Softmax, "
        "then IsNaN/Where), a pattern neither ORT's fusion nor onnxscript's recognises"
        if sdpa
        else "its pattern is not one ORT's fusion or onnxscript's recognises (check model_type, num_heads, hidden_size)"
    )
    return (
        f"attention not fused ({len(softmax_outputs)} Softmax left): {why}; on a GPU fused attention "
        f"about halves the latency — {EAGER_HINT}, or export with torch.onnx's dynamo exporter"
    )
