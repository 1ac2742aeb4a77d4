"""transformer_fusion: ONNX Runtime's transformer optimizer (Attention, LayerNorm, Gelu, embedding fusions)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ortflow.api import (
    ArtifactKind,
    Json,
    Port,
    SettingsStage,
    StageContext,
    StageError,
    StageResult,
)
from ortflow.api import onnx as onnx_model
from ortflow.stages.graphs.attention_fusion import (
    attention_fused,
    onnxscript_fusions,
    unfused_attention,
)

MODEL_TYPES = [
    "bart",
    "bert",
    "bert_tf",
    "bert_keras",
    "clip",
    "conformer",
    "gpt2",
    "gpt2_tf",
    "gpt_neox",
    "mmdit",
    "phi",
    "qwen3",
    "sam2",
    "swin",
    "tnlr",
    "t5",
    "unet",
    "vae",
    "vit",
]
# onnxruntime.transformers.fusion_options.AttentionMaskFormat, by readable names.
MASK_FORMATS = {"mask_index_end": 0, "mask_index_end_start": 1, "raw": 2, "no_mask": 3}
# Boolean FusionOptions fields a user may set; unset ones keep ORT's default for the model type.
FUSION_SWITCHES = [
    "enable_gelu",
    "enable_layer_norm",
    "enable_attention",
    "use_multi_head_attention",
    "disable_multi_head_attention_bias",
    "enable_skip_layer_norm",
    "enable_embed_layer_norm",
    "enable_bias_skip_layer_norm",
    "enable_bias_gelu",
    "enable_gelu_approximation",
    "enable_gemm_fast_gelu",
    "enable_rotary_embeddings",
    "enable_qordered_matmul",
    "enable_shape_inference",
    "group_norm_channels_last",
]
# Fusions that show the optimizer recognised the architecture; zero of all of them means it did not.
CORE_FUSIONS = (
    "Attention",
    "MultiHeadAttention",
    "SkipLayerNormalization",
    "LayerNormalization",
    "EmbedLayerNormalization",
    "SkipSimplifiedLayerNormalization",
    "SimplifiedLayerNormalization",
)


@dataclass(frozen=True)
class FusionSettings:
    """TransformerFusion's parameters (its params_schema, read typed: ortflow.api.settings_problems checks them)."""

    model_type: str = "bert"  # one of MODEL_TYPES
    num_heads: int = 0
    hidden_size: int = 0
    opt_level: int = 0  # 0, 1, 2 or 99
    use_gpu: bool = False
    float16: bool = False
    keep_io_types: bool = True
    onnxscript: bool = True
    fusion: Mapping[str, bool | str] = field(default_factory=dict)  # FusionOptions switches


class TransformerFusion(SettingsStage[FusionSettings]):
    type = "transformer_fusion"
    version = "2"
    description = (
        "Fuse transformer subgraphs (Attention, SkipLayerNormalization, BiasGelu, EmbedLayerNormalization, ...) "
        "with onnxruntime.transformers.optimizer. Where it fuses no attention (torch.onnx's dynamo exporter "
        "writes a pattern it does not match), onnxscript's ORT fusions run first and ORT's after them. Runs the "
        "fusions in Python (opt_level 0): ORT's own graph optimizations belong in a graph_optimization stage "
        "after this one. Fails when nothing fused; says when attention stayed unfused, why, and how to re-export."
    )
    inputs = (Port("model", ArtifactKind.ONNX_MODEL, "an fp32 transformer model"),)
    outputs = (
        Port("model", ArtifactKind.ONNX_MODEL, "the fused model", filename="model.onnx"),
        Port(
            "metrics",
            ArtifactKind.METRICS,
            "fused operator counts and node counts",
            filename="metrics.json",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "model_type": {
                "enum": [*MODEL_TYPES],
                "default": "bert",
                "description": "architecture family",
            },
            "num_heads": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "attention heads (0: detect)",
            },
            "hidden_size": {
                "type": "integer",
                "minimum": 0,
                "default": 0,
                "description": "hidden size (0: detect)",
            },
            "opt_level": {
                "enum": [0, 1, 2, 99],
                "default": 0,
                "description": "ORT optimization inside the optimizer; above 0 needs PyTorch installed (ORT imports it)",
            },
            "use_gpu": {
                "type": "boolean",
                "default": False,
                "description": "fuse for the CUDA provider's kernels",
            },
            "float16": {
                "type": "boolean",
                "default": False,
                "description": "convert the fused model to fp16 (for GPUs)",
            },
            "keep_io_types": {
                "type": "boolean",
                "default": True,
                "description": "with float16: keep fp32 inputs and outputs",
            },
            "onnxscript": {
                "type": "boolean",
                "default": True,
                "description": "where ORT's optimizer fuses no attention, run onnxscript's ORT fusions first (they "
                "match torch.onnx's dynamo exports, eager and SDPA attention); needs onnxscript",
            },
            "fusion": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    **{name: {"type": "boolean"} for name in FUSION_SWITCHES},
                    "attention_mask_format": {"enum": list(MASK_FORMATS)},
                },
                "default": {},
                "description": "FusionOptions settings, e.g. {enable_gelu_approximation: true}; unset ones keep ORT's default",
            },
        },
    }

    settings = FusionSettings

    def problems(self, settings: FusionSettings) -> list[str]:
        heads, hidden = settings.num_heads, settings.hidden_size
        if heads and hidden and hidden % heads:
            return [
                f"hidden_size {hidden} is not divisible by num_heads {heads} — check the model's config"
            ]
        if (heads == 0) != (hidden == 0):
            return ["give both num_heads and hidden_size, or neither (0: detect both)"]
        return []

    def facts(self, settings: FusionSettings) -> tuple[str, ...]:
        # opt_level 99 lets ORT apply layout optimizations for this machine's CPU
        return (
            ("onnxruntime", "onnx", "cpu") if settings.opt_level == 99 else ("onnxruntime", "onnx")
        )

    def run(self, ctx: StageContext) -> StageResult:
        params = ctx.settings(FusionSettings)
        _require_torch(params.opt_level)
        # a private copy: onnx refuses external data in a file with other hard links (the store links its files into out/)
        source = onnx_model.private_model(ctx.path("model"), ctx.scratch)
        # a clear error for a broken file before the optimizer's own
        onnx_model.load_for_ort(source)
        fused, stats, route = _fuse_reaching_attention(source, params, ctx)
        if not any(stats.get(op) for op in CORE_FUSIONS):
            raise StageError(
                f"nothing fused for model_type {params.model_type} (fused: {stats or 'none'}) — usually a wrong "
                "num_heads/hidden_size, a different model_type, or an export the optimizer does not recognise "
                "(it matches the legacy exporter's eager-attention patterns)"
            )
        if params.float16:
            fused.convert_float_to_float16(keep_io_types=params.keep_io_types)
        large = onnx_model.needs_external_data(onnx_model.serialized_size(fused.model))
        target = onnx_model.output_file(ctx.output_path("model"), large)
        fused.save_model_to_file(str(target), use_external_data_format=large)
        onnx_model.cap_ir_version(target)
        onnx_model.check(target)
        complete = (
            bool(fused.is_fully_optimized()) if hasattr(fused, "is_fully_optimized") else None
        )
        unfused = unfused_attention(fused.model.graph)
        fused_counts: dict[str, Json] = dict(sorted(stats.items()))
        metrics = {
            "model_type": params.model_type,
            "fused_by": route,
            "fused": fused_counts,
            "attention_not_fused": unfused,
            "fully_optimized": complete,
            "nodes_before": sum(onnx_model.op_counts(source).values()),
            "nodes_after": sum(onnx_model.op_counts(target).values()),
            "bytes_after": onnx_model.total_size(target),
        }
        ctx.output_path("metrics").write_text(json.dumps(metrics, indent=2), encoding="utf-8")
        summary = ", ".join(f"{op} {n}" for op, n in sorted(stats.items()))
        if complete is False:
            summary += " (not fully optimized: some subgraphs were not recognised)"
        if unfused:
            summary += f"; {unfused}"
            ctx.log(f"{ctx.stage_name}: {unfused}")
        return StageResult(
            summary=summary, metrics={"fused": fused_counts, "fully_optimized": complete}
        )


