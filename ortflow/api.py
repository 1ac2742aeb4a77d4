"""The stable plugin API: everything a third-party stage type or dataset loader needs, from one module.

    from ortflow.api import ArtifactKind, Port, Stage, StageContext, StageResult, StageError

Register a Stage subclass under the `ortflow.stages` entry-point group and a DatasetLoader subclass under
`ortflow.datasets`. Names exported here keep their meaning across releases; modules under
`ortflow.engine` are internal and may move.
"""

from ortflow.engine.dataset import LIMIT_PARAM, Dataset, DatasetLoader, Feed, ModelInput, batched, file_param, model_inputs
from ortflow.engine.errors import GateFailed, ProviderUnavailable, StageError
from ortflow.engine.ort.onnx_model import check as check_model
from ortflow.engine.ort.onnx_model import model_file
from ortflow.engine.ort.onnx_model import save as save_model
from ortflow.engine.params import fill_defaults, params_problems
from ortflow.engine.registry import stage_type
from ortflow.engine.stage import Artifact, ArtifactKind, Port, Stage, StageContext, StageResult, StepResult, Steps

__all__ = [
    "LIMIT_PARAM", "Artifact", "ArtifactKind", "Dataset", "DatasetLoader", "Feed", "GateFailed", "ModelInput", "Port",
    "ProviderUnavailable", "Stage", "StageContext", "StageError", "StageResult", "StepResult", "Steps", "batched",
    "check_model", "file_param", "fill_defaults", "model_file", "model_inputs", "params_problems", "save_model",
    "stage_type",
]
