"""YAML loading that remembers where every value came from, so errors can name file:line:col."""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ortflow.engine.leaves.errors import Location, Problem, RecipeError
from ortflow.engine.leaves.json_types import JsonObject

try:  # libyaml is several times faster; the pure-Python loader gives identical nodes
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader

PathKey = tuple[Any, ...]
# Bounds that keep a hostile or mistaken file from crashing the parser or taking minutes and gigabytes.
# The largest recipe shipped is 5 KB and nests 7 levels; a generated 10,000-stage recipe is 0.9 MB.
MAX_BYTES = 4 << 20
MAX_DEPTH = 64  # libyaml's composer recurses on the C stack and crashes near 25,000 levels
MAX_NODES = 200_000  # aliases can multiply a small file into a huge document ("billion laughs")
# A project file (ortflow.yaml) holds a few lines: a much smaller bound refuses an alias bomb in milliseconds.
CONFIG_BYTES, CONFIG_NODES = 64 << 10, 10_000
KEY = "<key>"  # marker in a PathKey for the position of a mapping key rather than its value


@dataclass
class SourceMap:
    """Positions of values (and mapping keys) in a YAML document, by their path from the root."""

    file: str
    positions: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    origins: dict[PathKey, str] = field(default_factory=dict)  # values set outside the file

    def locate(self, path: PathKey, key: bool = False) -> Location:
        """Location of `path` (its key if `key`), else of its nearest ancestor that has one."""
        path = tuple(path)
        if key and path + (KEY,) in self.positions:
            line, col = self.positions[path + (KEY,)]
            return Location(self.file, line, col)
        while True:
            if path in self.origins:
                return Location(self.origins[path])
            if path in self.positions:
                line, col = self.positions[path]
                return Location(self.file, line, col)
            if not path:
                return Location(self.file)
            path = path[:-1]


def load_yaml(
    path: Path, display_name: str | None = None, small: bool = False
) -> tuple[Any, SourceMap]:
    """Parse `path`; returns the plain data and its SourceMap. Syntax errors raise RecipeError. Every YAML file
    ortflow reads comes through here or parse_yaml (the lock file through its own stricter event reader), so
    each has the same limits; `small`: a project file's smaller ones (CONFIG_BYTES, CONFIG_NODES)."""
    name = display_name or str(path)
    try:
        text = _read_bounded(path, name, CONFIG_BYTES if small else MAX_BYTES)
    except FileNotFoundError:
        raise RecipeError([Problem(f"file not found: {path}", hint="check the path")]) from None
    except UnicodeDecodeError:
        raise RecipeError([_not_a_recipe(path, name)]) from None
    except OSError as exc:
        raise RecipeError([Problem(f"cannot read {path}: {exc}")]) from None
    return parse_yaml(text, name, CONFIG_NODES if small else None)


def _read_bounded(path: Path, name: str, limit: int) -> str:
    """The file's text, refused before it is read when it is larger than any recipe: parsing a huge file
    takes minutes and gigabytes before any check sees it. The read itself is bounded too, for files
    whose size says nothing (a pipe, a device) or that grow while read."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1 if size <= limit else 1 << 16)
    if size <= limit and len(data) <= limit:
        # As Path.read_text reads it: universal newlines, so positions and values match on every platform.
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    codecs.getincrementaldecoder("utf-8")().decode(
        data
    )  # a binary file (a model) gets its own message
    how_big = f"is {byte_size(size)}" if size > limit else f"holds over {byte_size(limit)}"
    raise RecipeError(
        [
            Problem(
                f"{name} {how_big}, more than the {byte_size(limit)} a {_kind(name)} may be",
                Location(name),
                "a recipe names its models and data files rather than holding "
                "their content: move large values into files it names",
            )
        ]
    )


def byte_size(count: int) -> str:
    """`4 MiB`, `50.3 MiB`: sizes in messages, in binary units as `ls -h` shows them."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{count} bytes"


def _not_a_recipe(path: Path, name: str) -> Problem:
    """A binary file where a recipe was expected: most often a model given to `engine run` directly."""
    if path.suffix.lower() in (".onnx", ".ort", ".pb", ".pt", ".pth", ".safetensors"):
        return Problem(  # the path once, in the location: the commands below read as written
            "a model, not a recipe: `engine run` takes a recipe YAML that names the model",
            Location(name),
            "`engine optimize MODEL -o fast.onnx` writes a recipe for it, runs it and delivers the fastest "
            "model that keeps its accuracy; `engine init MODEL` only writes the recipe, to read and run",
        )
    return Problem(
        f"{name} is not a text file: `engine` commands take a recipe YAML file",
        Location(name),
        "see recipes/quickstart.yaml for the form of a recipe",
    )


