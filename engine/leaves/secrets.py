"""The one secret redactor: every line ortflow prints, logs or writes (error lines, --debug tracebacks, warnings,
report.json/html, run records, lock files, `status` and `cache` output) passes through `redact`, so a URL that
carries credentials is never shown with them, whichever path the text took to the output.

Credentials in a URL are found the way a URL's authority is read by a person, not by `urlsplit`: the userinfo
runs to the LAST `@` of the URL, because a secret may hold `/`, `:`, `#`, `?`, `%` or `@` itself (about half of
AWS secret keys hold a `/`, where `urlsplit` ends the netloc and then prints the rest as the path). A query
parameter or fragment that names a secret (`?X-Amz-Signature=`, `token=`, `sig=`, `#access_token=`) is
redacted too; a fragment is never needed to reach a remote, so it is hidden whole.

The value of a secret-bearing environment variable (the team's signing keys, AWS_SECRET_ACCESS_KEY, any
*TOKEN*, *PASSWORD*...) is masked wherever it appears, whatever error or traceback carried it there: a key
pasted where a path belongs (ORTFLOW_SIGNING_KEY_FILE="$(cat team.key)") once reached the terminal through an
error line that named the missing "file"."""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator, TypeVar, cast

MASK = "***"
T = TypeVar("T")
# Words that make a query parameter, a config key or an option name a secret (matched within the lowercased name).
SECRET_WORDS = (
    "secret",
    "token",
    "password",
    "passwd",
    "key",
    "signature",
    "credential",
    "sig",
    "auth",
)
# scheme://rest, where rest runs to whitespace or a quote (a URL quoted inside a message ends at its quote).
_URL = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://(?P<rest>[^\s'\"<>`]*)")


@dataclass(frozen=True)
class UrlSecrets:
    """Where a URL carries credentials: `userinfo` (user:secret@), and the names of secret-bearing query or
    fragment parameters. Names only: the values are never kept."""

    userinfo: bool
    parameters: tuple[str, ...]

    def __bool__(self) -> bool:
        return self.userinfo or bool(self.parameters)

    def said(self) -> str:
        """What was found, for an error line: `user:secret@` or `the query parameter 'token'`."""
        if self.userinfo:
            return "credentials before the last '@' (user:secret@host)"
        return f"the parameter '{self.parameters[0]}'"


def is_secret_name(name: object) -> bool:
    """Whether a parameter or option named `name` holds a secret (token, aws_secret_access_key, sig, ...)."""
    lowered = str(name).lower()
    return any(word in lowered for word in SECRET_WORDS)


def _split(rest: str) -> tuple[str | None, str]:
    """(userinfo or None, what follows it). An authority that starts with `/` (file:///x@y) is empty, so an
    `@` there is the path's; otherwise everything up to the last `@` is userinfo, whatever it holds."""
    if rest.startswith("/") or "@" not in rest:
        return None, rest
    userinfo, _, after = rest.rpartition("@")
    return userinfo, after


def url_secrets(url: str) -> UrlSecrets:
    """The credentials a URL carries (empty when it carries none)."""
    match = _URL.match(url.strip())
    if match is None:
        return UrlSecrets(False, ())
    userinfo, after = _split(url.strip()[match.start("rest") :])
    parameters = tuple(name for name, _ in _parameters(after) if is_secret_name(name))
    return UrlSecrets(userinfo is not None, parameters)


_PAIR_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")


def pair_secrets(text: str) -> tuple[str, ...]:
    """The secret-named keys of a value that parses as `key=value;` pairs (an Azure connection string:
    `DefaultEndpointsProtocol=https;AccountName=x;AccountKey=...`, an ODBC-style DSN): a value whose every
    `;`-separated part is `name=value`. Names only: the values are never kept."""
    parts = [part.strip() for part in text.strip().split(";") if part.strip()]
    if not parts:
        return ()
    pairs = [part.partition("=") for part in parts]
    if not all(sep and _PAIR_NAME.fullmatch(name.strip()) for name, sep, _ in pairs):
        return ()
    return tuple(name.strip() for name, _, value in pairs if is_secret_name(name) and value.strip())


def value_secrets(text: str) -> str | None:
    """What makes a configuration string a credential, for an error line (never the value): a URL holding
    one, or `key=value;` pairs with a secret-named key; None when it holds none."""
    found = url_secrets(text)
    if found:
        return f"the URL holds {found.said()}"
    pairs = pair_secrets(text)
    if pairs:
        return f"the value is a connection string (key=value; pairs) holding '{pairs[0]}'"
    return None


