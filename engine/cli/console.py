"""Everything the CLI prints: tables, progress and one-line errors (rich, imported only here and in the
tables this prints, engine.cli.console_tables)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, NoReturn

from ortflow.engine.cli import console_tables as tables
from ortflow.engine.cli.safe_console import safe_console
from ortflow.engine.contracts.types import Status, dropped_text
from ortflow.engine.leaves.secrets import redact
from ortflow.engine.leaves.terminal_text import printable
from ortflow.engine.leaves.wording import counted
from ortflow.engine.run.scheduler import SchedulerEvents


class _WarningHandler(logging.Handler):
    """Warnings the engine logs (logger "ortflow") printed as the CLI prints everything else."""

    def __init__(self, output: "Output"):
        super().__init__(logging.WARNING)
        self.output = output

    def emit(self, record: logging.LogRecord) -> None:
        self.output.warn(record.getMessage())


def _route_warnings(output: "Output") -> _WarningHandler:
    logger = logging.getLogger("ortflow")
    for handler in [h for h in logger.handlers if isinstance(h, _WarningHandler)]:
        logger.removeHandler(handler)  # one per process: the newest Output (tests create many)
    handler = _WarningHandler(output)
    logger.addHandler(handler)
    return handler


class Output:
    def __init__(self, quiet: bool = False, debug: bool = False, verbose: bool = False):
        self.quiet = quiet
        self.debug = debug
        self.verbose = verbose
        import os

        # Piped output gets rich's 80 columns, which cuts stage names and numbers: use a wide page instead.
        width = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
        # The consoles own the streams as they are now, before a stage's capture (engine.run.capture) replaces
        # sys.stdout with its per-thread router: the display never writes through a stage's capture, and
        # nothing is redirected into the display (rich's own redirection wrapped in that router wrote into
        # itself forever, so a run in a terminal never returned).
        # emoji=False: ":100:" in "recipe.yaml:100:3" is a location, not an emoji code; user text prints as written
        # Every text they render passes the one terminal sanitiser (engine.cli.safe_console): a record's summary, a
        # file name or a library's message cannot drive the terminal.
        self.console = safe_console(file=sys.stdout, highlight=False, emoji=False, width=width)
        self.errors = safe_console(file=sys.stderr, highlight=False, emoji=False)
        # rich ends a broken pipe with exit 1; say it as other tools do (`yes | head`: 141), still quietly
        self.console.on_broken_pipe = broken_pipe
        self._warnings = _route_warnings(self)

    def close(self) -> None:
        """The command is over: its streams may close (a test's captured stderr), so warnings logged after it
        (a library call in the same process) go to logging's default handling, not to a closed stream."""
        logging.getLogger("ortflow").removeHandler(self._warnings)

    def say(self, text: str) -> None:
        if not self.quiet:  # redacted before rich wraps it: a URL folded across lines loses its '@'
            self.console.print(redact(text), markup=False)

    def error(self, text: str) -> None:
        for line in text.splitlines():
            self.errors.print(f"error: {line}", style="red", markup=False, soft_wrap=True)

    def warn(self, text: str) -> None:
        for line in text.splitlines():
            self.errors.print(f"warning: {line}", style="yellow", markup=False, soft_wrap=True)

    def traceback(self) -> None:
        import traceback

        print(printable(traceback.format_exc()), end="", file=sys.stderr)

    @contextmanager
    def progress(self, recipe: Any) -> Iterator[SchedulerEvents]:
        """While a run goes on: in a terminal, a spinner naming the running stages and how long each has run
        (redrawn by rich's Live, the one owner of the terminal); piped, a line as each stage starts. Lines a
        stage logs (its progress) are printed above the spinner through the same console."""
        from rich.live import Live

        board = _Board(len(recipe.stages))
        live = self.console.is_terminal and not self.quiet
        # No redirection of sys.stdout/sys.stderr: a stage's own output is captured per thread (run.capture).
        display = (
            Live(
                console=self.console,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
                refresh_per_second=4,
                get_renderable=board.render,
            )
            if live
            else None
        )

        def started(name: str) -> None:
            board.start(name)
            if not live and not self.quiet:
                self.console.print(f"running {name} ({recipe.stages[name].uses})", markup=False)

        def log(message: str) -> None:
            if not self.quiet:
                self.console.print(
                    redact(message), markup=False
                )  # the console's stream is not the stage's capture

        if display is not None:
            display.start()
        try:
            yield SchedulerEvents(started, board.finish, log)
        finally:
            if display is not None:
                display.stop()

    def transfer(self) -> Any:
        """A context manager for `cache push`/`pull` progress (engine.cli.transfer_view)."""
        from ortflow.engine.cli.transfer_view import transfer_meter

        return transfer_meter(self.console, self.quiet)

    def run_table(self, recipe: Any, summary: Any) -> None:
        self._run_messages(recipe, summary)
        if self.quiet:
            return
        self._table(tables.run_table(recipe.name, list(summary.outcomes.values())))
        self.report_sections(summary.sections)
        self.console.print(
            f"outputs and report: {_relative(summary.report_path.parent)}", markup=False
        )

    def _run_messages(self, recipe: Any, summary: Any) -> None:
        """On stderr, even when quiet: each failed stage (with what to run for its details), each optional
        stage's refusal (said, but not the run's failure) and the run's warnings."""
        for outcome in summary.outcomes.values():
            spec = recipe.stages[outcome.name]
            if (
                outcome.tolerated and outcome.error
            ):  # an optional stage's refusal: said, but not the run's failure
                said = (", " if outcome.dropped_from else ": ") + dropped_text(
                    outcome.dropped_from, outcome.error
                )
                self.warn(
                    f"{spec.location}: optional stage '{outcome.name}' ({spec.uses}) {outcome.status}{said}"
                )
            elif outcome.status in (Status.FAILED, Status.GATE_FAILED):
                self.error(
                    f"{spec.location}: stage '{outcome.name}' ({spec.uses}) {outcome.status}: {outcome.error}"
                )
                self._failure_details(outcome)
        for warning in summary.warnings:
            self.errors.print(f"warning: {warning}", style="yellow", markup=False, soft_wrap=True)
        if summary.disk_full:  # out/ filled up: the stages built, the run exits 5
            self.error(summary.disk_full)

    def _failure_details(self, outcome: Any) -> None:
        if self.debug and outcome.traceback:
            print(printable(outcome.traceback), file=self.errors.file)
        if (self.debug or self.verbose) and outcome.printed:
            print(
                printable(f"what stage '{outcome.name}' printed (last lines):\n{outcome.printed}"),
                file=self.errors.file,
            )
        elif outcome.printed:
            self.error("run with -v for what the stage printed")
        if outcome.traceback and not self.debug:
            self.error("run with --debug for the traceback")

    def report_sections(self, sections: list[Any]) -> None:
        """The tables stages added to the report (engine.cli.console_tables.section_tables)."""
        for table in tables.section_tables(sections):
            self._table(table)

    def plan_table(self, planned: list[Any], matrices: dict[str, list[str]] | None = None) -> None:
        self._table(tables.plan_table(planned, self._key))
        self.console.print(tables.plan_summary(planned, matrices), markup=False)

    def compare_table(self, rows: list[tuple[str, str, str, str]]) -> None:
        self._table(tables.compare_table(rows)) if rows else self.console.print("no differences")

    def status_table(self, rows: list[tuple[str, str, str]]) -> None:
        self._table(tables.status_table(rows))

    def stage_list(self, plugins: Any) -> None:
        from ortflow.engine.cli import listings

        found = listings.plugins(plugins)
        self._table(tables.stage_types_table(found["stages"]))
        self._table(tables.loaders_table(found["loaders"]))
        self._table(tables.metrics_table(found["metrics"]))
        self.console.print("`engine stages <name>` describes one", markup=False)

    def plugin_detail(self, registry: Any, name: str) -> None:
        cls = registry.get(name)
        version = f" (version {cls.version})" if hasattr(cls, "version") else ""
        self.console.print(
            f"[bold]{tables.escape(name)}[/]{version} from {tables.escape(registry.origin(name))}"
        )
        self.console.print(cls.description, markup=False)
        for metric in getattr(cls, "names", ()):
            self.console.print(
                f"reports {metric.name} (better {metric.better.value}): {metric.description}",
                markup=False,
            )
        if hasattr(cls, "outputs"):
            self._table(tables.ports_table(cls))
        self._declared(getattr(cls, "declares", None))
        self._table(tables.params_table(cls))

    def _declared(self, declares: Any) -> None:
        """What a stage type declares about its results (engine.contracts.declarations): its measures, its choice."""
        for m in getattr(declares, "measures", ()):
            unit = f"{m.unit}, " if m.unit else ""
            plotted = f"; plotted on the report's {m.plot.value} axis" if m.plot is not None else ""
            self.console.print(
                f"reports {m.name} per model ({unit}better {m.better.value}){plotted}", markup=False
            )
        if getattr(declares, "choice", None) is not None:
            self.console.print(
                f"chooses a model: output `{declares.choice.model}`, why in `{declares.choice.document}`",
                markup=False,
            )

    def cache_list(self, store: Any) -> None:
        from ortflow.engine.cli import listings

        runs = listings.cached_runs(store)
        self._table(tables.cache_table(str(store.root), runs))
        self.console.print(
            f"{counted(len(runs), 'run record')}, {store.size() / 1e6:.1f} MB of objects",
            markup=False,
        )

    def _table(self, table: Any) -> None:
        """A table at the console's width, words whole (engine.cli.table_fit)."""
        from ortflow.engine.cli.table_fit import fit

        self.console.print(fit(table, self.console.width))

    def json(self, data: Any) -> None:
        """Machine-readable output (`--json`): plain JSON on stdout, nothing else."""
        import json

        self.console.file.write(json.dumps(data, indent=2, default=str) + "\n")
        self.console.file.flush()

    def _key(self, key: str | None) -> str:
        """Cache keys in tables: 12 characters (unique in practice, like git's short hashes); -v shows them whole."""
        if key is None:
            return "(after upstream)"
        return key if self.verbose else key[:12]


def _relative(path: Any) -> str:
    from pathlib import Path

    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _Board:
    """What the spinner shows: finished/total and each running stage with its elapsed seconds."""

    def __init__(self, total: int):
        from rich.spinner import Spinner

        self.total, self.done = total, 0
        self.running: dict[str, float] = {}
        self.lock = threading.Lock()
        self.spinner = Spinner("dots")  # one spinner, so its animation goes on between redraws

    def start(self, name: str) -> None:
        with self.lock:
            self.running[name] = time.monotonic()

    def finish(self, outcome: Any) -> None:
        with self.lock:
            self.running.pop(outcome.name, None)
            self.done += 1

    def render(self) -> Any:
        from rich.text import Text

        with self.lock:
            now = time.monotonic()
            names = (
                ", ".join(f"{name} {now - since:.0f}s" for name, since in self.running.items())
                or "-"
            )
            # a Text, not a str: rich reads a str as markup, and a matrix id `int8[per_channel=true]` is a tag to it
            self.spinner.update(text=Text(f"[{self.done}/{self.total}] running: {names}"))
            return self.spinner


def broken_pipe() -> NoReturn:
    """The reader of our output went away (`engine plan | head`): stop quietly with 141, as other tools do."""
    import os

    from ortflow.engine.leaves.errors import EXIT_BROKEN_PIPE

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(
        devnull, sys.stdout.fileno()
    )  # Python would otherwise complain again when it flushes at exit
    raise SystemExit(EXIT_BROKEN_PIPE)
