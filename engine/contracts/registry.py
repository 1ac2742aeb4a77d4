"""Plugins by entry-point group: stage types (`ortflow.stages`), dataset loaders (`ortflow.datasets`) and
accuracy metrics (`ortflow.metrics`). Built-ins register through the same groups as third-party packages."""

from __future__ import annotations

import ast
import inspect
import logging
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Iterator

from ortflow.engine.contracts.dataset import DatasetLoader
from ortflow.engine.contracts.declarations import NOTHING
from ortflow.engine.contracts.metric import Metric
from ortflow.engine.contracts.stage import Stage
from ortflow.engine.leaves.errors import OrtflowError

STAGES = "ortflow.stages"
DATASETS = "ortflow.datasets"
METRICS = "ortflow.metrics"
BASES: dict[str, type] = {STAGES: Stage, DATASETS: DatasetLoader, METRICS: Metric}


class Registry:
    """Plugin classes by name; a plugin's module is imported only when that plugin is used."""

    def __init__(self, group: str, entries: dict[str, EntryPoint]):
        self.group = group
        self._entries = entries
        self._loaded: dict[str, type] = {}

    @classmethod
    def discover(cls, group: str = STAGES) -> "Registry":
        entries: dict[str, EntryPoint] = {}
        for ep in entry_points(group=group):
            other = entries.get(ep.name)
            if other is not None and other.value != ep.value:
                raise OrtflowError(
                    f"'{ep.name}' is registered twice in {group} ({other.value} and {ep.value})"
                    " — uninstall one of the packages or rename its entry point"
                )
            entries[ep.name] = ep
        return cls(group, entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def get(self, name: str) -> Any:
        if name not in self._loaded:
            base = BASES[self.group]
            ep = self._entries[name]
            plugin = _load(name, ep)
            if not (isinstance(plugin, type) and issubclass(plugin, base)):
                raise OrtflowError(
                    f"entry point '{name}' ({ep.value}) is not a subclass of {base.__module__}.{base.__name__}"
                )
            if getattr(plugin, "type", None) != name:
                raise OrtflowError(
                    f"entry point '{name}' ({ep.value}) declares type '{getattr(plugin, 'type', None)}'"
                    " — the entry-point name and the class's `type` must match"
                )
            undeclared = [
                p
                for p in getattr(plugin, "declares", NOTHING).ports()
                if issubclass(plugin, Stage) and plugin.output_port(p) is None
            ]
            if undeclared:
                raise OrtflowError(
                    f"stage type '{name}' ({ep.value}) declares a choice in {', '.join(undeclared)}, which it has "
                    "no output port for — name its outputs in `declares` as in `outputs`"
                )
            self._loaded[name] = plugin
            _warn_engine_imports(name, plugin, ep)
        return self._loaded[name]

    def origin(self, name: str) -> str:
        ep = self._entries[name]
        dist = ep.dist.name if ep.dist is not None else "?"
        return f"{ep.value} ({dist})"


def _load(name: str, ep: EntryPoint) -> Any:
    """The boundary a plugin is imported inside: whatever its import raises, SystemExit and KeyboardInterrupt
    included, becomes an error naming the plugin (exit 2). A `sys.exit(0)` at a plugin's import once ended
    `engine run` and `engine stages` with nothing printed and exit 0, a run that looked like it succeeded."""
    dist = ep.dist.name if ep.dist is not None else "its package"
    fix = f"check that entry point in {dist}'s pyproject.toml, or reinstall {dist}"
    with _ctrl_c_seen() as pressed:
        try:
            return ep.load()
        except KeyboardInterrupt:
            if (
                pressed
            ):  # the user's own Ctrl-C while a slow import ran: an interruption, said as one
                raise
            what = "raised KeyboardInterrupt"
        except SystemExit as exc:
            what = f"called sys.exit({exc.code!r})"
        except Exception as exc:
            raise OrtflowError(
                f"'{name}' cannot be imported from {ep.value}: {type(exc).__name__}: {exc} — {fix}"
            ) from exc
    raise OrtflowError(
        f"plugin '{name}' ({ep.value}, from {dist}) {what} while it was imported: a plugin must not end "
        f"the process — fix the plugin, or uninstall {dist}"
    )


@contextmanager
def _ctrl_c_seen() -> Iterator[list[bool]]:
    """A list that holds True once SIGINT arrived while inside, so that a KeyboardInterrupt a plugin raises
    itself is told from the user's Ctrl-C (main thread only: Python delivers signals nowhere else)."""
    pressed: list[bool] = []
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is None:
        yield pressed  # previous None: a handler set outside Python, which could not be put back
        return

    def on_sigint(signum: int, frame: Any) -> None:
        pressed.append(True)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


# Where each internal module's public names went (the first prefix that matches); the rest are in ortflow.api.
INSTEAD = (
    ("ortflow.engine.ort.providers", "ortflow.api.providers"),
    ("ortflow.engine.ort", "ortflow.api.onnx"),
    ("ortflow.engine", "ortflow.api"),
)
_warned: set[str] = set()  # plugin modules already warned about, once per process


def engine_imports(source: str) -> list[tuple[int, str, str]]:
    """(line, what it imports, the module to import it from instead) for each `ortflow.engine` import in a
    plugin's source, function-level imports included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("ortflow.engine")
        ):
            modules = [(node.module or "", ", ".join(a.name for a in node.names))]
        elif isinstance(node, ast.Import):
            modules = [(a.name, a.name) for a in node.names if a.name.startswith("ortflow.engine")]
        else:
            continue
        for module, names in modules:
            instead = next(
                new for old, new in INSTEAD if module == old or module.startswith(old + ".")
            )
            found.append(
                (node.lineno, f"{names} from {module}" if names != module else module, instead)
            )
    return sorted(found)


def _warn_engine_imports(name: str, plugin: type, ep: EntryPoint) -> None:
    """A plugin written against ortflow.engine internals works for one more release; say once (per plugin module)
    which of its imports to change: the modules under ortflow.engine may move, ortflow.api keeps its names."""
    module = sys.modules.get(plugin.__module__)
    if module is None or module.__name__.startswith("ortflow.") or module.__name__ in _warned:
        return  # the built-ins are held to ortflow.api by import-linter
    _warned.add(module.__name__)
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):  # no source shipped (a compiled-only wheel): nothing to point at
        return
    found = engine_imports(source)
    if not found:
        return
    where = module.__file__ or module.__name__
    dist = f" ({ep.dist.name})" if ep.dist is not None else ""
    lines = "; ".join(
        f"{where}:{line}: {what} -> import it from {instead}" for line, what, instead in found
    )
    message = (
        f"plugin '{name}' ({ep.value}{dist}) imports ortflow.engine, whose modules are internal and may move after "
        f"this release: {lines}"
    )
    warnings.warn(message, DeprecationWarning, stacklevel=3)
    logging.getLogger("ortflow").warning(
        message
    )  # the CLI prints it; DeprecationWarning alone is hidden there


@lru_cache(maxsize=None)
def installed(group: str) -> Registry:
    """The installed plugins of a group, discovered once per process (entry-point discovery costs ~10 ms)."""
    return Registry.discover(group)


def installed_stages() -> Registry:
    return installed(STAGES)


def installed_metrics() -> Registry:
    return installed(METRICS)


def _plugin(group: str, what: str, name: str) -> Any:
    registry = installed(group)
    if name not in registry:
        raise OrtflowError(
            f"{what} '{name}' is not installed (installed: {', '.join(registry.names())})"
        )
    return registry.get(name)


def stage_type(name: str) -> type[Stage]:
    """A registered stage type by name: how one stage uses another (stages never import each other)."""
    return _plugin(STAGES, "stage type", name)


def metric_type(name: str) -> type[Metric]:
    """A registered metric type by name."""
    return _plugin(METRICS, "metric", name)


def loader_type(name: str) -> type[DatasetLoader]:
    """A registered dataset loader by name: how a stage makes feeds itself (e.g. `random` for a sanity check)."""
    return _plugin(DATASETS, "dataset loader", name)


class Plugins:
    """The registries a recipe draws on: stage types, dataset loaders and metrics."""

    def __init__(self, stages: Registry | None = None, datasets: Registry | None = None):
        self.stages = stages or Registry.discover(STAGES)
        self.datasets = datasets or Registry.discover(DATASETS)
        self.metrics = installed(METRICS)