def _kind(name: str) -> str:
    return "project file" if name.endswith("ortflow.yaml") else "recipe"


def parse_yaml(text: str, name: str, max_nodes: int | None = None) -> tuple[Any, SourceMap]:
    """Parse YAML text with the limits (depth, values, aliases); `max_nodes` below MAX_NODES for small files."""
    nodes = max_nodes or MAX_NODES
    loader = _Loader(text)
    try:
        aliased = _check_shape(
            text, name, nodes
        )  # before composing: libyaml's composer recurses on the C stack
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(name, mark.line + 1, mark.column + 1) if mark else Location(name)
        problem = " ".join(filter(None, [exc.context, exc.problem])) or "invalid YAML"
        line = text.splitlines()[mark.line] if mark and mark.line < len(text.splitlines()) else ""
        hint = (
            'quote references with brackets inside [...] or {...}, e.g. "int8.model[*]"'
            if "[*]" in line or "]." in line
            else "fix the YAML syntax"
        )
        raise RecipeError([Problem(f"invalid YAML: {problem}", where, hint)]) from None
    except yaml.YAMLError as exc:
        raise RecipeError([Problem(f"invalid YAML: {exc}", Location(name))]) from None
    finally:
        loader.dispose()
    source = SourceMap(name)
    if node is None:
        return None, source
    converter = _Converter(source, aliased, nodes)
    data = converter.convert(node, ())
    if converter.problems:
        raise RecipeError(converter.problems)
    return data, source


MERGE_TAG = "tag:yaml.org,2002:merge"
_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _check_shape(text: str, name: str, nodes: int) -> bool:
    """Refuse a document nested too deep or holding too many values, from libyaml's event stream (which
    the parser makes without recursion) before any node is built; True if it uses aliases. The text is
    parsed twice: measured +0.2 ms on the quickstart recipe, +16-20 ms on a 1,000-stage one (of 75-90 ms),
    and only on a cold load: a fully cached run reads its validated snapshot and parses no recipe."""
    loader = _Loader(text)
    depth = values = 0
    aliased = False
    try:
        for event in _events(loader, name):
            kind = type(event)
            if (
                kind is yaml.ScalarEvent
            ):  # the most common event first: this loop is most of the cost
                values += 1
            elif kind in _OPENS:
                depth, values = depth + 1, values + 1
                if depth > MAX_DEPTH:
                    raise RecipeError([_too_deep(_event_location(name, event))])
            elif kind in _CLOSES:
                depth -= 1
            elif kind is yaml.AliasEvent:
                aliased, values = True, values + 1
            if values > 2 * nodes:  # keys count here too, and every key has a value
                raise RecipeError([_too_many(_event_location(name, event), False, nodes)])
    finally:
        loader.dispose()
    return aliased


def too_deep_for_libyaml(exc: yaml.YAMLError) -> bool:
    """libyaml 0.2.6 (PyYAML 6.0.4) stops at 1,000 flow levels in its scanner, which reads a run of opening
    brackets ahead of the events: such a document never reaches an event-based depth check."""
    return isinstance(exc, yaml.MarkedYAMLError) and "maximum nesting depth" in str(
        exc.problem or ""
    )


def _events(loader: Any, name: str) -> Any:
    """The parser's events; libyaml's own depth limit said as this module's."""
    try:
        yield from iter(loader.get_event, None)
    except yaml.MarkedYAMLError as exc:
        if not too_deep_for_libyaml(exc) or exc.problem_mark is None:
            raise
        raise RecipeError(
            [_too_deep(Location(name, exc.problem_mark.line + 1, exc.problem_mark.column + 1))]
        ) from None


def _event_location(name: str, event: yaml.Event) -> Location:
    return Location(name, event.start_mark.line + 1, event.start_mark.column + 1)


def _too_deep(where: Location, aliased: bool = False) -> Problem:
    if aliased:
        return Problem(
            f"aliases inside aliases nest the document more than {MAX_DEPTH} levels deep here",
            where,
            "use fewer levels of aliases",
        )
    return Problem(
        f"the document nests more than {MAX_DEPTH} levels deep here",
        where,
        "a recipe nests a few levels: flatten this value, or move it into a file the recipe names"
        if _kind(str(where.file)) == "recipe"
        else "a project file nests a few levels: flatten this value",
    )


