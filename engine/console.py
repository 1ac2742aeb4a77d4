"""Everything the CLI prints: tables, progress and one-line errors (rich, imported only here)."""

from __future__ import annotations

import logging
import sys
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator, NoReturn

from ortflow.engine.provenance import with_label
from ortflow.engine.run.plan import PlanAction
from ortflow.engine.run.scheduler import SchedulerEvents
from ortflow.engine.types import Status, dropped_text

PLAN_STYLE = {
    PlanAction.CACHED: "cyan",
    PlanAction.RUN: "green",
    PlanAction.SKIP: "yellow",
    PlanAction.FAIL: "red",
}
STATUS_STYLE = {
    Status.RAN: "green",
    Status.CACHED: "cyan",
    Status.FAILED: "bold red",
    Status.GATE_FAILED: "bold yellow",
    Status.SKIPPED: "yellow",
    Status.NOT_RUN: "dim",
}


class _WarningHandler(logging.Handler):
    """Warnings the engine logs (logger "ortflow") printed as the CLI prints everything else."""

    def __init__(self, output: "Output"):
        super().__init__(logging.WARNING)
        self.output = output

    def emit(self, record: logging.LogRecord) -> None:
        self.output.warn(record.getMessage())


def _route_warnings(output: "Output") -> None:
    logger = logging.getLogger("ortflow")
    for handler in [h for h in logger.handlers if isinstance(h, _WarningHandler)]:
        logger.removeHandler(handler)  # one per process: the newest Output (tests create many)
    logger.addHandler(_WarningHandler(output))


