"""Tables that fit the terminal without splitting a word: rich, short of room, narrows columns evenly and
folds whatever no longer fits mid-word (a model `int8_dynamic` printed as `int8_dyn` over `amic`, a header
`throughput/s` as `throughp` over `ut/s`). Here each column keeps room for its longest unbreakable piece,
and text is broken only at spaces and after separators (`_`, `/`, `-`, `=`, `,`, `:`) or before a bracket,
so `int8_dynamic` becomes `int8_` over `dynamic` only when even that is needed. A table with more columns
than the width holds prints in parts, each repeating the first column."""

from __future__ import annotations

import copy
import re
from typing import Any

# Where a line may break inside a word: after one of these, or before an opening bracket.
# A hyphen only before a letter: `4.47e-07` is one number.
_BREAKS = re.compile(r"(?<=[_/=,:])(?=\S)|(?<=-)(?=[A-Za-z])|(?<=\S)(?=[\[(])")


def fit(table: Any, width: int) -> Any:
    """`table` with fixed column widths that fit `width` and cells wrapped where words allow; as given when
    it fits already. Too many columns for the width: parts side by side become parts one under another,
    each repeating the first column (what each row is)."""
    columns = table.columns
    if not columns or table.box is None:
        return table
    cells = [[_text(column.header)] + [_text(c) for c in column._cells] for column in columns]
    if any(cell is None for column in cells for cell in column):
        return table  # a renderable other than text: rich lays it out
    natural = [max((_longest_line(c) for c in column), default=0) for column in cells]
    smallest = [
        natural[i] if column.no_wrap else max((_longest_piece(c) for c in cells[i]), default=0)
        for i, column in enumerate(columns)
    ]
    if sum(natural) <= _room(width, len(columns)):
        return table
    if sum(smallest) > _room(width, len(columns)):
        return _parts(table, smallest, width)
    widths = _narrowed(natural, smallest, _room(width, len(columns)))
    for column, column_cells, chosen in zip(columns, cells, widths):
        column.width = chosen
        column.header = _wrapped(column_cells[0], chosen)
        column._cells = [_wrapped(cell, chosen) for cell in column_cells[1:]]
    return table


def _room(width: int, count: int) -> int:
    return width - (3 * count + 1)  # a space either side of each cell and a border between


def _parts(table: Any, smallest: list[int], width: int) -> Any:
    """The columns after the first in groups that fit beside it; rich's own folding where even two don't."""
    from rich.console import Group

    groups: list[list[int]] = [[]]
    for i in range(1, len(smallest)):
        if groups[-1] and smallest[0] + sum(smallest[j] for j in groups[-1]) + smallest[i] > _room(
            width, len(groups[-1]) + 2
        ):
            groups.append([])
        groups[-1].append(i)
    if len(groups) == 1:
        return table
    parts = []
    for number, group in enumerate(groups):
        part = copy.copy(table)
        part.columns = [copy.copy(table.columns[i]) for i in (0, *group)]
        if number:
            part.title = _continued(table.title)
        parts.append(fit(part, width))
    return Group(*parts)


def _continued(title: Any) -> Any:
    """`Latency (speed) (continued)`: the title up to its first `;` (what every row shares is said above)."""
    return f"{title.split(';')[0]} (continued)" if isinstance(title, str) and title else None


def _narrowed(natural: list[int], smallest: list[int], room: int) -> list[int]:
    """Narrow the widest column that can still give, one character at a time, until the table fits; the
    first column (what each row is) gives last."""
    widths = list(natural)
    while sum(widths) > room:
        giving = [i for i in range(1, len(widths)) if widths[i] > smallest[i]] or [0]
        widths[max(giving, key=widths.__getitem__)] -= 1
    return widths


def _text(cell: Any) -> Any:
    from rich.text import Text

    if isinstance(cell, Text):
        return cell
    if isinstance(cell, str):
        return Text.from_markup(cell, emoji=False)
    return None


def _longest_line(text: Any) -> int:
    return max((len(line) for line in text.plain.split("\n")), default=0)


def _longest_piece(text: Any) -> int:
    return max((len(piece) for word in text.plain.split() for piece in _pieces(word)), default=0)


def _pieces(word: str) -> list[str]:
    cuts = [0, *(m.start() for m in _BREAKS.finditer(word)), len(word)]
    return [word[a:b] for a, b in zip(cuts, cuts[1:])]


def _wrapped(text: Any, width: int) -> Any:
    """`text` (its styles kept) as lines of at most `width`, broken at spaces and separators."""
    from rich.text import Text

    lines: list[Any] = []
    start = 0
    for line in text.plain.split("\n"):
        lines.extend(_line_breaks(text[start : start + len(line)], width))
        start += len(line) + 1
    return Text("\n").join(lines)


def _line_breaks(line: Any, width: int) -> list[Any]:
    plain = line.plain
    if len(plain) <= width:
        return [line]
    allowed = sorted(
        {m.end() for m in re.finditer(r"\s+", plain)} | {m.start() for m in _BREAKS.finditer(plain)}
    )
    out, start = [], 0
    while len(plain) - start > width:
        fitting = [p for p in allowed if start < p and len(plain[start:p].rstrip()) <= width]
        cut = fitting[-1] if fitting else start + width  # a piece longer than the column: folded
        out.append(line[start : start + len(plain[start:cut].rstrip())])
        start = cut
    out.append(line[start:])
    return out
