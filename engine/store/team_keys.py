"""Where the team's signing keys come from, and the rules they are held to (docs/cache.md#rotating-the-team-key).

- The current key signs and verifies: `$ORTFLOW_SIGNING_KEY`, else the file `$ORTFLOW_SIGNING_KEY_FILE` names.
  Both set is a warning naming the winner: a revoked key left in the variable beside a new file would go on
  signing and verifying, silently. A file variable that holds key material instead of a path is refused, and
  no error ever prints a key variable's value (engine.leaves.secrets masks them in every line printed).
- A key that signs must have at least MIN_KEY_CHARS characters (`engine cache key new` writes 64 hex digits,
  32 random bytes): a shorter current key is refused. Previous keys only verify what was signed before a
  rotation; a short one is accepted with a warning that names the fix (re-sign, then drop it).
- Previous keys come one a line: from the file `$ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE`, or from
  `$ORTFLOW_SIGNING_KEYS_PREVIOUS` written with newlines. The old comma-separated form is split only where every
  part is a 64-hex-digit key (which holds no comma, so no key is ever cut in two); any other value with a comma
  is one key, with a warning: `weak,long-old-secret` once made `weak` a key of its own."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from ortflow.engine.leaves.errors import StoreError

SIGNING_KEY_ENV = "ORTFLOW_SIGNING_KEY"
SIGNING_KEY_FILE_ENV = "ORTFLOW_SIGNING_KEY_FILE"
PREVIOUS_KEYS_ENV = "ORTFLOW_SIGNING_KEYS_PREVIOUS"
PREVIOUS_KEYS_FILE_ENV = "ORTFLOW_SIGNING_KEYS_PREVIOUS_FILE"
KEY_VARIABLES = (SIGNING_KEY_ENV, SIGNING_KEY_FILE_ENV, PREVIOUS_KEYS_ENV)  # values never printed
MIN_KEY_CHARS = 32
HEX_KEY = re.compile(r"[0-9a-fA-F]{64}")
ROTATE = "docs/cache.md#rotating-the-team-key"
_warned: set[tuple[str, tuple[int, ...]]] = set()


def warn_once(message: str) -> None:
    """Logged once per command (each CLI command routes warnings through a new handler): keys are read many
    times per run, the warning is worth one line."""
    logger = logging.getLogger("ortflow")
    seen = (message, tuple(id(h) for h in logger.handlers))
    if seen not in _warned:
        _warned.add(seen)
        logger.warning(message)


def looks_like_key(value: str) -> bool:
    """A value that is key material rather than a path: 64 hex digits, or long text with no folder in it
    that names no file."""
    text = value.strip()
    if HEX_KEY.fullmatch(text):
        return True
    return len(text) >= MIN_KEY_CHARS and "/" not in text and not Path(text).expanduser().exists()


def shared_key() -> bytes | None:
    """The team's current key, if this machine was given one (None: no key)."""
    direct = os.environ.get(SIGNING_KEY_ENV, "")  # as given: its bytes are the key
    named = os.environ.get(SIGNING_KEY_FILE_ENV, "").strip()
    if direct and named:
        warn_once(
            f"both ${SIGNING_KEY_ENV} and ${SIGNING_KEY_FILE_ENV} are set: ${SIGNING_KEY_ENV} wins and the "
            f"file is not read — unset the one that is not the team's current key (a revoked key left set "
            f"keeps signing and verifying)"
        )
    if direct:
        return _strong(direct, f"${SIGNING_KEY_ENV}")
    if named:
        return _strong(_read_key_file(named), f"the file ${SIGNING_KEY_FILE_ENV} names")
    return None


def _read_key_file(value: str) -> str:
    if looks_like_key(value):
        raise StoreError(
            f"${SIGNING_KEY_FILE_ENV} holds what looks like a key, not a path (its value is not shown) — "
            f"write the key to a file only you can read and set ${SIGNING_KEY_FILE_ENV} to that file's path, "
            f"or give the key itself as ${SIGNING_KEY_ENV}"
        )
    try:
        return Path(value).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(
            f"${SIGNING_KEY_FILE_ENV}: the file it names cannot be read ({type(exc).__name__}; the value is "
            "not shown, in case it is a key) — point it at the file `engine cache key new` wrote, or unset it"
        ) from None


def _strong(text: str, source: str) -> bytes:
    """The current key, refused when it is shorter than a key that can sign (it is guessable)."""
    if len(text) < MIN_KEY_CHARS:
        raise StoreError(
            f"the team key in {source} has {len(text)} characters; a key that signs needs at least "
            f"{MIN_KEY_CHARS} (`engine cache key new` writes 64 hex digits) — create one with `engine cache "
            f"key new`, make it the current key, and list this one in ${PREVIOUS_KEYS_FILE_ENV} until the "
            f"remote is re-signed ({ROTATE})"
        )
    return text.encode("utf-8")


def previous_keys() -> list[bytes]:
    """Keys still accepted on signatures made before a rotation (never used to sign)."""
    found: list[str] = []
    path = os.environ.get(PREVIOUS_KEYS_FILE_ENV, "").strip()
    if path:
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(
                f"${PREVIOUS_KEYS_FILE_ENV}: {path} cannot be read ({type(exc).__name__}) — point it at a "
                "file with one previous key a line, or unset it"
            ) from None
        found += _lines(text)
    found += split_previous(os.environ.get(PREVIOUS_KEYS_ENV, ""))
    for number, key in enumerate(found, 1):
        if len(key) < MIN_KEY_CHARS:
            warn_once(
                f"previous team key {number} has {len(key)} characters (fewer than {MIN_KEY_CHARS}: guessable); "
                "records it signed are still served — re-sign the remote with the current key (`engine cache "
                f"sign --remote --resign-previous`), then remove it from the previous keys ({ROTATE})"
            )
    return [key.encode("utf-8") for key in found]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def split_previous(value: str) -> list[str]:
    """$ORTFLOW_SIGNING_KEYS_PREVIOUS as keys: one a line; commas split only 64-hex-digit keys."""
    if "\n" in value.strip():
        return _lines(value)
    text = value.strip()
    if not text:
        return []
    parts = [part.strip() for part in text.split(",")]
    if len(parts) > 1 and all(HEX_KEY.fullmatch(part) for part in parts):
        return parts
    if len(parts) > 1:
        warn_once(
            f"${PREVIOUS_KEYS_ENV} is read as ONE key: a comma splits it only between keys of 64 hex digits "
            "(a comma may be part of a key) — list previous keys one a line in the file "
            f"${PREVIOUS_KEYS_FILE_ENV} names"
        )
    return [text]


def verifying_keys() -> list[bytes]:
    """Every key a signature is accepted from: the current one, then the previous ones still in rotation."""
    current = shared_key()
    return ([current] if current else []) + previous_keys()