class Output:
    def __init__(self, quiet: bool = False, debug: bool = False, verbose: bool = False):
        from rich.console import Console

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
        self.console = Console(file=sys.stdout, highlight=False, emoji=False, width=width)
        self.errors = Console(file=sys.stderr, highlight=False, emoji=False)
        # rich ends a broken pipe with exit 1; say it as other tools do (`yes | head`: 141), still quietly
        self.console.on_broken_pipe = broken_pipe  # type: ignore[method-assign]
        _route_warnings(self)

    def say(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text, markup=False)

    def error(self, text: str) -> None:
        for line in text.splitlines():
            self.errors.print(f"error: {line}", style="red", markup=False, soft_wrap=True)

    def warn(self, text: str) -> None:
        for line in text.splitlines():
            self.errors.print(f"warning: {line}", style="yellow", markup=False, soft_wrap=True)

    def traceback(self) -> None:
        import traceback

        traceback.print_exc()

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
                    message, markup=False
                )  # the console's stream is not the stage's capture

        if display is not None:
            display.start()
        try:
            yield SchedulerEvents(started, board.finish, log)
        finally:
            if display is not None:
                display.stop()

    def transfer(self) -> Any:
        """A context manager for `cache push`/`pull` progress (engine.transfer_view)."""
        from ortflow.engine.transfer_view import transfer_meter

        return transfer_meter(self.console, self.quiet)

    def run_table(self, recipe: Any, summary: Any) -> None:
        from rich.table import Table

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
        if self.quiet:
            return
        table = Table(title=_escape(recipe.name), title_justify="left")
        for column in ("stage", "status", "seconds", "result"):
            # a matrix variant's id is whole or wrapped, never cut: cut ids read the same
            table.add_column(
                column,
                justify="right" if column == "seconds" else "left",
                overflow="fold" if column == "stage" else "ellipsis",
                no_wrap=column in ("status", "seconds"),
            )
        for outcome in summary.outcomes.values():
            record = outcome.record
            summary_text, data_source = (
                (record.summary, record.data_source) if record is not None else ("", None)
            )
            result = dropped_text(
                outcome.dropped_from, with_label(summary_text or outcome.error or "", data_source)
            )
            style = STATUS_STYLE.get(outcome.status, "")
            table.add_row(
                _escape(outcome.name),
                f"[{style}]{outcome.status}[/]",
                f"{outcome.seconds:.2f}",
                _escape(result),
            )
        self.console.print(table)
        self.report_sections(summary.sections)
        self.console.print(
            f"outputs and report: {_relative(summary.report_path.parent)}", markup=False
        )

    def _failure_details(self, outcome: Any) -> None:
        if self.debug and outcome.traceback:
            print(outcome.traceback, file=self.errors.file)
        if (self.debug or self.verbose) and outcome.printed:
            print(
                f"what stage '{outcome.name}' printed (last lines):\n{outcome.printed}",
                file=self.errors.file,
            )
        elif outcome.printed:
            self.error("run with -v for what the stage printed")
        if outcome.traceback and not self.debug:
            self.error("run with --debug for the traceback")

    def report_sections(self, sections: list[Any]) -> None:
        """The tables stages added to the report (benchmark results, accuracy), as the run ends; those their stage
        type declares too long for a terminal (report.json marks them `terminal: false`) stay in the report files."""
        from rich.table import Table

        for section in sections:
            for spec in section.get("tables", []):
                if spec.get("terminal") is False:
                    continue  # its stage type keeps it in the report files (Stage.declares: too long for a terminal)
                columns, rows, same = _varying_columns(spec["columns"], spec["rows"])
                title = f"{spec['title']} ({section['stage']})" + (
                    f"; every row: {same}" if same else ""
                )
                table = Table(title=_escape(title), title_justify="left")
                for column in columns:  # folded, never cut: two variant ids must not print alike
                    table.add_column(_escape(str(column)), overflow="fold")
                for row in rows:
                    table.add_row(*(_escape(_cell(v)) for v in row))
                self.console.print(table)

    def plan_table(self, planned: list[Any], matrices: dict[str, list[str]] | None = None) -> None:
        from rich.table import Table

        table = Table()
        for column in ("stage", "type", "action", "reason", "key"):
            table.add_column(column, overflow="fold")
        for item in planned:
            style = PLAN_STYLE[item.action]
            table.add_row(
                _escape(item.name),
                _escape(item.uses),
                f"[{style}]{item.action}[/]",
                _escape(item.reason),
                self._key(item.key),
            )
        self.console.print(table)
        would_run = sum(1 for p in planned if p.action == PlanAction.RUN)
        shown = {p.name for p in planned}
        expanded = [
            f"{t} x{n}"
            for t, ids in sorted((matrices or {}).items())
            if (n := len(shown & set(ids)))
        ]
        size = f" (matrix stages: {', '.join(expanded)})" if expanded else ""
        self.console.print(f"{would_run} of {len(planned)} stages would run{size}", markup=False)

    def compare_table(self, rows: list[tuple[str, str, str, str]]) -> None:
        from rich.table import Table

        table = Table()
        for column in ("stage", "field", "before", "after"):
            table.add_column(column)
        for row in rows:
            table.add_row(*(_escape(str(v)) for v in row))
        self.console.print(table if rows else "no differences")

    def status_table(self, rows: list[tuple[str, str, str]]) -> None:
        from rich.table import Table

        table = Table()
        for column in ("stage", "state", "reason"):
            table.add_column(column)
        for name, state, why in rows:
            style = "cyan" if state == "up to date" else "yellow"
            table.add_row(_escape(name), f"[{style}]{state}[/]", _escape(why))
        self.console.print(table)

    def stage_list(self, plugins: Any) -> None:
        from rich.table import Table

        from ortflow.engine import listings

        found = listings.plugins(plugins)
        table = Table(title="stage types (`uses:`)", title_justify="left")
        for column in ("type", "version", "inputs", "outputs", "provided by"):
            table.add_column(column)
        for item in found["stages"]:
            if "error" in item:
                table.add_row(
                    _escape(item["type"]),
                    "?",
                    "[red]cannot be imported[/]",
                    "",
                    _escape(item["error"]),
                )
                continue
            # a plugin's names and ports are its author's text: printed as written, never read as markup
            table.add_row(
                *(
                    _escape(str(v))
                    for v in (
                        item["type"],
                        item["version"],
                        ", ".join(item["inputs"]),
                        ", ".join(item["outputs"]),
                        item["provided_by"],
                    )
                )
            )
        self.console.print(table)
        loaders = Table(
            title="dataset loaders (`datasets: {name: {loader: ...}}`)", title_justify="left"
        )
        for column in ("loader", "version", "reads files from", "provided by"):
            loaders.add_column(column)
        for item in found["loaders"]:
            if "error" in item:
                loaders.add_row(
                    _escape(item["type"]), "?", "[red]cannot be imported[/]", _escape(item["error"])
                )
                continue
            loaders.add_row(
                *(
                    _escape(str(v))
                    for v in (
                        item["type"],
                        item["version"],
                        ", ".join(item["file_params"]) or "-",
                        item["provided_by"],
                    )
                )
            )
        self.console.print(loaders)
        metrics = Table(
            title="metrics (validate_accuracy's `metrics: {name: {...}}`)", title_justify="left"
        )
        for column in ("metric", "reports (better)", "provided by"):
            metrics.add_column(column)
        for item in found["metrics"]:
            names = item.get("names") or {}
            metrics.add_row(
                _escape(item["type"]),
                _escape(item.get("error") or ", ".join(f"{n} ({b})" for n, b in names.items())),
                _escape(item["provided_by"]),
            )
        self.console.print(metrics)
        self.console.print("`engine stages <name>` describes one", markup=False)

    def plugin_detail(self, registry: Any, name: str) -> None:
        from rich.table import Table

        cls = registry.get(name)
        version = f" (version {cls.version})" if hasattr(cls, "version") else ""
        self.console.print(
            f"[bold]{_escape(name)}[/]{version} from {_escape(registry.origin(name))}"
        )
        self.console.print(cls.description, markup=False)
        for metric in getattr(cls, "names", ()):
            self.console.print(
                f"reports {metric.name} (better {metric.better.value}): {metric.description}",
                markup=False,
            )
        if hasattr(cls, "outputs"):
            ports = Table(title="inputs and outputs", title_justify="left")
            for column in ("", "name", "kind", "description"):
                ports.add_column(column)
            for direction, items in (("in", cls.inputs), ("out", cls.outputs)):
                for port in items:
                    flags = (" (list)" if port.many else "") + (
                        " (optional)" if port.optional else ""
                    )
                    ports.add_row(
                        direction,
                        _escape(port.name + flags),
                        port.kind.value,
                        _escape(port.description),
                    )
            self.console.print(ports)
        self._declared(getattr(cls, "declares", None))
        params = Table(title="parameters (`with:`)", title_justify="left")
        for column in ("name", "type", "default", "description"):
            params.add_column(column)
        required = set(cls.params_schema.get("required", []))
        for pname, prop in cls.params_schema.get("properties", {}).items():
            kind = prop.get("type") or (
                "one of " + ", ".join(map(str, prop["enum"])) if "enum" in prop else "any"
            )
            if pname in getattr(cls, "file_params", ()):
                kind = "path or {package, file}"
            default = (
                repr(prop["default"])
                if "default" in prop
                else ("(required)" if pname in required else "(optional)")
            )
            params.add_row(
                _escape(pname),
                _escape(str(kind)),
                _escape(default),
                _escape(prop.get("description", "")),
            )
        self.console.print(params)

    def _declared(self, declares: Any) -> None:
        """What a stage type declares about its results (engine.declarations): its measures, its choice."""
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
        from rich.table import Table

        from ortflow.engine import listings

        table = Table(title=_escape(str(store.root)), title_justify="left")
        for column in ("key", "stage", "type", "created", "outputs", "MB"):
            table.add_column(column)
        runs = listings.cached_runs(store)
        for run in runs:
            if run.get("unreadable"):
                table.add_row(run["key"], "?", "?", "unreadable", "", "")
                continue
            table.add_row(
                run["key"],
                _escape(run["stage"]),
                _escape(run["type"]),
                run["created"],
                _escape(", ".join(run["outputs"])),
                f"{run['bytes'] / 1e6:.1f}",
            )
        self.console.print(table)
        self.console.print(
            f"{len(runs)} run records, {store.size() / 1e6:.1f} MB of objects", markup=False
        )

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


def _varying_columns(
    columns: list[Any], rows: list[list[Any]]
) -> tuple[list[Any], list[list[Any]], str]:
    """A terminal is narrow: a column with one value in every row (threads, batch, providers, ...) moves into
    the title as `name value`, so the columns that tell the rows apart keep their width. The report files
    keep every column. The first column (what each row is) always stays."""
    if len(rows) < 2:
        return columns, rows, ""
    constant = [i for i in range(1, len(columns)) if len({_cell(row[i]) for row in rows}) == 1]
    if not constant:
        return columns, rows, ""
    keep = [i for i in range(len(columns)) if i not in constant]
    same = ", ".join(
        f"{columns[i]} {_cell(rows[0][i])}" for i in constant if _cell(rows[0][i]) != ""
    )  # empty: dropped
    return [columns[i] for i in keep], [[row[i] for i in keep] for row in rows], same


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _relative(path: Any) -> str:
    from pathlib import Path

    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


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

    from ortflow.engine.errors import EXIT_BROKEN_PIPE

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(
        devnull, sys.stdout.fileno()
    )  # Python would otherwise complain again when it flushes at exit
    raise SystemExit(EXIT_BROKEN_PIPE)
