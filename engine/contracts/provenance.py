"""Where the data behind an accuracy verdict came from. A cosine of 0.9999 on random feeds says nothing about
a model's real inputs, so every verdict names its data: real samples (by loader and path), random feeds, data
of unknown origin, and whether it is the very data the candidates were calibrated on. A dataset loader
declares what its data is (DatasetLoader.provenance); a stage that judges accuracy returns the DataSource its
verdict rests on (StageResult.data_source), and the run record, the run table, the reports and `engine
optimize` show its label without knowing which stage made it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TypedDict

UNVERIFIED_RANDOM = "unverified: random feeds"
REUSED = "calibration data reused"


class DataProvenance(str, Enum):
    """What a loader's samples are. UNKNOWN is the default: a loader that does not say is never taken for real."""

    REAL = "real"  # samples of the model's real inputs, read from files
    RANDOM = "random"  # synthetic feeds: good for timing, say nothing about accuracy
    UNKNOWN = "unknown"  # the loader did not declare it (e.g. a user function)


class DataSourceJson(TypedDict):
    """A DataSource as a run record and the result documents hold it (DataSource.to_json)."""

    provenance: str  # a DataProvenance's value
    loader: str
    dataset: str
    paths: list[str]
    calibration_reused: bool
    verified: bool
    label: str


@dataclass(frozen=True)
class DataSource:
    """The data a verdict rests on: the dataset's provenance, loader, name and the files it read, and whether the
    candidates judged were built from (calibrated on) the same data, which flatters them."""

    provenance: DataProvenance
    loader: str
    dataset: str = ""
    paths: tuple[str, ...] = ()
    calibration_reused: bool = False

    @property
    def verified(self) -> bool:
        """True only for real data: a verdict on anything else must not read as a measurement of the model."""
        return self.provenance is DataProvenance.REAL

    def label(self) -> str:
        """One phrase for tables and closing lines, e.g. "unverified: random feeds" or
        "real data: images loader, data/lines (calibration data reused)"."""
        reused = f" ({REUSED})" if self.calibration_reused else ""
        if self.provenance is DataProvenance.RANDOM:
            return UNVERIFIED_RANDOM + reused
        where = f"{self.loader} loader" + (
            f", {', '.join(_shown(p) for p in self.paths)}" if self.paths else ""
        )
        if self.provenance is DataProvenance.REAL:
            return f"real data: {where}{reused}"
        return f"unverified: data of unknown provenance ({where}){reused}"

    def to_json(self) -> DataSourceJson:
        return {
            "provenance": self.provenance.value,
            "loader": self.loader,
            "dataset": self.dataset,
            "paths": list(self.paths),
            "calibration_reused": self.calibration_reused,
            "verified": self.verified,
            "label": self.label(),
        }

    @classmethod
    def from_json(cls, data: object) -> DataSource | None:
        """The DataSource a document or run record holds, or None (none recorded, or not one of ours)."""
        if not isinstance(data, dict) or not isinstance(data.get("loader"), str):
            return None
        try:
            provenance = DataProvenance(data.get("provenance"))
        except ValueError:
            provenance = DataProvenance.UNKNOWN
        paths = tuple(str(p) for p in data.get("paths") or () if isinstance(p, str))
        return cls(
            provenance,
            data["loader"],
            str(data.get("dataset") or ""),
            paths,
            bool(data.get("calibration_reused")),
        )


def with_label(text: str, data_source: object) -> str:
    """A stage's one-line result with the label of the data its verdict rests on (a recorded DataSource), unless
    the line says it already: what the run table and the reports show, for any stage that declares its data."""
    source = DataSource.from_json(data_source)
    if source is None:
        return text
    label = source.label()
    return text if label in text else f"{text} [{label}]" if text else f"[{label}]"


def _shown(path: str) -> str:
    """A path relative to the working directory where it lies under it (what a user typed), else as is."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path
