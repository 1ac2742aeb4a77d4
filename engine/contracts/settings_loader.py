"""A dataset loader that reads its parameters as a settings dataclass, not by key.

The engine calls every loader with the recipe's parameters (validated, defaults filled, file parameters
resolved to paths): DatasetLoader.feeds(params, inputs) and so on. A SettingsLoader parses them once, here, into
its `settings` (a frozen dataclass that settings_problems holds to its params_schema), and implements typed
hooks that receive that dataclass: a loader reads `settings.path`, never `params["path"]`. A loader that
subclasses DatasetLoader directly keeps working as before."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Iterable, Mapping, TypeVar

from ortflow.engine.contracts.dataset import DataProvenance, DatasetLoader, Feed, ModelInput
from ortflow.engine.contracts.params import settings_of
from ortflow.engine.leaves.json_types import Json, Params

if TYPE_CHECKING:
    import numpy as np

S = TypeVar("S")


class SettingsLoader(DatasetLoader, Generic[S]):
    """Base class of a loader with typed parameters: set `settings` to its dataclass and implement `samples`
    (and `labels_of`, `provenance_of`, `caveat_of` where the loader has them)."""

    settings: builtins.type[S]  # `type` is the loader's name here

    def read(self, params: Params) -> S:
        """The parameters as the loader's settings (a list arrives as a tuple)."""
        return settings_of(self.settings, params)

    def samples(self, settings: S, inputs: list[ModelInput]) -> Iterable[Feed]:
        """As DatasetLoader.feeds, from the settings."""
        raise NotImplementedError

    def labels_of(self, settings: S) -> "np.ndarray | None":
        return None

    def provenance_of(self, settings: S) -> DataProvenance:
        return self.provenance

    def caveat_of(self, settings: S) -> str | None:
        return None

    def feeds(self, params: Params, inputs: list[ModelInput]) -> Iterable[Feed]:
        return self.samples(self.read(params), inputs)

    def labels(self, params: Mapping[str, Json | Path]) -> "np.ndarray | None":
        return self.labels_of(self.read(params))

    def data_provenance(self, params: Mapping[str, Json | Path]) -> DataProvenance:
        return self.provenance_of(self.read(params))

    def key_caveat(self, params: Mapping[str, Json | Path]) -> str | None:
        return self.caveat_of(self.read(params))
