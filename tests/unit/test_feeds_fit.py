"""Which data feeds which model (engine/contracts/dataset.py feeds_fit): a model specialized for an input
(silero-vad's `sr` frozen at 16000) is fed data made for the original less that input; an INT8 built from the
specialized model and judged against it lacks the input on both sides (before, the partial-INT8 search on
silero-vad's If-wrapped file stopped: "takes other inputs than the reference ... differing: ")."""

from __future__ import annotations

from ortflow.engine.contracts.dataset import ModelInput, ModelInputs, feeds_fit

CHUNK = ModelInput("input", "float32", (1, 576))
STATE = ModelInput("state", "float32", (2, 1, 128))
SR = ModelInput("sr", "int64", ())


def test_a_specialized_model_takes_the_originals_data_less_its_frozen_input():
    original = ModelInputs([CHUNK, STATE, SR])
    assert feeds_fit(ModelInputs([CHUNK, STATE], {"sr": 16000}), original)
    assert not feeds_fit(
        ModelInputs([CHUNK, STATE]), original
    )  # sr missing, not frozen: another model


def test_both_specialized_to_the_same_value_share_their_data():
    spec = ModelInputs([CHUNK, STATE], {"sr": 16000})
    assert feeds_fit(ModelInputs([CHUNK, STATE], {"sr": 16000}), spec)
    assert not feeds_fit(ModelInputs([CHUNK, STATE], {"sr": 8000}), spec)  # another specialization
    assert not feeds_fit(ModelInputs([CHUNK, STATE], {"sr": 16000}), ModelInputs([CHUNK, STATE]))
