"""What `engine init` drafts before writing a recipe: the target it proposes for, and one stage as a draft (its
name, type, inputs, parameters and the comment explaining it). Their own module, so that the proposals for each
target (engine.starter.proposal, engine.starter.gpu_target) share them without importing each other."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ortflow.engine.leaves.json_types import JsonObject

# the partial-INT8 search's default budget (models built, whole-model INT8 included): a count, not seconds, so
# the model init's recipe delivers is the same on every machine
PARTIAL_CANDIDATES = 6


class Target(enum.Enum):
    CPU = "cpu"
    CUDA = "cuda"
    TENSORRT = "tensorrt"


# A drafted stage's `in:`: each port's reference (`inputs.model`, `quant.model`), or several for a port that
# takes a list.
InputRefs = dict[str, "str | list[str]"]


@dataclass
class StageDraft:
    name: str
    uses: str
    inputs: InputRefs
    params: JsonObject = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    optional: bool = False
