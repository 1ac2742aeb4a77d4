"""The sanity check's numbers as a quantize stage's run record keeps them (its `sanity` metric): what it
measured on each output, on which data, or why it was skipped; and, when an output collapsed, where the
error entered (localization's rows); and what the check reads of a quantizer's settings. Kept apart from
sanity.py, which computes them."""

from __future__ import annotations

from typing import Protocol, TypedDict

from ortflow.stages.quantization.localization import NodeErrorRow


class _OutputNumbers(TypedDict):
    cosine_mean: float
    relative_error: float
    problems: list[str]


class OutputNumbers(_OutputNumbers, total=False):
    """One output's agreement with the float model (rounded to 5 decimals) and what was wrong with it."""

    unjudged: list[str]  # what the samples could not show; left out when nothing


class SanityMetrics(TypedDict, total=False):
    """The check's numbers; `skipped` alone where it could not run."""

    samples: int
    synthetic_inputs: bool  # random feeds, not the user's data
    outputs: dict[str, OutputNumbers]
    data: str  # the data the check ran on, in words
    advisory: bool  # a failure on random feeds, warned about rather than refused
    culprits: list[NodeErrorRow]  # where the error entered, when an output collapsed
    skipped: str


def output_numbers(
    cosine: float, relative_error: float, problems: list[str], unjudged: list[str]
) -> OutputNumbers:
    """One output's numbers as the record keeps them."""
    found: OutputNumbers = {
        "cosine_mean": round(cosine, 5),
        "relative_error": round(relative_error, 5),
        "problems": problems,
    }
    if unjudged:
        found["unjudged"] = unjudged
    return found


class SanityChoice(Protocol):
    """What the check reads of a quantize stage's settings (StaticSettings, DynamicSettings and
    WeightsSettings each have these three parameters)."""

    @property
    def sanity_check(self) -> bool: ...
    @property
    def sanity_samples(self) -> int: ...
    @property
    def sanity_min_cosine(self) -> float: ...
