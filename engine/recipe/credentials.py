"""A recipe is committed, cached and printed: a URL in it that carries credentials (user:secret@, a signed
query) would land in git, in run records and in reports. Refused where it stands, like ortflow.yaml's."""

from __future__ import annotations

from typing import Any

from ortflow.engine.leaves.errors import Problem
from ortflow.engine.leaves.secrets import pair_secrets, redact, url_secrets, value_secrets
from ortflow.engine.leaves.yamlsource import PathKey, SourceMap

FIX = (
    "take the credentials out of the URL: give them through the environment or the tool's credential files "
    "(docs/security.md)"
)


def credential_problems(data: Any, source: SourceMap) -> list[Problem]:
    """One problem for each string anywhere in the recipe that is a URL or a connection string holding
    credentials (the connection string is never shown: its secret is not marked off as a URL's is)."""
    return [
        Problem(_said(text), source.locate(where), FIX)
        for where, text in _strings(data, ())
        if value_secrets(text)
    ]


def _said(text: str) -> str:
    if url_secrets(text):
        return f"'{redact(text)}' carries {url_secrets(text).said()}"
    return f"a connection string (key=value; pairs) carries '{pair_secrets(text)[0]}'"


def _strings(value: Any, where: PathKey) -> list[tuple[PathKey, str]]:
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _strings(item, (*where, key))]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _strings(item, (*where, i))]
    return [(where, value)] if isinstance(value, str) else []
