"""ortflow: declarative, cached pipelines that turn an ONNX model into a fast, validated ONNX Runtime
deployment artifact.

The repository keeps `engine/`, `stages/`, `loaders/` and `schemas/` at its top; they install as `ortflow.engine`,
`ortflow.stages`, `ortflow.loaders` and `ortflow.schemas` (pyproject's package-dir mapping). Plugin authors, and
the built-in stages and loaders, import from `ortflow.api` only.
"""

__version__ = "0.1.0"
