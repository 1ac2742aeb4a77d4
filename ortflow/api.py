"""The stable plugin API: everything a third-party stage type or dataset loader needs, from one module.

    from ortflow.api import ArtifactKind, Port, Stage, StageContext, StageResult, StageError

Register a Stage subclass under the `ortflow.stages` entry-point group, a DatasetLoader subclass under
`ortflow.datasets` (declaring its `provenance`: REAL for samples of the model's real inputs; a loader that does
not say is UNKNOWN, and verdicts on its data read "unverified") and a Metric subclass (an accuracy metric
validate_accuracy computes and gates, select and quantize_search use by name) under `ortflow.metrics`. Names
exported here keep their meaning across releases; modules under
`ortflow.engine` are internal and may move.
"""

from ortflow.engine.dataset import (
    BATCH_AXES_PARAM,
    LIMIT_PARAM,
    DataProvenance,
    Dataset,
    DatasetLoader,
    DataSource,
    Feed,
    ModelInput,
    batched,
    file_param,
    model_inputs,
)
from ortflow.engine.documents import (
    BENCHMARK_CONFIG,
    AccuracyResults,
    BenchmarkResults,
    BenchmarkRow,
    Bounds,
    Latency,
    Placement,
    Profile,
    ReferenceValues,
    ReportSection,
    Selection,
    SelectionCandidate,
    Table,
    with_speedups,
)
from ortflow.engine.documents import read as read_document
from ortflow.engine.documents import write as write_document
from ortflow.engine.errors import GateFailed, ProviderUnavailable, StageError
from ortflow.engine.json_types import Json, JsonObject, Params, Scalar
from ortflow.engine.metric import Better, Metric, MetricName, Outputs
from ortflow.engine.ort.onnx_model import check as check_model
from ortflow.engine.ort.onnx_model import model_file
from ortflow.engine.ort.onnx_model import save as save_model
from ortflow.engine.params import fill_defaults, params_problems
from ortflow.engine.registry import metric_type, stage_type
from ortflow.engine.stage import Artifact, ArtifactKind, Port, Stage, StageContext, StageResult, StepResult, Steps

__all__ = [
    "BATCH_AXES_PARAM", "LIMIT_PARAM", "Artifact", "ArtifactKind", "Better", "DataProvenance", "DataSource",
    "Dataset", "DatasetLoader", "Feed", "GateFailed",
    "Metric", "MetricName", "ModelInput", "Outputs", "Port", "ProviderUnavailable", "Stage", "StageContext", "StageError",
    "StageResult", "StepResult", "Steps", "batched", "check_model", "file_param", "fill_defaults", "metric_type", "model_file",
    "model_inputs", "params_problems", "save_model", "stage_type",
    # result documents (engine.documents): written and read only through these
    "AccuracyResults", "BENCHMARK_CONFIG", "BenchmarkResults", "BenchmarkRow", "Bounds", "Latency", "Placement", "Profile",
    "ReferenceValues",
    "ReportSection", "Selection", "SelectionCandidate", "Table", "read_document", "with_speedups", "write_document",
    "Json", "JsonObject", "Params", "Scalar",
]
