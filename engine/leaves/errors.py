"""Errors a user can act on: each names where the problem is and how to fix it."""

from __future__ import annotations

import errno
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ortflow.engine.contracts.provenance import DataSource

# Exit codes, documented in docs/cli.md.
EXIT_OK = 0
EXIT_STAGE_FAILED = 1
EXIT_USAGE = 2  # bad recipe, bad arguments, missing files: nothing ran
EXIT_GATE_FAILED = 3  # a stage ran and its quality gate said no
EXIT_INTERNAL = 4  # a bug in ortflow itself
EXIT_NO_SPACE = 5  # a disk filled up: the machine, not the recipe, stopped the run
# `engine optimize --require-real-data`: the delivered model's accuracy would rest only on random feeds (or data of
# unknown provenance), so nothing was delivered. Without the flag optimize exits 0 and labels the verdict
# "unverified: random feeds": a first try on a model needs no data, and a script or CI job that must tell a
# verified model from an unverified one asks for the flag and gets this distinct code (0 then always means verified).
EXIT_UNVERIFIED = 6
EXIT_DIFFERENT = 1  # `engine compare`: the two runs differ (as diff(1) says it)
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as `yes | head` leaves it


@dataclass(frozen=True)
class Location:
    """A place in a file (1-based line and column), or an origin such as `--set a.b=c`."""

    file: str
    line: int | None = None
    col: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Problem:
    message: str
    location: Location | None = None
    hint: str | None = None

    def __str__(self) -> str:
        text = f"{self.location}: {self.message}" if self.location else self.message
        return f"{text} — {self.hint}" if self.hint else text


class OrtflowError(Exception):
    """Base of every error the CLI prints as one line per problem, without a traceback."""

    exit_code = EXIT_USAGE


class RecipeError(OrtflowError):
    """One or more problems with a recipe, all reported at once."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(
            problems,
            key=lambda p: (
                str(p.location.file) if p.location else "",
                (p.location.line or 0) if p.location else 0,
                (p.location.col or 0) if p.location else 0,
            ),
        )
        super().__init__("\n".join(str(p) for p in self.problems))


class StoreError(OrtflowError):
    """The artifact store cannot be used as asked (a damaged entry, a missing object)."""


class StageError(OrtflowError):
    """Raised by a stage for a failure it can explain; the message is shown as is, without a traceback. The
    scheduler turns it into the stage's outcome (the run exits 1, EXIT_STAGE_FAILED); the CLI's boundary treats
    one that reaches it anyway as an engine bug (exit 4), as it did before StageError was an OrtflowError."""

    exit_code = EXIT_STAGE_FAILED


class GateFailed(StageError):
    """Raised by a stage whose quality gate rejected the result (exit code 3, distinct from a crash).
    `metrics` are kept in the run record like a StageResult's, so reports still show the numbers."""

    exit_code = EXIT_GATE_FAILED

    def __init__(
        self, message: str, metrics: dict | None = None, data_source: DataSource | None = None
    ):
        super().__init__(message)
        self.metrics = metrics or {}
        self.data_source = (
            data_source  # the data the failed verdict rests on (engine.contracts.provenance)
        )


def suggest(name: str, choices: "list[str] | tuple[str, ...] | set[str]") -> str | None:
    """'did you mean ...' text for the closest of `choices`, if any is close."""
    import difflib

    close = difflib.get_close_matches(name, sorted(choices), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


class ProviderUnavailable(StageError):
    """A stage needs an execution provider this machine cannot run; `optional: true` turns it into a skip."""


LOW_SPACE = 32 * 2**20  # bytes free under which a disk is taken to be why a write failed


def no_space(exc: BaseException | None) -> OSError | None:
    """The "no space left" (or quota) error behind `exc`, following its causes, if there is one."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def no_space_message(where: str) -> str:
    return (
        f"no space left on the disk holding {where} — free space there (or point ORTFLOW_CACHE / --cache at a "
        "bigger disk) and run again: finished stages are cached, and nothing partial was kept"
    )
