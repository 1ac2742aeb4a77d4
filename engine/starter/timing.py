"""How long the recipe's benchmark times each model: a run count for most models, a time budget for small ones.

Thirty runs of a 0.1 ms voice-activity model take 3 ms a round: one scheduler tick moves its median by 10-30 %,
and `pick`, which asks a candidate to be faster in every round, kept fp32 or took INT8 by chance (corpus: magika and
silero-vad-op15-external changed outcome between runs of the same code; timed apart against a byte-copy control,
their INT8 ran 1.2-1.4x; name-encoder's INT8, delivered at 1.07-1.11x by chance, times 0.985-1.09x in steady
rounds). A time budget gives such a model thousands of runs a round. The rule reads the model's weight count, not
a timing, so the recipe init writes does not depend on the load of the machine it was written on; below
SMALL_WEIGHTS every corpus model ran in under 6 ms."""

from __future__ import annotations

from ortflow.engine.starter.drafts import StageWith

# the benchmark's settings for a model of ordinary size: 30 runs in 3 rounds
BENCHMARK: StageWith = {"runs": 30, "rounds": 3, "warmup": 5, "samples": 8, "peak_memory": False}
SMALL_WEIGHTS = (
    1_000_000  # weights (elements) below which a model is timed for a budget, not a count
)
SMALL_MODEL_SECONDS = 0.6  # per model, over its 3 rounds


def benchmark_with(weight_total: int) -> StageWith:
    """The benchmark's `with:` for a model holding `weight_total` weight elements."""
    if weight_total >= SMALL_WEIGHTS:
        return BENCHMARK.copy()
    return {
        "seconds": SMALL_MODEL_SECONDS,
        "rounds": 3,
        "warmup": 20,
        "samples": 8,
        "peak_memory": False,
    }
