"""benchmark's parameters: the sessions' settings, the sweeps (a list sweeps), how long to time and what else
to measure (its `params_schema`), and ORT's names of the graph optimization levels they name."""

from __future__ import annotations

from ortflow.api import JsonObject

LEVELS = {
    "disabled": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}


PARAMS_SCHEMA: JsonObject = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "providers": {
            "type": "array",
            "minItems": 1,
            "default": ["CPUExecutionProvider"],
            "items": {
                "oneOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "options": {"type": "object"},
                        },
                        "additionalProperties": False,
                    },
                ]
            },
            "description": "execution providers in order, each a name or {name, options}",
        },
        "optimization_level": {
            "enum": list(LEVELS),
            "default": "all",
            "description": "the session's graph optimization level (ORT's default is all)",
        },
        "intra_op_threads": {
            "oneOf": [
                {"type": "integer", "minimum": 0},
                {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1},
            ],
            "default": 0,
            "description": "threads per op (0: ORT's default); a list sweeps",
        },
        "inter_op_threads": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "threads across ops (0: default)",
        },
        "execution_mode": {"enum": ["sequential", "parallel"], "default": "sequential"},
        "batch_size": {
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
            ],
            "default": 1,
            "description": "samples per run; a list sweeps",
        },
        "sequence_length": {
            "oneOf": [
                {"type": "integer", "minimum": 1},
                {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
            ],
            "description": "cut or zero-pad every input's axis 1 to this length (token models); a list sweeps",
        },
        "samples": {
            "type": "integer",
            "minimum": 1,
            "default": 16,
            "description": "distinct feeds cycled through",
        },
        "warmup": {
            "type": "integer",
            "minimum": 0,
            "default": 10,
            "description": "untimed runs per model first",
        },
        "runs": {
            "type": "integer",
            "minimum": 1,
            "default": 100,
            "description": "timed runs per model and config",
        },
        "seconds": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "a time budget per model and config instead of a run count",
        },
        "io_binding": {
            "oneOf": [
                {"type": "boolean"},
                {"type": "array", "items": {"type": "boolean"}, "minItems": 1},
            ],
            "default": False,
            "description": "feed and fetch through IO binding with tensors already on the provider's "
            "device (CUDA: inputs and outputs stay on the GPU), so copies are not timed; "
            "[false, true] measures both",
        },
        "cuda_graph": {
            "oneOf": [
                {"type": "boolean"},
                {"type": "array", "items": {"type": "boolean"}, "minItems": 1},
            ],
            "description": "CUDA provider: replay a CUDA graph (`enable_cuda_graph`) on inputs and outputs bound "
            "once on the GPU, each feed copied into them (needs io_binding: true, fixed shapes, every node on "
            "CUDA; where a graph cannot be captured the configuration is skipped with why); [false, true] measures both; unset: false",
        },
        "rounds": {
            "type": "integer",
            "minimum": 1,
            "default": 5,
            "description": "the runs are split into this many rounds, models alternating",
        },
        "baseline": {
            "type": "string",
            "description": "the model speedups are relative to (default: the first)",
        },
        "note": {
            "type": "string",
            "default": "",
            "description": "free text kept with the results; a new note measures again instead of using the cache",
        },
        "peak_memory": {
            "type": "boolean",
            "description": "measure each model's peak memory in a separate process (default true)",
        },
        "profile": {
            "type": "boolean",
            "default": False,
            "description": "also profile each model (untimed pass) and report the top operators",
        },
    },
}