def _too_many(where: Location, aliased: bool, nodes: int) -> Problem:
    if aliased:
        return Problem(
            f"the document expands to over {nodes} values",
            where,
            "use fewer anchors and aliases",
        )
    return Problem(
        f"the document holds over {nodes} values",
        where,
        "a recipe names its data files rather than holding the data: move long lists into files",
    )


class _Converter:
    """Turns composed YAML nodes into plain JSON-like data, recording positions and rejecting what a
    recipe cannot hold: non-string keys, duplicate keys, tags for non-JSON types, NaN, recursive aliases."""

    def __init__(self, source: SourceMap, aliased: bool, nodes: int):
        self.source, self.nodes = source, nodes
        self.aliased = aliased  # whether "too many values" comes from aliases repeating values
        self.problems: list[Problem] = []
        self.loader = _Loader("")
        self.active: set[int] = (
            set()
        )  # the nodes being converted: the path from the root, by identity
        self.count = 0
        self.too_deep = False

    def convert(self, node: yaml.Node, path: PathKey) -> Any:
        self.count += 1
        if self.count > self.nodes:
            if self.count == self.nodes + 1:
                self.problems.append(_too_many(self._loc(node), self.aliased, self.nodes))
            return None
        if id(node) in self.active:
            self.problems.append(
                Problem(
                    "an alias refers to a value that contains it",
                    self._loc(node),
                    "remove the recursive alias",
                )
            )
            return None
        # aliases inside aliases nest deeper than the text does; a scalar is no level (as in _check_shape), so a
        # document exactly MAX_DEPTH deep, which _check_shape lets through, is read
        if len(self.active) >= MAX_DEPTH and not isinstance(node, yaml.ScalarNode):
            if not self.too_deep:
                self.too_deep = True
                self.problems.append(_too_deep(self._loc(node), aliased=True))
            return None
        self.source.positions.setdefault(
            path, (node.start_mark.line + 1, node.start_mark.column + 1)
        )
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            if isinstance(node, yaml.SequenceNode):
                return [self.convert(item, path + (i,)) for i, item in enumerate(node.value)]
            return self._scalar(node)
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> JsonObject:
        result: JsonObject = {}
        merged: JsonObject = {}
        for key_node, value_node in node.value:
            if key_node.tag == MERGE_TAG:
                sources = (
                    value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                )
                for item in sources:
                    value = self.convert(item, path)
                    if isinstance(value, dict):
                        merged = {**value, **merged}
                    else:
                        self.problems.append(Problem("'<<' merges only mappings", self._loc(item)))
                continue
            key = self._scalar(key_node)
            if not isinstance(key, str):
                self.problems.append(
                    Problem(
                        f"key {key!r} is not a string",
                        self._loc(key_node),
                        "quote it: YAML reads on/off/yes/no/true/false and numbers as other types",
                    )
                )
                continue
            if key in result:
                first = self.source.locate(path + (key,), key=True)
                self.problems.append(
                    Problem(
                        f"duplicate key '{key}' (first at line {first.line})",
                        self._loc(key_node),
                        "remove one of them; YAML would silently keep only the last",
                    )
                )
                continue
            self.source.positions[path + (key, KEY)] = (
                key_node.start_mark.line + 1,
                key_node.start_mark.column + 1,
            )
            result[key] = self.convert(value_node, path + (key,))
        return {**merged, **result}

    def _scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.problems.append(
                Problem("a mapping or list cannot be used as a key", self._loc(node))
            )
            return None
        try:
            value = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, TypeError) as exc:
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            self.problems.append(
                Problem(
                    f"cannot read this value: {problem}",
                    self._loc(node),
                    "remove the tag or quote the value",
                )
            )
            return None
        if value is None or isinstance(value, (str, bool, int)):
            return value
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                self.problems.append(
                    Problem(
                        f"{node.value!r} is not a finite number",
                        self._loc(node),
                        "quote it if you meant text",
                    )
                )
                return None
            return value
        self.problems.append(
            Problem(
                f"{node.value!r} reads as a {type(value).__name__}, which a recipe cannot hold",
                self._loc(node),
                f'quote it: "{node.value}"',
            )
        )
        return None

    def _loc(self, node: yaml.Node) -> Location:
        return Location(self.source.file, node.start_mark.line + 1, node.start_mark.column + 1)
