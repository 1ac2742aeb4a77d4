"""The stable plugin API: everything a stage type, dataset loader or metric needs, and the only door the
built-in stages and loaders use (an import-linter contract keeps it so).

    from ortflow.api import ArtifactKind, Port, Stage, StageContext, StageResult, StageError

Register a Stage subclass under the `ortflow.stages` entry-point group, a DatasetLoader subclass under
`ortflow.datasets` (declaring its `provenance`: REAL for samples of the model's real inputs; a loader that does
not say is UNKNOWN, and verdicts on its data read "unverified") and a Metric subclass (an accuracy metric
validate_accuracy computes and gates, select and quantize_search use by name) under `ortflow.metrics`.

Names exported here, in `ortflow.api.onnx` (model files), `ortflow.api.providers` (execution providers) and in
`ortflow.api.processes` (child processes that die with the engine) keep their meaning across releases; modules
under `ortflow.engine` are internal and may move. A plugin that still imports `ortflow.engine.*` works for one
more release, with a warning naming what to import instead.
"""

# Grouped by purpose, each group under a line saying what it is for (so not sorted by module):
# isort: off

# The stage contract: what a stage declares (ports, parameters, the results it reports) and what it receives.
from ortflow.engine.contracts.declarations import (
    Axis,
    Choice,
    Declares,
    Distribution,
    Measure,
    Tables,
)
from ortflow.engine.contracts.stage import (
    Artifact,
    ArtifactKind,
    Port,
    Stage,
    StageContext,
    StageResult,
    StepResult,
    Steps,
)

# Failures a stage raises: StageError (what is wrong, and the fix), GateFailed (ran, and its quality gate said
# no), ProviderUnavailable (an execution provider ONNX Runtime cannot use here); OrtflowError for a broken plugin.
from ortflow.engine.leaves.errors import (
    GateFailed,
    OrtflowError,
    ProviderUnavailable,
    StageError,
    suggest,
)
from ortflow.engine.leaves.wording import counted  # "1 input", "3 inputs" in summaries

# Datasets: the loader base class, the feeds a stage iterates, parameter schemas loaders share, and where the
# data behind a verdict came from.
from ortflow.engine.contracts.dataset import (
    BATCH_AXES_PARAM,
    FROZEN_INPUTS,
    LIMIT_PARAM,
    MAX_FEED_VALUES,
    SKIP_PARAM,
    DataProvenance,
    Dataset,
    DatasetLoader,
    DataSource,
    Feed,
    ModelInput,
    batched,
    feeds_fit,
    feeds_for,
    file_param,
    model_inputs,
)
from ortflow.engine.contracts.settings_loader import (
    SettingsLoader,
)  # a loader with typed parameters
from ortflow.engine.contracts.settings_stage import (
    SettingsStage,
)  # a stage type with typed parameters

# Accuracy metrics: the Metric base class, its declared names and directions, and the checks stages run on the
# metric names their parameters use.
from ortflow.engine.leaves.detection_heads import (
    HeadReading,
    box_iou,
    confident_boxes,
    decode_head,
    feed_image_size,
    plausibility,
)
from ortflow.engine.contracts.metric import (
    Better,
    KnownMetrics,
    Metric,
    MetricName,
    Outputs,
    bound_problems,
)

# Parameters: defaults from a JSON Schema and its problems with given values, for a stage that validates the
# parameters of a step or a metric it runs.
from ortflow.engine.contracts.params import (
    fill_defaults,
    params_problems,
    settings_of,
    settings_problems,
)

# Other plugins by name (stages never import each other): a stage type, a metric, a dataset loader.
from ortflow.engine.contracts.registry import (
    installed_metrics,
    loader_type,
    metric_type,
    stage_type,
)

# The environment facts a stage's outputs depend on (`Stage.env_facts` names them; `environment_facts` reads them).
from ortflow.engine.leaves.environment import facts as environment_facts
from ortflow.engine.leaves.environment import int8_saturates

# A str Enum whose str() is its value: parameter choices and statuses that print as the user writes them.
from ortflow.engine.contracts.types import TextEnum

