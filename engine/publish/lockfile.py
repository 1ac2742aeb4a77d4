"""Reading `<recipe>.lock` safely: bounded in size, without anchors or aliases, from libyaml's events (the Lock
class, engine.publish.lock, owns the file and its meaning; `engine compare` reads two locks through here too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, TypedDict

import yaml

from ortflow.engine.contracts.build_json import LockEntryJson
from ortflow.engine.leaves.errors import Location, Problem, RecipeError
from ortflow.engine.leaves.yamlsource import MAX_DEPTH, byte_size, too_deep_for_libyaml

LOCK_SCHEMA = 1
HEADER = (
    "# Written by `engine run`. Commit it beside the recipe: it records exactly what was built.\n"
)


class _LockStages(TypedDict):
    schema: int  # LOCK_SCHEMA
    stages: dict[str, LockEntryJson]  # the base family's entries


class LockJson(_LockStages, total=False):
    """A lock file's form (schemas/lock.schema.json): what Lock.to_json writes and Lock.read takes once the
    schema accepted it."""

    recipe: str
    inputs: Mapping[str, Mapping[str, str]]  # {name: {path, digest}}
    datasets: Mapping[str, Mapping[str, str]]  # {name: {loader, digest}}
    family: str  # the kernel family `stages` was built on, once another family is recorded
    families: dict[str, dict[str, LockEntryJson]]  # {kernel family: {stage: entry}}


_Loader = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)  # libyaml: a 1,000-stage lock loads in milliseconds
# A lock file holds a few hundred bytes per stage (a 1,000-stage lock is 0.8 MB) and nests as deep as the
# recipe's parameters do, plus its own three levels.
MAX_LOCK_BYTES = 64 << 20
MAX_LOCK_DEPTH = 2 * MAX_DEPTH
FIX = "restore it from git, or delete it and run again"


class PlainDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Never writes anchors and aliases: a lock file is read by people and diffed by git."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def read_bounded_text(path: Path, what: str = "a lock file", fix: str = FIX) -> str:
    """The file's text, refused unread when it is larger than `what` ever is. FileNotFoundError passes."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(MAX_LOCK_BYTES + 1) if size <= MAX_LOCK_BYTES else b""
    if size > MAX_LOCK_BYTES or len(data) > MAX_LOCK_BYTES:
        how_big = byte_size(size) if size > MAX_LOCK_BYTES else f"over {byte_size(MAX_LOCK_BYTES)}"
        raise RecipeError(
            [
                Problem(
                    f"{path} is {how_big}, more than the {byte_size(MAX_LOCK_BYTES)} {what} may be",
                    Location(str(path)),
                    fix,
                )
            ]
        )
    try:
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        raise RecipeError([Problem("not a text file", Location(str(path)), fix)]) from None


def load_lock_yaml(path: Path) -> Any:
    """A lock file's data. `engine run` writes plain YAML, never anchors or aliases, so any is refused
    before it can expand: a 2 KB file of nested aliases otherwise makes gigabytes of repeated values for
    whatever walks the result. Built from libyaml's events without recursion (no depth can crash it),
    and faster than yaml.load, whose constructor is Python. FileNotFoundError passes."""
    text = read_bounded_text(path)
    try:
        return _LockBuilder(str(path)).build(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = Location(str(path), mark.line + 1, mark.column + 1) if mark else Location(str(path))
        what = (
            f"the lock file holds values nested more than {MAX_LOCK_DEPTH} levels deep"
            if too_deep_for_libyaml(exc)
            else "the lock file is not valid YAML"
        )
        raise RecipeError([Problem(what, where, FIX)]) from None


class _LockBuilder:
    """Plain data from YAML events: mappings, sequences and the scalars yaml.safe_load reads."""

    def __init__(self, name: str):
        self.name = name
        self.stack: list[
            tuple[Any, list[Any] | None]
        ] = []  # open collections; a mapping's pending key
        self.scalars: dict[
            tuple[Any, ...], Any
        ] = {}  # a lock repeats digests and names: construct each once
        self.documents = 0

    def build(self, text: str) -> Any:
        loader = _Loader(text)
        root = None
        try:
            for event in iter(loader.get_event, None):
                kind = type(event)
                if kind in (yaml.MappingStartEvent, yaml.SequenceStartEvent):
                    self._open(event)
                    continue
                if kind is yaml.ScalarEvent:
                    value = self._scalar(loader, event)
                elif kind in (yaml.MappingEndEvent, yaml.SequenceEndEvent):
                    value = self.stack.pop()[0]
                elif kind is yaml.AliasEvent:
                    raise self._refuse(
                        event, f"an alias (*{event.anchor}), which `engine run` never writes"
                    )
                else:
                    self._other(event)
                    continue
                if self.stack:
                    self._add(event, value)
                else:
                    root = value
        finally:
            loader.dispose()
        return root

    def _open(self, event: yaml.CollectionStartEvent) -> None:
        if event.anchor is not None:
            raise self._refuse(
                event, f"an anchor (&{event.anchor}), which `engine run` never writes"
            )
        if event.tag is not None:
            raise self._refuse(event, f"a tag ({event.tag}), which `engine run` never writes")
        if len(self.stack) >= MAX_LOCK_DEPTH:
            raise self._refuse(event, f"values nested more than {MAX_LOCK_DEPTH} levels deep")
        is_mapping = type(event) is yaml.MappingStartEvent
        self.stack.append(({}, []) if is_mapping else ([], None))

    def _other(self, event: yaml.Event) -> None:
        if type(event) is yaml.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                raise self._refuse(event, "more than one YAML document")

    def _scalar(self, loader: Any, event: yaml.ScalarEvent) -> Any:
        if event.anchor is not None:
            raise self._refuse(
                event, f"an anchor (&{event.anchor}), which `engine run` never writes"
            )
        key = (event.tag, event.value, event.implicit)
        if key not in self.scalars:
            tag = (
                loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                if event.tag in (None, "!")
                else event.tag
            )
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
            self.scalars[key] = loader.construct_object(node)  # raises for tags safe_load refuses
        return self.scalars[key]

    def _add(self, event: yaml.Event, value: Any) -> None:
        container, key = self.stack[-1]
        if key is None:
            container.append(value)
        elif key:
            container[key.pop()] = value
        elif isinstance(value, (dict, list)):
            raise self._refuse(event, "a mapping or list as a key")
        else:
            key.append(value)

    def _refuse(self, event: yaml.Event, what: str) -> RecipeError:
        where = Location(self.name, event.start_mark.line + 1, event.start_mark.column + 1)
        return RecipeError([Problem(f"the lock file holds {what}", where, FIX)])
