"""ONNX and ONNX Runtime helpers: reading models (with their external data), execution providers."""
