"""Which nodes of a float32 model compute values float16 cannot hold (above 65504 it is inf, and inf turns
into NaN a few ops later): found by running the model on real samples, so convert_float16 can keep exactly
those nodes in float32 instead of a hand-written block list."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ortflow.stages.quantization.localization import activations

if TYPE_CHECKING:
    from ortflow.api import Feed

FP16_MAX = 65504.0
MASK_FILL = 1e38  # attention-mask fills (-3.4e38) are meant to be -inf: float16 keeps their meaning


def out_of_range(model: Path, feeds: Sequence[Feed], headroom: float) -> dict[str, float]:
    """Node name -> the largest magnitude it produced, for nodes whose outputs exceed FP16_MAX / headroom
    (headroom: how much larger than on these samples a value may get elsewhere)."""
    import numpy as np
    import onnx

    producer = {
        out: node.name
        for node in onnx.load(str(model), load_external_data=False).graph.node
        for out in node.output
    }
    found: dict[str, float] = {}
    for tensor, values in activations(model, feeds).items():
        peaks = [
            np.abs(v[np.isfinite(v) & (np.abs(v) < MASK_FILL)]).max(initial=0.0)
            for v in map(np.asarray, values)
        ]
        peak = float(max(peaks, default=0.0))
        node = producer.get(tensor)
        if node and peak > FP16_MAX / headroom:
            found[node] = max(found.get(node, 0.0), round(peak, 1))
    return dict(sorted(found.items(), key=lambda item: -item[1]))
