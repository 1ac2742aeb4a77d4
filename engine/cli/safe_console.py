"""The console side of the terminal rule: a rich Console that sends every text it renders through
`printable` (engine.leaves.terminal_text), so nothing the CLI shows can drive the terminal.

It lives in the CLI, the only package that prints to a terminal (and the only one that needs rich's Console);
the rule itself stays a leaf because report.html (engine.publish.report_html, a floor below the CLI) applies
it too, and a text must read the same in both."""

from __future__ import annotations

from typing import Any

from ortflow.engine.leaves.terminal_text import printable


def safe_console(**options: Any) -> Any:
    """A rich Console that applies `printable` to every text it renders (printed lines, table cells and
    titles, the live display): rich itself drops only BEL, BS, CR, VT and FF, and passes ESC through. Its own
    colours are added after this, as styles, so they still reach the terminal."""
    from rich.console import Console
    from rich.text import Text

    class SafeConsole(Console):
        def render_str(self, text: str, **render: Any) -> Text:
            return super().render_str(printable(text), **render)

    return SafeConsole(**options)
