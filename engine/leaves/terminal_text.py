"""The one rule for showing text ortflow did not write itself (a record's summary and stage, file names and
paths, a plugin's or a library's error message): control characters are shown escaped, never sent.

A record served from a cache or a remote is someone else's word; `ESC]0;...`, `ESC[2J` or a bidi override
in it would retitle, clear or reorder the user's terminal. The terminal (engine.cli.safe_console: the
consoles engine.cli.console prints every line, table cell and traceback through) and report.html
(engine.publish.report_html, a floor below the CLI, which is why the rule is a leaf) apply the same rule, so a
text reads the same in both: every C0 and C1 control but newline and tab, DEL, and the Unicode
marks that reorder text, written as Python writes them in a string (`\\x1b`, `\\u202e`)."""

from __future__ import annotations

import re

# C0 controls but \t and \n, DEL and C1 controls, and the bidi marks, embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with every control character written out (`\\x1b[2J`) instead of acted on."""
    return _CONTROL.sub(_escaped, text)
