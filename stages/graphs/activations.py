"""HardSwish and HardSigmoid written back as the ops they are: Paddle's exporter (PP-OCR, PP-LCNet, PicoDet) writes
HardSwish as x * Clip(x + 3, 0, 6) / 6 and HardSigmoid as Clip(x + 3, 0, 6) / 6, four nodes ORT runs one by one,
each breaking its NCHWc layout (a reorder before and after). As ops, ORT fuses them into the convolution before
them. rapidocr's angle classifier: 18 such HardSwish chains, 1.67-1.82x in float32 (the same outputs within 6e-7).
onnxscript's rewrite rules find them; HardSwish needs opset 14, so a model of an older opset is converted first
(onnx's version converter), and where it cannot be, the chains stay as they are."""

from __future__ import annotations

from typing import Any

HARDSWISH_OPSET = 14


def fuse_hard_activations(model: Any) -> Any:
    """The onnx_ir model with its HardSwish/HardSigmoid chains fused (a new model where its opset was raised),
    or the model as it was where it has none or its opset cannot be raised."""
    import onnx
    import onnx_ir as ir
    from onnxscript.rewriter.rules.common import fuse_hardswish_rules

    trial = ir.serde.deserialize_model(ir.serde.serialize_model(model))
    if not fuse_hardswish_rules().apply_to_model(trial):
        return model
    if model.opset_imports.get("", HARDSWISH_OPSET) < HARDSWISH_OPSET:
        try:
            raised = onnx.version_converter.convert_version(
                ir.serde.serialize_model(model), HARDSWISH_OPSET
            )
        except (RuntimeError, ValueError, onnx.checker.ValidationError):
            return model  # an op the converter cannot carry over: the chains stay
        model = ir.serde.deserialize_model(raised)
    fuse_hardswish_rules().apply_to_model(model)
    return model
