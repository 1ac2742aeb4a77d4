"""Which remote to use, from outside the recipe (recipes are committed; credentials are not):
`--remote URL`, else $ORTFLOW_REMOTE, else `ortflow.yaml` in the recipe's folder or a folder above it:

    remote:
      url: s3://team-bucket/ortflow
      options: {endpoint_url: "http://minio.internal:9000"}   # fsspec storage options, never credentials
      allow_unsigned: false   # true: serve records not signed with the team's key (docs/security.md)

A key that names a secret (aws_secret_access_key, token, password, ...) at any depth of the file, a URL that
carries user:secret@ or a secret query parameter anywhere in it, or a connection string (`key=value;` pairs with
a secret-named key: Azure's `AccountKey=`, `SharedAccessSignature=`) is refused with its file:line (exit 2).

Credentials come from the transfer library's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or
~/.aws/credentials or an instance role for S3; gcloud's for GCS; azure-identity's for Azure)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ortflow.engine.leaves.errors import StoreError
from ortflow.engine.leaves.json_types import Json
from ortflow.engine.leaves.secrets import is_secret_name, redact, value_secrets
from ortflow.engine.leaves.yamlsource import PathKey, load_yaml
from ortflow.engine.store.remote import CHAIN, Remote

CONFIG_NAME = "ortflow.yaml"
REMOTE_ENV = "ORTFLOW_REMOTE"


@dataclass(frozen=True)
class RemoteSetting:
    url: str
    origin: str  # where it was set: "--remote", "$ORTFLOW_REMOTE" or the config file's path
    options: dict[str, Json] = field(default_factory=dict)  # fsspec's, passed on unread
    allow_unsigned: bool = False  # opt-in to unsigned records (engine.store.remote_trust)

    def open(self) -> Remote:
        return Remote(self.url, self.options, self.allow_unsigned)


def remote_setting(
    cli_url: str | None, near: Path | None, allow_unsigned: bool = False
) -> RemoteSetting | None:
    """The remote named on the command line, in the environment or in the project's config file (None: none);
    `allow_unsigned` (--allow-unsigned) accepts unsigned records from it, as `allow_unsigned: true` does for
    the remote the config file names."""
    if cli_url:
        return RemoteSetting(cli_url, "--remote", allow_unsigned=allow_unsigned)
    if os.environ.get(REMOTE_ENV):
        return RemoteSetting(
            os.environ[REMOTE_ENV], f"${REMOTE_ENV}", allow_unsigned=allow_unsigned
        )
    config = find_config(near) if near is not None else None
    setting = read_config(config) if config is not None else None
    if setting is not None and allow_unsigned:
        setting = RemoteSetting(setting.url, setting.origin, setting.options, True)
    return setting


def required_remote(cli_url: str | None, near: Path | None, allow_unsigned: bool = False) -> Remote:
    setting = remote_setting(cli_url, near, allow_unsigned)
    if setting is None:
        raise StoreError(
            f"no remote: pass --remote URL (s3://bucket/prefix, file:///mnt/share), set ${REMOTE_ENV}, "
            f"or write `remote: URL` in {CONFIG_NAME} beside the recipe"
        )
    return setting.open()


def find_config(near: Path) -> Path | None:
    """`ortflow.yaml` in the folder of `near` (a recipe or a folder) or the nearest folder above it."""
    folder = Path(near).resolve()
    folder = folder if folder.is_dir() else folder.parent
    for candidate in (folder, *folder.parents):
        if (candidate / CONFIG_NAME).is_file():
            return candidate / CONFIG_NAME
    return None


def read_config(path: Path) -> RemoteSetting | None:
    """The remote `ortflow.yaml` names, read through the one YAML loader with the parser limits (deep nesting
    and alias bombs are refused with file:line, exit 2); credentials anywhere in it are refused."""
    data, source = load_yaml(path, small=True)
    entry = data.get("remote") if isinstance(data, dict) else None
    if entry is None:
        return None
    if isinstance(entry, str):
        entry = {"url": entry}
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("url"), str)
        or not isinstance(entry.get("options", {}), dict)
        or not isinstance(entry.get("allow_unsigned", False), bool)
    ):
        raise StoreError(
            f"{source.locate(('remote',))}: `remote` must be a URL, or a mapping with `url`, optional "
            "`options` and `allow_unsigned: true|false` — "
            "e.g. remote: {url: s3://bucket/prefix}"
        )
    found = _credential(data, ())
    if found is not None:
        where, what = found
        raise StoreError(
            f"{source.locate(where, key=True)}: {'.'.join(map(str, where))}: credentials do not belong in a "
            f"project file (it is committed; {what}) — {CHAIN}"
        )
    return RemoteSetting(
        entry["url"],
        str(path),
        dict(entry.get("options") or {}),
        entry.get("allow_unsigned", False),
    )


def _credential(value: object, where: PathKey) -> tuple[PathKey, str] | None:
    """The first credential at any depth: a key whose name says secret (aws_secret_access_key, token,
    password, ...) or a URL string that carries a user:secret@ or a secret query parameter."""
    if isinstance(value, dict):
        for key, item in value.items():
            if _holds_secret(key, item):
                return (*where, key), f"'{key}' names a secret"
            found = _credential(item, (*where, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _credential(item, (*where, index))
            if found is not None:
                return found
    elif isinstance(value, str) and value_secrets(value):
        return where, str(value_secrets(value))
    return None


def _holds_secret(key: object, value: object) -> bool:
    """A secret-named key with a value that could be the secret: text or a number. A switch (allow_unsigned:
    true) or a file, path or variable that points at the secret is how credentials should be given."""
    named = is_secret_name(key) and not str(key).lower().endswith(("file", "path", "env", "var"))
    return (
        named
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
        and value != ""
    )


def default_recipe(path: Path) -> Path | None:
    """The recipe `engine run` (plan, status...) uses when none is named: `recipe: FILE` in this ortflow.yaml,
    relative to its folder (engine.cli.recipe_discovery); None without the file or the key."""
    if not path.is_file():
        return None
    data, source = load_yaml(path, small=True)  # the parser limits every YAML read goes through
    entry = data.get("recipe") if isinstance(data, dict) else None
    if entry is not None and not isinstance(entry, str):
        raise StoreError(
            f"{source.locate(('recipe',))}: `recipe` must be a file name — e.g. recipe: quickstart.yaml"
        )
    return None if entry is None else path.parent / entry


def shown(setting: RemoteSetting | None) -> str:
    return "none" if setting is None else f"{redact(setting.url)} (from {setting.origin})"
