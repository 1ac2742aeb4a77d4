"""Which remote to use, from outside the recipe (recipes are committed; credentials are not):
`--remote URL`, else $ORTFLOW_REMOTE, else `ortflow.yaml` in the recipe's folder or a folder above it:

    remote:
      url: s3://team-bucket/ortflow
      options: {endpoint_url: "http://minio.internal:9000"}   # fsspec storage options, never credentials

Credentials come from the transfer library's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or
~/.aws/credentials or an instance role for S3; gcloud's for GCS; azure-identity's for Azure)."""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ortflow.engine.errors import StoreError
from ortflow.engine.store.remote import SECRET_WORDS, Remote, redact

CONFIG_NAME = "ortflow.yaml"
REMOTE_ENV = "ORTFLOW_REMOTE"
CHAIN = (
    "use the library's standard chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE and "
    "~/.aws/credentials (S3), gcloud auth (GCS), azure-identity (Azure)"
)


@dataclass(frozen=True)
class RemoteSetting:
    url: str
    origin: str  # where it was set: "--remote", "$ORTFLOW_REMOTE" or the config file's path
    options: dict[str, Any] = field(default_factory=dict)

    def open(self) -> Remote:
        return Remote(self.url, self.options)


def remote_setting(cli_url: str | None, near: Path | None) -> RemoteSetting | None:
    """The remote named on the command line, in the environment or in the project's config file (None: none)."""
    if cli_url:
        return RemoteSetting(cli_url, "--remote")
    if os.environ.get(REMOTE_ENV):
        return RemoteSetting(os.environ[REMOTE_ENV], f"${REMOTE_ENV}")
    config = find_config(near) if near is not None else None
    return read_config(config) if config is not None else None


def required_remote(cli_url: str | None, near: Path | None) -> Remote:
    setting = remote_setting(cli_url, near)
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
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise StoreError(
            f"{path}: cannot be read as YAML ({type(exc).__name__}) — fix it or remove it"
        ) from None
    entry = data.get("remote") if isinstance(data, dict) else None
    if entry is None:
        return None
    if isinstance(entry, str):
        entry = {"url": entry}
    if (
        not isinstance(entry, dict)
        or not isinstance(entry.get("url"), str)
        or not isinstance(entry.get("options", {}), dict)
    ):
        raise StoreError(
            f"{path}: `remote` must be a URL, or a mapping with `url` and optional `options` — "
            "e.g. remote: {url: s3://bucket/prefix}"
        )
    options = dict(entry.get("options") or {})
    secret = sorted(k for k in options if any(word in str(k).lower() for word in SECRET_WORDS))
    if secret or "@" in urllib.parse.urlsplit(entry["url"]).netloc:
        where = f"remote.options.{secret[0]}" if secret else "remote.url"
        raise StoreError(
            f"{path}: {where}: credentials do not belong in a project file (it is committed) — {CHAIN}"
        )
    return RemoteSetting(entry["url"], str(path), options)


def default_recipe(path: Path) -> Path | None:
    """The recipe `engine run` (plan, status...) uses when none is named: `recipe: FILE` in this ortflow.yaml,
    relative to its folder (engine.recipe_discovery); None without the file or the key."""
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, RecursionError, yaml.YAMLError) as exc:
        raise StoreError(
            f"{path}: cannot be read as YAML ({type(exc).__name__}) — fix it or remove it"
        ) from None
    entry = data.get("recipe") if isinstance(data, dict) else None
    if entry is not None and not isinstance(entry, str):
        raise StoreError(f"{path}: `recipe` must be a file name — e.g. recipe: quickstart.yaml")
    return None if entry is None else path.parent / entry


def shown(setting: RemoteSetting | None) -> str:
    return "none" if setting is None else f"{redact(setting.url)} (from {setting.origin})"
