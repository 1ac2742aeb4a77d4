"""Model files, for stages that read, rewrite or write ONNX models: one place that knows external data (weights
beside the .onnx), protobuf's 2 GB limit, the IR version ONNX Runtime accepts, graph order and ORT's
quantization pre-processing. Part of the stable plugin API (see ortflow.api).

    from ortflow.api import onnx as onnx_model   # `onnx` alone would hide the onnx package
"""

# Grouped by purpose, each group under a line saying what it is for (so not sorted by module):
# isort: off

# Reading: the .onnx file of an artifact (a file, or a folder with external data), graphs, sizes, op counts.
from ortflow.engine.ort.onnx_model import (
    TWO_GB,
    has_external_data,
    load_graph,
    model_file,
    needs_external_data,
    op_counts,
    private_model,
    serialized_size,
    total_size,
)

# Writing: where a model goes (one file, or a folder when it needs external data), saving it so ORT loads it.
from ortflow.engine.ort.onnx_model import (
    cap_ir_version,
    gathered,
    output_file,
    save,
    write_initializers_beside,
)

# ONNX Runtime on a model file: a checked load, a session, its exception types and their one-line message.
from ortflow.engine.ort.onnx_model import check, first_line, load_for_ort, ort_errors

# Memory: a large model rewritten in place, written out and read back so its old weights' memory is given back.
from ortflow.engine.ort.weights_out import HELD_BYTES_TO_MOVE, held_bytes, written_out

# Graph order: nodes topologically sorted again after a rewrite (ORT refuses an unsorted graph).
from ortflow.engine.ort.graph_order import resort_if_needed, sort_graph

# Quantization pre-processing (ORT's quant_pre_process, run in a child process) and how its failures read.
from ortflow.engine.ort.pre_process import (
    MODEL_CAUSES,
    QUANTIZE_BEFORE_OPTIMIZING,
    PreProcessFailed,
    pre_processed,
)
# isort: on

__all__ = [
    "HELD_BYTES_TO_MOVE",
    "MODEL_CAUSES",
    "QUANTIZE_BEFORE_OPTIMIZING",
    "TWO_GB",
    "PreProcessFailed",
    "cap_ir_version",
    "check",
    "first_line",
    "gathered",
    "has_external_data",
    "held_bytes",
    "load_for_ort",
    "load_graph",
    "model_file",
    "needs_external_data",
    "op_counts",
    "ort_errors",
    "output_file",
    "pre_processed",
    "private_model",
    "resort_if_needed",
    "save",
    "serialized_size",
    "sort_graph",
    "total_size",
    "write_initializers_beside",
    "written_out",
]
