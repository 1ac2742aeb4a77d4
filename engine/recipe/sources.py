"""Where a recipe's data comes from: input files (a path, or a file inside an installed package) and
datasets (a loader plus the files it reads), resolved and checked, with content digests for cache keys."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from ortflow.engine.contracts.params import fill_defaults
from ortflow.engine.contracts.registry import Registry
from ortflow.engine.contracts.types import DatasetSpec, InputSpec
from ortflow.engine.leaves.errors import Location, OrtflowError, Problem, suggest
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.yamlsource import PathKey, SourceMap
from ortflow.engine.recipe.schema_errors import validate


def resolve_inputs(
    raw: JsonObject, base: Path, source: SourceMap, problems: list[Problem]
) -> dict[str, InputSpec]:
    inputs: dict[str, InputSpec] = {}
    for name, spec in raw.items():
        if not isinstance(spec, (str, dict)):
            continue  # the recipe schema reports it
        found = resolve_file(
            spec, base, source, ("inputs", name), f"input '{name}'", problems, report_shape=False
        )
        if found is not None:
            inputs[name] = InputSpec(name, found, _declared(spec))
    return inputs


def resolve_datasets(
    raw: JsonObject, loaders: Registry, base: Path, source: SourceMap, problems: list[Problem]
) -> dict[str, DatasetSpec]:
    datasets: dict[str, DatasetSpec] = {}
    for name, spec in raw.items():
        loader = spec.get("loader") if isinstance(spec, dict) else None
        if not isinstance(spec, dict) or not isinstance(loader, str):
            continue  # the recipe schema reports it
        where = ("datasets", name)
        if loader not in loaders:
            problems.append(
                Problem(
                    f"dataset '{name}': unknown loader '{loader}'",
                    source.locate(where + ("loader",)),
                    suggest(loader, loaders.names()) or f"loaders: {', '.join(loaders.names())}",
                )
            )
            continue
        try:
            loader_cls = loaders.get(loader)
        except OrtflowError as exc:
            problems.append(Problem(f"dataset '{name}': {exc}", source.locate(where + ("loader",))))
            continue
        given = spec.get("with")
        written = given if isinstance(given, dict) else {}
        subject = f"dataset '{name}' ({loader_cls.type})"
        before = len(problems)
        problems.extend(
            validate(written, loader_cls.params_schema, source, where + ("with",), subject)
        )
        # the values as written, each file parameter's then its resolved Path (None: not found, reported)
        params: dict[str, Json | Path | None] = dict(written)
        for param in loader_cls.file_params:
            if param in params:
                found = resolve_file(
                    params[param],
                    base,
                    source,
                    where + ("with", param),
                    f"{subject}: '{param}'",
                    problems,
                )
                params[param] = found
        if len(problems) == before:
            datasets[name] = DatasetSpec(
                name,
                loader_cls.type,
                loader_cls,
                fill_defaults(params, loader_cls.params_schema),
                source.locate(where, key=True),
            )
    return datasets


def resolve_file(
    value: Any,
    base: Path,
    source: SourceMap,
    where: PathKey,
    subject: str,
    problems: list[Problem],
    report_shape: bool = True,
) -> Path | None:
    """A path relative to the recipe's folder (`x` or {path: x}) or {package: dist, file: path-in-it}."""
    if isinstance(value, str):
        value = {"path": value}
        field = where
    else:
        field = where + ("path",)
    if not isinstance(value, dict):
        if report_shape:
            problems.append(
                Problem(
                    f"{subject}: expected a path or {{package: DIST, file: PATH}}",
                    source.locate(where),
                )
            )
        return None
    if isinstance(value.get("path"), str) and value["path"]:
        resolved = Path(
            os.path.abspath(base / value["path"])
        )  # symlinks stay: re-followed on every run
        if not resolved.exists():
            problems.append(
                Problem(
                    f"{subject}: file not found: {value['path']} (looked in {base.resolve()})",
                    source.locate(field),
                    "fix the path; it is relative to the recipe's folder",
                )
            )
            return None
        special = special_file(resolved)
        if special:  # reading a device or a FIFO never ends (/dev/zero) or blocks for ever
            problems.append(
                Problem(
                    f"{subject}: {value['path']} is a {special}, not a regular file or folder",
                    source.locate(field),
                    "name a regular file (or a folder where one is expected)",
                )
            )
            return None
        return resolved
    if isinstance(value.get("package"), str) and isinstance(value.get("file"), str):
        return _package_file(value["package"], value["file"], source.locate(where), problems)
    if report_shape and "path" not in value and not {"package", "file"} <= set(value):
        problems.append(
            Problem(
                f"{subject}: expected {{path: FILE}} or {{package: DIST, file: PATH}}",
                source.locate(where),
            )
        )
    return None  # other shapes are reported by the recipe schema


def special_file(path: Path) -> str | None:
    """What kind of special file `path` is (following symbolic links), or None for a file or folder."""
    mode = path.stat().st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = {
        stat.S_ISFIFO: "FIFO (named pipe)",
        stat.S_ISCHR: "character device",
        stat.S_ISBLK: "block device",
        stat.S_ISSOCK: "socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), "special file")


def _declared(spec: Any) -> str:
    if isinstance(spec, dict) and "package" in spec:
        return f"{spec['package']}:{spec.get('file')}"
    return str(spec.get("path") if isinstance(spec, dict) else spec)


def _package_file(package: str, file: str, where: Location, problems: list[Problem]) -> Path | None:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution(package)
    except PackageNotFoundError:
        from importlib.metadata import distributions

        installed = {d.metadata["Name"].lower() for d in distributions() if d.metadata["Name"]}
        problems.append(
            Problem(
                f"package '{package}' is not installed",
                where,
                suggest(package.lower(), installed) or f"pip install {package}",
            )
        )
        return None
    files = [str(f) for f in dist.files or []]
    wanted = file.strip("/")
    matches = [f for f in files if f == wanted] or [f for f in files if f.endswith("/" + wanted)]
    if not matches:  # a folder inside the package (e.g. a folder of images)
        folders = set()
        for name in files:
            start = f"/{name}".find(f"/{wanted}/")  # `wanted` as whole path components
            if start >= 0:
                folders.add(name[: start + len(wanted)])
        matches = sorted(folders)
    if len(matches) != 1:
        data_files = [
            f for f in files if not f.endswith((".py", ".pyc")) and ".dist-info/" not in f
        ]
        reason = "is ambiguous" if matches else "is not in it"
        problems.append(
            Problem(
                f"package '{package}': file '{file}' {reason}",
                where,
                f"files in the package: {', '.join(data_files[:5]) or 'none'}",
            )
        )
        return None
    return Path(str(dist.locate_file(matches[0]))).resolve()