def _require_torch(opt_level: int) -> None:
    """ORT's optimizer imports PyTorch for opt_level >= 1: say so, and what to do instead, when it is missing."""
    if opt_level > 0:
        try:
            import torch  # noqa: F401  (ORT's optimizer imports it for opt_level >= 1)
        except ImportError:
            raise StageError(
                "opt_level above 0 needs PyTorch (onnxruntime.transformers imports it) — use "
                "opt_level 0 and put a graph_optimization stage after this one"
            ) from None


def _fuse_reaching_attention(
    source: Path, params: FusionSettings, ctx: StageContext
) -> tuple[Any, dict[str, int], str]:
    """ORT's optimizer; where it fused no attention but Softmax remains, onnxscript's ORT fusions first and
    ORT's on their result, kept if that fused attention. Returns the fused OnnxModel, its fused-op counts and
    which fusions made it ("onnxruntime" or "onnxscript+onnxruntime")."""
    fused = _fuse(source, params)
    stats = _statistics(fused)
    if attention_fused(stats) or not params.onnxscript or not unfused_attention(fused.model.graph):
        return fused, stats, "onnxruntime"
    rewritten = ctx.scratch / "onnxscript-fused.onnx"
    applied = onnxscript_fusions(source, rewritten)
    if isinstance(applied, str):
        ctx.log(f"{ctx.stage_name}: {applied}")
        return fused, stats, "onnxruntime"
    try:
        again = _fuse(rewritten, params)
    except (
        StageError
    ) as exc:  # the second route is an attempt: ORT's own result stands, and the log says why
        ctx.log(f"{ctx.stage_name}: after onnxscript's fusions, {exc}")
        return fused, stats, "onnxruntime"
    again_stats = _statistics(again)
    if not attention_fused(again_stats):
        return fused, stats, "onnxruntime"
    return again, again_stats, "onnxscript+onnxruntime"


def _statistics(fused: Any) -> dict[str, int]:
    return {k: v for k, v in fused.get_fused_operator_statistics().items() if v}


def _fuse(source: Path, params: FusionSettings) -> Any:
    """Run onnxruntime.transformers' optimizer on `source` with the fusion settings given (unset ones keep
    ORT's defaults). Returns its OnnxModel, fused in memory."""
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions(params.model_type)
    for name, value in params.fusion.items():
        is_format = name == "attention_mask_format" and isinstance(value, str)
        setattr(options, name, MASK_FORMATS[str(value)] if is_format else value)
    try:
        return optimizer.optimize_model(
            str(source),
            model_type=params.model_type,
            num_heads=params.num_heads,
            hidden_size=params.hidden_size,
            optimization_options=options,
            opt_level=params.opt_level,
            use_gpu=params.use_gpu,
        )
    except Exception as exc:
        raise StageError(f"the transformer optimizer failed: {type(exc).__name__}: {exc}") from exc
