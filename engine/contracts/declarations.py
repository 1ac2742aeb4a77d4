"""What a stage type declares about the results it reports, so that the engine prints, plots and reads them
without knowing any stage by its type or its file names (a stage sets `Stage.declares`).

- `Measure`: a per-model number it reports in StageResult.metrics as {model: value} (and in its result rows):
  which way is better, its unit, and whether the report's speed-against-accuracy chart draws it (`plot`).
- `Tables`: report tables its metrics outputs carry (their `"report"` key) that need more than the default,
  e.g. long per-model tables kept out of the terminal; `Distribution`: what its distribution charts' values are.
- `Choice`: the stage chooses one model among candidates: the output port with the chosen model and the metrics
  output that says why; `engine optimize` reads its answer through these ports.

A stage that declares nothing is shown as before: its report tables everywhere, nothing plotted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:
    from ortflow.engine.contracts.metric import Better


class Axis(str, Enum):
    """Where the report's speed-against-accuracy chart puts a measure (one point per model with both)."""

    SPEED = "speed"  # x
    ACCURACY = "accuracy"  # y


@dataclass(frozen=True)
class Measure:
    """A per-model metric a stage reports, as a reader of its results needs to know it."""

    name: (
        str  # the key in StageResult.metrics ({model: value}) and in its result rows, e.g. "p50_ms"
    )
    better: Better
    unit: str = ""  # what the values are in: "ms", "x", "MB", "s", "/s"; "" for a ratio or a score
    plot: Axis | None = None  # drawn on the speed-against-accuracy chart, on this axis
    title: str = ""  # the axis title when plotted (default: the name)

    @property
    def axis_title(self) -> str:
        return self.title or self.name


@dataclass(frozen=True)
class Tables:
    """Report tables of a stage's metrics outputs, by title: those whose title is `title` or starts with
    `title` followed by ":" (a family such as `Top operators: <model>`)."""

    title: str
    terminal: bool = True  # printed as `engine run` ends; False: in report.md/.html only (too long for a terminal)

    def matches(self, title: str) -> bool:
        return title == self.title or title.startswith(self.title + ":")


@dataclass(frozen=True)
class Distribution:
    """Distribution charts of a stage's report (`kind: distribution`) whose title starts with `title`: what
    their values are (the value axis's title) and their unit."""

    title: str
    value: str
    unit: str = ""

    def matches(self, title: str) -> bool:
        return title.startswith(self.title)


@dataclass(frozen=True)
class Choice:
    """A stage that chooses one model: `model`, its output port holding the chosen model (absent when nothing
    qualified), and `document`, its metrics output saying why (every candidate and its values)."""

    model: str
    document: str


@dataclass(frozen=True)
class Declares:
    """Everything a stage type declares about its results (`Stage.declares`)."""

    measures: tuple[Measure, ...] = ()
    tables: tuple[Tables, ...] = ()
    distributions: tuple[Distribution, ...] = ()
    choice: Choice | None = None

    def shown_in_terminal(self, title: str) -> bool:
        return all(t.terminal for t in self.tables if t.matches(title))

    def distribution(self, title: str) -> Distribution | None:
        return next((d for d in self.distributions if d.matches(title)), None)

    def ports(self) -> tuple[str, ...]:
        """The output ports it names, which must exist (checked when the stage type is loaded)."""
        return (self.choice.model, self.choice.document) if self.choice is not None else ()


NOTHING = Declares()


def units(declared: Iterable[Declares]) -> dict[str, str]:
    """Each measure's unit by name, over several stage types' declarations (the first to declare a name wins)."""
    found: dict[str, str] = {}
    for declares in declared:
        for measure in declares.measures:
            found.setdefault(measure.name, measure.unit)
    return found


def unit_of(label: str, known: dict[str, str]) -> str:
    """The unit of an axis labelled with a measure's name, alone or as its first word ("speedup vs reference
    (p50)"); "" where no stage declared one."""
    return known.get(label, known.get(label.split(" ", 1)[0], ""))


def plotted(declared: Iterable[Declares], axis: Axis) -> Measure | None:
    """The first measure declared on `axis` of the speed-against-accuracy chart, or None."""
    return next((m for d in declared for m in d.measures if m.plot is axis), None)
