"""Where a pipeline's first model comes from when it is not ONNX yet: a local Hugging Face folder or a Python
function returning a PyTorch module, brought to one shape for the export stage.

Kept apart from the stage module so that torch is imported only when a model is exported. Not part of the
plugin API."""
