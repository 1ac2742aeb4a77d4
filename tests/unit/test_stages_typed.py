"""Built-in stages that read their parameters typed (a settings dataclass) but are not yet declared as
Stage.settings, because a helper they call still reads ctx.params by key: their dataclass must still stand for
the params_schema exactly as a declared one does (test_stage_settings.py holds the declared ones)."""

import pytest

from ortflow.api import settings_of, settings_problems
from ortflow.engine.contracts.params import fill_defaults
from ortflow.stages.benchmark import Benchmark, BenchmarkSettings
from ortflow.stages.calibrate import Calibrate, CalibrateSettings
from ortflow.stages.quantization.ort_quantizer import DynamicSettings, StaticSettings
from ortflow.stages.quantize_dynamic import QuantizeDynamic
from ortflow.stages.quantize_static import QuantizeStatic
from ortflow.stages.quantize_weights import QuantizeWeights, WeightsSettings
from ortflow.stages.validate_accuracy import AccuracySettings, ValidateAccuracy

UNDECLARED = [
    (Benchmark, BenchmarkSettings),
    (Calibrate, CalibrateSettings),
    (QuantizeWeights, WeightsSettings),
    (QuantizeStatic, StaticSettings),
    (QuantizeDynamic, DynamicSettings),
    (ValidateAccuracy, AccuracySettings),
]


@pytest.mark.parametrize(("stage_cls", "settings"), UNDECLARED, ids=lambda v: v.__name__)
def test_undeclared_settings_agree_with_the_params_schema(stage_cls, settings):
    assert settings_problems(settings, stage_cls.params_schema) == []
    # the defaults read typed are the schema's (lists arrive as tuples)
    assert settings_of(settings, fill_defaults({}, stage_cls.params_schema)) == settings()


def test_quantize_weights_checks_read_the_typed_settings():
    filled = fill_defaults(
        {"algorithm": "rtn", "bits": 8, "op_types_to_quantize": ["Gather"]},
        QuantizeWeights.params_schema,
    )
    problems = QuantizeWeights().check(filled)
    assert (
        len(problems) == 2 and "set bits: 4" in problems[0] and "MatMul weights only" in problems[1]
    )


def test_a_swept_benchmark_parameter_reads_as_its_values():
    """A list in the recipe is a sweep (read as a tuple); a single value, one point; unset, the data's own."""
    filled = fill_defaults({"batch_size": [1, 4], "io_binding": True}, Benchmark.params_schema)
    read = settings_of(BenchmarkSettings, filled)
    assert (read.batch_size, read.io_binding, read.sequence_length) == ((1, 4), True, None)
    assert Benchmark().check(fill_defaults({"runs": 2, "rounds": 5}, Benchmark.params_schema)) == [
        "runs (2) must be at least rounds (5)"
    ]
    assert (
        Benchmark().check(fill_defaults({"runs": 2, "seconds": 1.0}, Benchmark.params_schema)) == []
    )


def test_quantize_static_and_dynamic_read_auto_op_types_and_their_checks_typed():
    """op_table reads `auto` as [] (every type) before run reads the settings; the list given is the list used.
    quantize_static's check reads the typed settings and names each unsupported combination."""
    for stage_cls, settings in (
        (QuantizeStatic, StaticSettings),
        (QuantizeDynamic, DynamicSettings),
    ):
        given = fill_defaults({"op_types_to_quantize": ["MatMul"]}, stage_cls.params_schema)
        assert settings_of(settings, given).op_types() == ["MatMul"]
        assert settings_of(settings, fill_defaults({}, stage_cls.params_schema)).op_types() == []
    filled = fill_defaults(
        {
            "format": "QOperator",
            "activation_type": "QInt8",
            "weight_type": "QUInt16",
            "extra_options": {"SmoothQuant": True},
        },
        QuantizeStatic.params_schema,
    )
    problems = QuantizeStatic().check(filled)
    assert len(problems) == 2 and "SmoothQuant" in problems[0] and "format QDQ" in problems[1]
    int8_with_uint8 = fill_defaults(
        {"activation_type": "QInt8", "weight_type": "QUInt8"}, QuantizeStatic.params_schema
    )
    assert QuantizeStatic().check(int8_with_uint8) == [
        "ORT does not support int8 activations with uint8 weights — use QInt8 weights"
    ]
