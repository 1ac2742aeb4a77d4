"""Port declarations that several built-in stages share: a model in with optional samples, a rewritten model
out with its metrics. One declaration each, so stages that take and give the same things say so the same way
(the docs each stage's page shows come from these descriptions). Part of the stable plugin API.

    from ortflow.api.ports import model_in, samples_in, model_out, metrics_out, metric_in
"""

from __future__ import annotations

from ortflow.engine.contracts.stage import ArtifactKind, Port

# What the quantizers' `data` input is for: the sanity check after quantizing.
SANITY_SAMPLES = (
    "a few samples for the sanity check (default: the data upstream inputs were made "
    "from, e.g. the calibration table's, else random feeds)"
)


def model_in(description: str) -> Port:
    """The `model` input: the ONNX model the stage rewrites."""
    return Port("model", ArtifactKind.ONNX_MODEL, description)


def samples_in(description: str = SANITY_SAMPLES) -> Port:
    """The optional `data` input: samples the stage runs the model on."""
    return Port("data", ArtifactKind.DATASET, description, optional=True)


def model_out(description: str) -> Port:
    """The `model` output, written as model.onnx."""
    return Port("model", ArtifactKind.ONNX_MODEL, description, filename="model.onnx")


def metrics_out(description: str) -> Port:
    """The `metrics` output, written as metrics.json."""
    return Port("metrics", ArtifactKind.METRICS, description, filename="metrics.json")


def metric_in() -> Port:
    """The optional `metric` input of a stage that runs accuracy checks as steps (the searches)."""
    return Port(
        "metric",
        ArtifactKind.FILE,
        "a metric file for the accuracy checks, as validate_accuracy's `metric`",
        optional=True,
    )
