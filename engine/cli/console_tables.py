"""The tables the CLI prints (rich Tables, built from plain data; engine.cli.console prints them): a run's stages,
the sections stages added to the report, a plan, a status, a comparison, the installed plugins and one
plugin's detail, the cache. Every text a user or a plugin wrote is escaped: printed as written, never read as
markup. rich is imported inside each function, so importing this module costs nothing."""

from __future__ import annotations

from typing import Any, Callable

from ortflow.engine.contracts.provenance import with_label
from ortflow.engine.contracts.types import Status, dropped_text
from ortflow.engine.leaves.secrets import redact
from ortflow.engine.leaves.wording import counted
from ortflow.engine.run.plan import PlanAction

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


def run_table(title: str, outcomes: list[Any]) -> Any:
    """Each stage of a run: its status, seconds and result (its summary, or its error)."""
    from rich.table import Table

    table = Table(title=escape(title), title_justify="left")
    for column in ("stage", "status", "seconds", "result"):
        # a matrix variant's id is whole or wrapped, never cut: cut ids read the same
        table.add_column(
            column,
            justify="right" if column == "seconds" else "left",
            overflow="fold" if column == "stage" else "ellipsis",
            no_wrap=column in ("status", "seconds"),
        )
    for outcome in outcomes:
        record = outcome.record
        summary_text, data_source = (
            (record.summary, record.data_source) if record is not None else ("", None)
        )
        result = dropped_text(
            outcome.dropped_from, with_label(summary_text or outcome.error or "", data_source)
        )
        style = STATUS_STYLE.get(outcome.status, "")
        table.add_row(
            escape(outcome.name),
            f"[{style}]{outcome.status}[/]",
            f"{outcome.seconds:.2f}",
            escape(result),
        )
    return table


def section_tables(sections: list[Any]) -> list[Any]:
    """The tables stages added to the report (benchmark results, accuracy), as the run ends; those their stage
    type declares too long for a terminal (report.json marks them `terminal: false`) stay in the report files."""
    from rich.table import Table

    tables = []
    for section in sections:
        for spec in section.get("tables", []):
            if spec.get("terminal") is False:
                continue  # its stage type keeps it in the report files (Stage.declares: too long for a terminal)
            columns, rows, same = _varying_columns(spec["columns"], spec["rows"])
            title = f"{spec['title']} ({section['stage']})" + (
                f"; every row: {same}" if same else ""
            )
            table = Table(title=escape(title), title_justify="left")
            for column in columns:  # folded, never cut: two variant ids must not print alike
                table.add_column(escape(str(column)), overflow="fold")
            for row in rows:
                table.add_row(*(escape(_cell(v)) for v in row))
            tables.append(table)
    return tables


def plan_table(planned: list[Any], key: Callable[[str | None], str]) -> Any:
    """Each planned stage: what a run would do with it and why; `key` shows its cache key."""
    from rich.table import Table

    table = Table()
    for column in ("stage", "type", "action", "reason", "key"):
        table.add_column(column, overflow="fold")
    for item in planned:
        style = PLAN_STYLE[item.action]
        table.add_row(
            escape(item.name),
            escape(item.uses),
            f"[{style}]{item.action}[/]",
            escape(item.reason),
            key(item.key),
        )
    return table


def plan_summary(planned: list[Any], matrices: dict[str, list[str]] | None) -> str:
    """How many planned stages would run, and how many variants each matrix stage shown expands to."""
    would_run = sum(1 for p in planned if p.action == PlanAction.RUN)
    shown = {p.name for p in planned}
    expanded = [
        f"{t} x{n}" for t, ids in sorted((matrices or {}).items()) if (n := len(shown & set(ids)))
    ]
    size = f" (matrix stages: {', '.join(expanded)})" if expanded else ""
    return f"{would_run} of {counted(len(planned), 'stage')} would run{size}"


def compare_table(rows: list[tuple[str, str, str, str]]) -> Any:
    from rich.table import Table

    table = Table()
    for column in ("stage", "field", "before", "after"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape(str(v)) for v in row))
    return table


def status_table(rows: list[tuple[str, str, str]]) -> Any:
    from rich.table import Table

    table = Table()
    for column in ("stage", "state", "reason"):
        table.add_column(column)
    for name, state, why in rows:
        style = "cyan" if state == "up to date" else "yellow"
        table.add_row(escape(name), f"[{style}]{state}[/]", escape(why))
    return table