# A connection string inside any text: two or more `name=value` pairs joined by `;`.
_PAIRS = re.compile(
    r"(?:[A-Za-z][A-Za-z0-9_.\-]*=[^;\s'\"]*;)+(?:[A-Za-z][A-Za-z0-9_.\-]*=[^;\s'\"]*;?)?"
)


def _redact_pairs(match: re.Match[str]) -> str:
    return ";".join(_masked(part) for part in match.group().split(";"))


def _parameters(after: str) -> list[tuple[str, str]]:
    """(name, value) of the query's and the fragment's `name=value` parts."""
    found = []
    for part in re.split(r"[?&#;]", after.partition("?")[2] + "#" + after.partition("#")[2]):
        name, sep, value = part.partition("=")
        if sep:
            found.append((name, value))
    return found


def _redact_url(match: re.Match[str]) -> str:
    userinfo, after = _split(match["rest"])
    head, hash_mark, fragment = after.partition("#")
    path, question, query = head.partition("?")
    if query:
        query = "&".join(_masked(part) for part in query.split("&"))
    shown = f"{match['scheme']}://" + (f"{MASK}@" if userinfo is not None else "") + path
    return shown + question + query + (hash_mark + MASK if fragment else hash_mark)


def _masked(part: str) -> str:
    name, sep, _ = part.partition("=")
    return f"{name}={MASK}" if sep and is_secret_name(name) else part


KEY_VARIABLES = "ORTFLOW_SIGNING_KEY"  # the prefix of every variable that holds or names a team key
_PLAIN_WORD = re.compile(r"[a-z_\-]*")
SHORTEST_MASKED = 8  # a shorter value of another secret-named variable (TOKENIZERS_PARALLELISM=false) is no secret


def _secret_variables() -> tuple[tuple[str, str], ...]:
    return tuple(
        (name, value)
        for name, value in os.environ.items()
        if value and (name.startswith(KEY_VARIABLES) or is_secret_name(name))
    )


@lru_cache(maxsize=16)
def _masked_values(variables: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The values to mask, longest first: a value that names an existing file or folder is a path, not a
    secret; each line or comma-separated part of the team's key variables is masked on its own too."""
    found: set[str] = set()
    for name, value in variables:
        if os.path.exists(os.path.expanduser(value.strip())):
            continue
        ours = name.startswith(KEY_VARIABLES)
        if not ours and _PLAIN_WORD.fullmatch(value.strip()):
            continue  # PIP_KEYRING_PROVIDER=subprocess: a setting, and masking "subprocess" would garble tracebacks
        parts = [value, value.strip(), *re.split(r"[\n,]", value)] if ours else [value]
        found.update(p.strip() for p in parts if len(p.strip()) >= (4 if ours else SHORTEST_MASKED))
    return tuple(sorted(found, key=len, reverse=True))


def redact(text: str) -> str:
    """`text` with the credentials of every URL in it replaced by ***, and the value of every secret-bearing
    environment variable too: a URL alone, an error line, a traceback."""
    for value in _masked_values(_secret_variables()):
        if value in text:
            text = text.replace(value, MASK)
    if ";" in text and "=" in text:
        text = _PAIRS.sub(_redact_pairs, text)
    if "://" not in text:
        return text  # the common case, kept cheap: this runs on every line printed
    return _URL.sub(_redact_url, text)


def redact_json(value: T) -> T:
    """A JSON-like value (a report, a run record, a lock) with every string in it passed through `redact`."""
    if isinstance(value, str):
        return cast(T, redact(value))
    if isinstance(value, dict):
        return cast(
            T, {redact(k) if isinstance(k, str) else k: redact_json(v) for k, v in value.items()}
        )
    if isinstance(value, (list, tuple)):
        return cast(T, type(value)(redact_json(item) for item in value))
    return value


class RedactingStream:
    """A text stream that passes everything written to it through `redact`: the CLI's stdout and stderr while a
    command runs, so tables, warnings, a stage's printed lines, logging's last-resort handler and --debug
    tracebacks (whose exception messages can embed a URL) all reach the terminal redacted. Each write is one
    print's text or one traceback line, so a URL is never split between two writes."""

    def __init__(self, stream: Any):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding: the stream's own
        return getattr(self.stream, name)


@contextmanager
def redacted_output() -> Iterator[None]:
    """sys.stdout and sys.stderr redacted for the duration (engine.cli.app.main runs every command inside)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
