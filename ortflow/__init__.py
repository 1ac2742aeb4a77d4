"""ortflow: declarative, cached pipelines that turn an ONNX model into a fast, validated ONNX Runtime
deployment artifact.

The repository keeps `engine/`, `stages/` and `schemas/` at its top; they install as `ortflow.engine`,
`ortflow.stages` and `ortflow.schemas` (pyproject's package-dir mapping). Plugin authors import from
`ortflow.api` only.
"""

__version__ = "0.1.0"
