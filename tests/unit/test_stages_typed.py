"""Built-in stages that read their parameters typed (a settings dataclass) but are not yet declared as
Stage.settings, because a helper they call still reads ctx.params by key: their dataclass must still stand for
the params_schema exactly as a declared one does (test_stage_settings.py holds the declared ones)."""

import pytest

from ortflow.api import settings_of, settings_problems
from ortflow.engine.contracts.params import fill_defaults
from ortflow.stages.quantize_weights import QuantizeWeights, WeightsSettings

UNDECLARED = [(QuantizeWeights, WeightsSettings)]


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