def stage_types_table(stages: list[Any]) -> Any:
    """The installed stage types (engine.cli.listings.plugins' `stages`); one that cannot be imported says why."""
    from rich.table import Table

    table = Table(title="stage types (`uses:`)", title_justify="left")
    for column in ("type", "version", "inputs", "outputs", "provided by"):
        table.add_column(column)
    for item in stages:
        if "error" in item:
            table.add_row(
                escape(item["type"]),
                "?",
                "[red]cannot be imported[/]",
                "",
                escape(item["error"]),
            )
            continue
        # a plugin's names and ports are its author's text: printed as written, never read as markup
        table.add_row(
            *(
                escape(str(v))
                for v in (
                    item["type"],
                    item["version"],
                    ", ".join(item["inputs"]),
                    ", ".join(item["outputs"]),
                    item["provided_by"],
                )
            )
        )
    return table


def loaders_table(loaders: list[Any]) -> Any:
    """The installed dataset loaders (engine.cli.listings.plugins' `loaders`)."""
    from rich.table import Table

    table = Table(title="dataset loaders (`datasets: {name: {loader: ...}}`)", title_justify="left")
    for column in ("loader", "version", "reads files from", "provided by"):
        table.add_column(column)
    for item in loaders:
        if "error" in item:
            table.add_row(
                escape(item["type"]), "?", "[red]cannot be imported[/]", escape(item["error"])
            )
            continue
        table.add_row(
            *(
                escape(str(v))
                for v in (
                    item["type"],
                    item["version"],
                    ", ".join(item["file_params"]) or "-",
                    item["provided_by"],
                )
            )
        )
    return table


def metrics_table(metrics: list[Any]) -> Any:
    """The installed metrics (engine.cli.listings.plugins' `metrics`): what each reports, which way is better."""
    from rich.table import Table

    table = Table(
        title="metrics (validate_accuracy's `metrics: {name: {...}}`)", title_justify="left"
    )
    for column in ("metric", "reports (better)", "provided by"):
        table.add_column(column)
    for item in metrics:
        names = item.get("names") or {}
        table.add_row(
            escape(item["type"]),
            escape(item.get("error") or ", ".join(f"{n} ({b})" for n, b in names.items())),
            escape(item["provided_by"]),
        )
    return table


def ports_table(cls: Any) -> Any:
    """A stage type's inputs and outputs, each with its kind and whether it is a list or optional."""
    from rich.table import Table

    ports = Table(title="inputs and outputs", title_justify="left")
    for column in ("", "name", "kind", "description"):
        ports.add_column(column)
    for direction, items in (("in", cls.inputs), ("out", cls.outputs)):
        for port in items:
            flags = (" (list)" if port.many else "") + (" (optional)" if port.optional else "")
            ports.add_row(
                direction,
                escape(port.name + flags),
                port.kind.value,
                escape(port.description),
            )
    return ports


def params_table(cls: Any) -> Any:
    """A plugin's parameters (`with:`) from its JSON Schema: type, default (or whether required), description."""
    from rich.table import Table

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
            escape(pname),
            escape(str(kind)),
            escape(default),
            escape(prop.get("description", "")),
        )
    return params


def cache_table(title: str, runs: list[Any]) -> Any:
    """The run records in the cache (engine.cli.listings.cached_runs); an unreadable one is listed as such."""
    from rich.table import Table

    table = Table(title=escape(title), title_justify="left")
    for column in ("key", "stage", "type", "created", "outputs", "MB"):
        table.add_column(column)
    for run in runs:
        if run.get("unreadable"):
            table.add_row(run["key"], "?", "?", "unreadable", "", "")
            continue
        table.add_row(
            run["key"],
            escape(run["stage"]),
            escape(run["type"]),
            run["created"],
            escape(", ".join(run["outputs"])),
            f"{run['bytes'] / 1e6:.1f}",
        )
    return table


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


def escape(text: str) -> str:
    """Text printed as written (rich would read `[...]` in it as markup), a URL's credentials redacted before
    the table pads, folds or cuts the cell: a cut URL has lost the `@` that the output stream's redactor finds."""
    from rich.markup import escape as rich_escape

    return rich_escape(redact(text))
