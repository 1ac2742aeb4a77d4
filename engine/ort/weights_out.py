"""A large model's weights written out and read back, so the memory that held their old values is given back.

Python's protobuf (upb) keeps every byte a message has held in the message's arena until the whole message is
dropped. A converter that replaces a model's float32 weights by their float16 values in place (ORT's
convert_float_to_float16) therefore still holds the float32 bytes: on a 2.2 GB model, 3.2 GB resident after the
conversion, and the save that follows serializes the 1.1 GB result twice (protobuf's buffer, then Python's
bytes) on top, 5.2 GB at the peak. Written out one tensor at a time (no whole-model serialization), the old
message dropped and the model read back, one copy is held: the peak falls to that of the conversion itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Below this many bytes of weights held in the message, the round trip costs more than it gives back.
HELD_BYTES_TO_MOVE = 2**29


def held_bytes(model: Any) -> int:
    """Bytes of tensor data the message holds itself (not in external-data files), counted from the shapes."""
    import numpy as np
    import onnx

    held = 0
    for tensor in model.graph.initializer:
        if (
            tensor.data_location != onnx.TensorProto.EXTERNAL
            and tensor.data_type != onnx.TensorProto.STRING
        ):
            size = int(np.prod(tensor.dims, dtype=np.int64))
            held += size * onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    return held


def written_out(model: Any, folder: Path) -> Path:
    """The model saved in `folder` with its weights in one external-data file, each tensor written on its own.
    The message passed in is left with its weights moved out: the caller drops it and reads the file back
    (onnx_model.load_graph(path, external_data=True)) to hold one copy."""
    import onnx

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.onnx"
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="model.onnx.data",
    )
    return path
