"""validate_accuracy's parameters: what to compare, how, and the gates (its `params_schema`; quantize_search
fills its `accuracy` parameter's defaults from it)."""

from __future__ import annotations

from ortflow.api import JsonObject
from ortflow.stages.measurement.output_comparison import SLICE

PARAMS_SCHEMA: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "samples": {
            "type": "integer",
            "minimum": 1,
            "default": 100,
            "description": "at most this many feeds",
        },
        "outputs": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "output names to compare (default: all)",
        },
        "slices": {
            "type": "object",
            "additionalProperties": {"type": "string", "pattern": SLICE.pattern},
            "default": {},
            "description": "per output, a numpy slice of it to compare, e.g. {output0: '[..., 4:]'}",
        },
        "pooling": {
            "enum": ["none", "mean", "masked_mean", "first"],
            "default": "none",
            "description": "reduce [batch, tokens, hidden] outputs before cosine: mean, attention-masked mean, "
            "or the first token",
        },
        "mask_input": {
            "type": "string",
            "default": "attention_mask",
            "description": "the input masked_mean uses",
        },
        "top_k": {
            "type": "integer",
            "minimum": 1,
            "default": 5,
            "description": "k for topk_agreement (argmax over the last axis)",
        },
        "label_output": {
            "type": "string",
            "description": "with a labelled dataset: the output holding class scores, for accuracy and macro F1",
        },
        "metrics": {
            "type": "object",
            "additionalProperties": {"type": "object"},
            "default": {},
            "description": "task metrics by type with their parameters, e.g. {detection: {output: output0}} "
            "(`engine stages` lists those installed)",
        },
        "min": {
            "type": "object",
            "additionalProperties": {"type": "number"},
            "default": {},
            "description": "gates: every candidate must reach these, e.g. {cosine_mean: 0.99, det_f1: 0.9}",
        },
        "max": {
            "type": "object",
            "additionalProperties": {"type": "number"},
            "default": {},
            "description": "gates: every candidate must stay under these, e.g. {max_abs: 0.05}",
        },
        "gate_outputs": {
            "type": "array",
            "items": {"type": "string"},
            "default": [],
            "description": "outputs the gates apply to (default: every compared output); task metrics always count",
        },
        "metric_function": {
            "type": "string",
            "default": "metric",
            "description": "in the `metric` input file: f(reference, candidate, feeds) -> {name: number}, "
            "outputs given as {output name: [array per feed]}",
        },
    },
}
