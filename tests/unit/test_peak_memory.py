"""stages.measurement.peak_memory: the model is loaded and run in a child of its own (started through
ortflow.api.processes.child_command, so it dies with the engine), and what comes back is that child's peak
resident memory, not the test process's."""

from __future__ import annotations

import numpy as np
from conftest import toy_model
from onnx import TensorProto, helper, numpy_helper

from ortflow.stages.measurement.benchmark_settings import BenchmarkSettings, SessionConfig
from ortflow.stages.measurement.peak_memory import peak_memory_mb

PARAMS = SessionConfig.of(BenchmarkSettings(providers=("CPUExecutionProvider",)))


def _weights_model(path, megabytes: int):
    """x @ W with W of about `megabytes` MB: the peak must include the weights ORT holds."""
    columns = megabytes * 1024 * 1024 // (4 * 256)
    weight = numpy_helper.from_array(np.ones((256, columns), np.float32), "w")
    return toy_model(
        path,
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, columns])],
        [weight],
    )


def test_the_peak_is_the_childs_and_grows_with_the_weights(tmp_path):
    feed = {"x": np.ones((1, 256), np.float32)}
    small = peak_memory_mb(_weights_model(tmp_path / "small.onnx", 1), PARAMS, 1, feed)
    large = peak_memory_mb(_weights_model(tmp_path / "large.onnx", 64), PARAMS, 1, feed)
    assert small is not None and large is not None, "the child failed to measure"
    assert large - small > 50, (small, large)  # 63 MB more weights, held at least once
