"""What `engine init --target cuda|tensorrt` proposes. On CUDA a transformer's speed comes from fused attention
(transformer_fusion), fp16, and, where the deployment's shapes are fixed, from a specialized model: its dims
fixed and its shape arithmetic folded, so every node runs on the GPU and a CUDA graph can replay it (about 2x
at batch 1 on an H200 in issue 30's measurements). The dynamic-shape path (fusion + fp16) stays beside it for
deployments whose batch or sequence length vary; `pick` measures both. The fixed-shape candidates are written
where the `specialize` stage is installed."""

from __future__ import annotations

from ortflow.engine.contracts.registry import installed_stages
from ortflow.engine.ort.model_facts import ModelFacts
from ortflow.engine.starter.drafts import StageDraft, StageWith, Target
from ortflow.engine.starter.roles import ModelKind, ModelRoles

# benchmark settings for a fixed-shape candidate: one binding on the GPU, timed with and without a CUDA graph
GRAPH_TIMING: StageWith = {"io_binding": True, "cuda_graph": [False, True]}
EAGER_HINT = (
    "Its attention looks like PyTorch's SDPA as the TorchScript exporter writes it (Softmax, then IsNaN/Where), "
    "which no fusion recognises: re-export with eager attention "
    '(AutoModel.from_pretrained(..., attn_implementation="eager")) or with ortflow\'s export stage for fused '
    "attention (about 2x on a GPU)."
)


def attention_note(facts: ModelFacts) -> list[str]:
    """What init says of a model whose attention no fusion will reach (an SDPA export by TorchScript)."""
    return [EAGER_HINT] if facts.count("Softmax") and facts.count("IsNaN") else []


def gpu_stages(roles: ModelRoles, target: Target) -> tuple[list[StageDraft], list[str]]:
    if target == Target.TENSORRT:
        return [
            StageDraft(
                "trt_fp16",
                "tensorrt_engine",
                {"model": "inputs.model"},
                {"fp16": True},
                [
                    "TensorRT fp16 engines, built through ORT's TensorRT provider (skipped without a usable GPU)"
                ],
                optional=True,
            )
        ], ["inputs.model"]
    stages = [_fp16("fp16", "inputs.model", "fp16 for the CUDA provider")]
    if roles.kind != ModelKind.TRANSFORMER:
        return stages, ["inputs.model", "fp16.model"]
    stages += [
        StageDraft(
            "fused",
            "transformer_fusion",
            {"model": "inputs.model"},
            {"model_type": "bert", "use_gpu": True},
            [
                "ORT's transformer fusions for the CUDA kernels: Attention (onnxscript's fusions first where the model",
                "came from torch.onnx's dynamo exporter), SkipLayerNorm, BiasGelu; heads and hidden size detected",
            ],
            optional=True,
        ),
        _fp16(
            "fused_fp16",
            "fused.model",
            "the dynamic-shape path: fused + fp16, for batch and sequence lengths that vary",
        ),
    ]
    candidates = ["inputs.model", "fp16.model", "fused_fp16.model"]
    if "specialize" in installed_stages():
        stages += fixed_shape_stages("fused.model")
        candidates.append("fixed_fp16.model")
    return stages, candidates


def fixed_shape_stages(source: str) -> list[StageDraft]:
    """Specialize the fused model to the data's shapes (fusion first: folding before it breaks the attention
    pattern), then fp16; timed with and without a CUDA graph (GRAPH_TIMING)."""
    return [
        StageDraft(
            "fixed",
            "specialize",
            {"model": source, "data": "datasets.calibration"},
            {"shapes_from_data": True},
            [
                "the fixed-shape path: every input fixed to the data's shape and the shape arithmetic folded, so no",
                "node falls back to the CPU and a CUDA graph can be captured (the benchmark times it with and",
                "without); the fused model is specialized, as folding first would break the attention pattern",
            ],
            optional=True,
        ),
        _fp16(
            "fixed_fp16",
            "fixed.model",
            "fixed shapes + fusion + fp16: the fastest where the shapes never change",
        ),
    ]


def _fp16(name: str, source: str, why: str) -> StageDraft:
    return StageDraft(
        name,
        "convert_float16",
        {"model": source, "data": "datasets.calibration"},
        {"keep_io_types": True},
        [why, "given data, nodes whose values overflow fp16 stay in float32"],
        optional=source != "inputs.model",
    )


def timing_params(candidates: list[str]) -> StageWith:
    """The benchmark settings the candidates need: a CUDA graph axis where a fixed-shape one is among them."""
    return GRAPH_TIMING if "fixed_fp16.model" in candidates else {}
