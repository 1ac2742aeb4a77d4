"""Terminal tables at 80 columns never split a word (engine.cli.table_fit): the quickstart's latency table, with
its real model names, printed as `engine run` prints it. Layout only: the numbers are placeholders."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ortflow.engine.cli.console import Output

QUICKSTART = Path(__file__).parents[2] / "recipes" / "quickstart.yaml"
COLUMNS = ["model", "p50 ms", "p90 ms", "p99 ms", "mean ms", "throughput/s", "vs model", "size MB"]


def quickstart_models() -> list[str]:
    """The benchmark's rows: each model the quickstart times, named as its table names it."""
    stages = yaml.safe_load(QUICKSTART.read_text())["stages"]
    timed = next(spec for spec in stages.values() if spec["uses"] == "benchmark")["in"]["models"]
    return [ref.split(".")[1] if ref.startswith("inputs.") else ref.split(".")[0] for ref in timed]


def printed(monkeypatch, capsys, columns: int) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    models = quickstart_models()
    rows = [  # each column varies (a column the same in every row moves into the title)
        [m, 65.07 + i, 97.42 + i, 131.0 + i, 67.4 + i, 14.84 + i, f"1.0{i}x", 4.47e-07 * (i + 1)]
        for i, m in enumerate(models)
    ]
    Output().report_sections(
        [{"stage": "speed", "tables": [{"title": "Latency", "columns": COLUMNS, "rows": rows}]}]
    )
    return capsys.readouterr().out


def cells(out: str) -> list[str]:
    """Every cell's text, line by line, from the table's body and header."""
    return [cell.strip() for line in out.splitlines() for cell in re.split(r"[│┃]", line)[1:-1]]


def test_the_latency_table_at_80_columns_keeps_every_model_name_whole(monkeypatch, capsys):
    out = printed(monkeypatch, capsys, 80)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    found = cells(out)
    assert "int8_dynamic" in quickstart_models()  # the name rich split as `int8_dyn` / `amic`
    assert all(model in found for model in quickstart_models()), out
    assert "4.47e-07" in found and "8.94e-07" in found  # a number is one word too
    assert not any(cell in ("amic", "ut/s", "d") for cell in found), out


def test_a_table_too_wide_for_the_terminal_continues_below_with_the_names_again(
    monkeypatch, capsys
):
    out = printed(monkeypatch, capsys, 60)
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 60
    assert "Latency (speed) (continued)" in out
    found = cells(out)
    for model in quickstart_models():  # whole, in both parts
        assert found.count(model) >= 2, out
    for column in COLUMNS:  # every column is shown, in one part or the other
        assert column.split()[0].split("/")[0] in " ".join(found)
