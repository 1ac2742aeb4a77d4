"""What a command may print, as a type: the commands (commands, trust_commands, starter_commands, doctor) take
an `Output` and never print by themselves. engine.cli.console.Output is the one implementation (rich, a terminal
or a pipe); a test or another front end can hand a command anything with these methods."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ortflow.engine.run.scheduler import SchedulerEvents


class Output(Protocol):
    quiet: bool
    debug: bool
    verbose: bool

    def say(self, text: str) -> None:
        """A line of normal output (stdout); nothing under --quiet."""

    def error(self, text: str) -> None:
        """A one-line error (stderr)."""

    def warn(self, text: str) -> None:
        """A warning (stderr)."""

    def traceback(self) -> None:
        """The exception being handled, in full (--debug)."""

    def json(self, data: Any) -> None:
        """`--json`: the data, as the JSON vocabulary of docs/cli.md."""

    def progress(self, recipe: Any) -> AbstractContextManager[SchedulerEvents]:
        """While a run goes on: the events the scheduler reports its stages through."""

    def transfer(self) -> Any:
        """A context manager for `cache push`/`pull` progress."""

    def run_table(self, recipe: Any, summary: Any) -> None: ...

    def plan_table(
        self, planned: list[Any], matrices: dict[str, list[str]] | None = None
    ) -> None: ...

    def compare_table(self, rows: list[tuple[str, str, str, str]]) -> None: ...

    def status_table(self, rows: list[tuple[str, str, str]]) -> None: ...

    def stage_list(self, plugins: Any) -> None: ...

    def plugin_detail(self, registry: Any, name: str) -> None: ...

    def cache_list(self, store: Any) -> None: ...

    def close(self) -> None:
        """Flush what is buffered; the command is over."""
