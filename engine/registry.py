"""Finds stage types through the `ortflow.stages` entry-point group (built-ins register there too)."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from engine.errors import OrtflowError
from engine.stage import Stage

GROUP = "ortflow.stages"


class StageRegistry:
    """Stage types by name; a type's module is imported only when that type is used."""

    def __init__(self, entries: dict[str, EntryPoint]):
        self._entries = entries
        self._loaded: dict[str, type[Stage]] = {}

    @classmethod
    def discover(cls) -> "StageRegistry":
        entries: dict[str, EntryPoint] = {}
        for ep in entry_points(group=GROUP):
            other = entries.get(ep.name)
            if other is not None and other.value != ep.value:
                raise OrtflowError(
                    f"stage type '{ep.name}' is registered twice ({other.value} and {ep.value})"
                    " — uninstall one of the packages or rename its entry point"
                )
            entries[ep.name] = ep
        return cls(entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def get(self, name: str) -> type[Stage]:
        if name not in self._loaded:
            ep = self._entries[name]
            try:
                stage_cls = ep.load()
            except Exception as exc:
                raise OrtflowError(
                    f"stage type '{name}' cannot be imported from {ep.value}: {type(exc).__name__}: {exc}"
                    " — reinstall the package that provides it"
                ) from exc
            if not (isinstance(stage_cls, type) and issubclass(stage_cls, Stage)):
                raise OrtflowError(f"entry point '{name}' ({ep.value}) is not a subclass of engine.stage.Stage")
            if getattr(stage_cls, "type", None) != name:
                raise OrtflowError(
                    f"entry point '{name}' ({ep.value}) declares type '{getattr(stage_cls, 'type', None)}'"
                    " — the entry-point name and the class's `type` must match"
                )
            self._loaded[name] = stage_cls
        return self._loaded[name]

    def origin(self, name: str) -> str:
        ep = self._entries[name]
        dist = ep.dist.name if ep.dist is not None else "?"
        return f"{ep.value} ({dist})"