# JSON-shaped values: what a parsed JSON/YAML document holds, and a stage's opaque parameters.
from ortflow.engine.leaves.json_types import Json, JsonObject, Params, Scalar
from ortflow.engine.contracts.json_values import (
    json_value,
)  # a typed part (a TypedDict) as a JSON value, checked

# Model files, kept at the top for plugins written against the first API (ortflow.api.onnx has the rest).
from ortflow.engine.ort.onnx_model import check as check_model
from ortflow.engine.ort.onnx_model import model_file
from ortflow.engine.ort.onnx_model import save as save_model
# isort: on

import typing

# What __getattr__ below gives, named for the type checker (nothing is imported at run time).
if typing.TYPE_CHECKING:
    from ortflow.engine.contracts.documents import (
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
        SessionSettings,
        Table,
        with_speedups,
    )
    from ortflow.engine.contracts.documents import read as read_document
    from ortflow.engine.contracts.documents import write as write_document

# Result documents (the benchmark's, validate_accuracy's and select's outputs as typed dataclasses, checked against
# their JSON Schemas in schemas/, written and read only through read_document/write_document) are loaded when
# first named (__getattr__ below): a cached run that writes and reads no document does not pay their import.
_DOCUMENTS = {
    **{
        name: ("ortflow.engine.contracts.documents", name)
        for name in (
            "BENCHMARK_CONFIG",
            "AccuracyResults",
            "BenchmarkResults",
            "BenchmarkRow",
            "Bounds",
            "Latency",
            "Placement",
            "Profile",
            "ReferenceValues",
            "ReportSection",
            "Selection",
            "SelectionCandidate",
            "SessionSettings",
            "Table",
            "with_speedups",
        )
    },
    "read_document": ("ortflow.engine.contracts.documents", "read"),
    "write_document": ("ortflow.engine.contracts.documents", "write"),
}

__all__ = [
    "Artifact",
    "ArtifactKind",
    "Axis",
    "BATCH_AXES_PARAM",
    "Better",
    "Choice",
    "DataProvenance",
    "DataSource",
    "Dataset",
    "DatasetLoader",
    "Declares",
    "Distribution",
    "Feed",
    "FROZEN_INPUTS",
    "GateFailed",
    "KnownMetrics",
    "LIMIT_PARAM",
    "MAX_FEED_VALUES",
    "Measure",
    "Metric",
    "MetricName",
    "ModelInput",
    "OrtflowError",
    "Outputs",
    "Port",
    "settings_of",
    "settings_problems",
    "ProviderUnavailable",
    "SKIP_PARAM",
    "SettingsLoader",
    "SettingsStage",
    "Stage",
    "StageContext",
    "StageError",
    "HeadReading",
    "decode_head",
    "feed_image_size",
    "box_iou",
    "confident_boxes",
    "plausibility",
    "StageResult",
    "StepResult",
    "Steps",
    "Tables",
    "TextEnum",
    "batched",
    "bound_problems",
    "check_model",
    "counted",
    "environment_facts",
    "int8_saturates",
    "file_param",
    "fill_defaults",
    "installed_metrics",
    "loader_type",
    "metric_type",
    "model_file",
    "model_inputs",
    "feeds_fit",
    "feeds_for",
    "params_problems",
    "save_model",
    "stage_type",
    "suggest",
    # result documents and JSON types
    "AccuracyResults",
    "BENCHMARK_CONFIG",
    "BenchmarkResults",
    "BenchmarkRow",
    "Bounds",
    "Json",
    "json_value",
    "JsonObject",
    "Latency",
    "Params",
    "Placement",
    "Profile",
    "ReferenceValues",
    "ReportSection",
    "Scalar",
    "Selection",
    "SelectionCandidate",
    "SessionSettings",
    "Table",
    "read_document",
    "with_speedups",
    "write_document",
]


def __getattr__(name: str) -> object:
    """A result-document name, imported when first asked for (PEP 562)."""
    if name not in _DOCUMENTS:
        raise AttributeError(f"module 'ortflow.api' has no attribute {name!r}")
    import importlib

    module, attribute = _DOCUMENTS[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
