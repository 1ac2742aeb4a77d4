"""YAML loading that remembers where every value came from, so errors can name file:line:col."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.errors import Location, Problem, RecipeError

try:  # libyaml is several times faster; the pure-Python loader gives identical nodes
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

PathKey = tuple[Any, ...]
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


def load_yaml(path: Path, display_name: str | None = None) -> tuple[Any, SourceMap]:
    """Parse `path`; returns the plain data and its SourceMap. Syntax errors raise RecipeError."""
    name = display_name or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecipeError([Problem(f"file not found: {path}", hint="check the path")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError([Problem(f"cannot read {path}: {exc}")]) from None
    return parse_yaml(text, name)


def parse_yaml(text: str, name: str) -> tuple[Any, SourceMap]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(name, mark.line + 1, mark.column + 1) if mark else Location(name)
        problem = " ".join(filter(None, [exc.context, exc.problem])) or "invalid YAML"
        raise RecipeError([Problem(f"invalid YAML: {problem}", where, "fix the YAML syntax")]) from None
    except yaml.YAMLError as exc:
        raise RecipeError([Problem(f"invalid YAML: {exc}", Location(name))]) from None
    finally:
        loader.dispose()
    source = SourceMap(name)
    if node is None:
        return None, source
    problems: list[Problem] = []
    data = _to_python(node, (), source, problems, _Loader(""))
    if problems:
        raise RecipeError(problems)
    return data, source


def _to_python(node: yaml.Node, path: PathKey, source: SourceMap, problems: list[Problem], loader: Any) -> Any:
    source.positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):
                problems.append(Problem("mapping keys must be plain scalars", _loc(source, key_node)))
                continue
            if key in result:
                first = source.locate(path + (key,), key=True)
                problems.append(
                    Problem(
                        f"duplicate key '{key}' (first at line {first.line})",
                        _loc(source, key_node),
                        "remove one of them; YAML would silently keep only the last",
                    )
                )
                continue
            source.positions[path + (key, KEY)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            result[key] = _to_python(value_node, path + (key,), source, problems, loader)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_to_python(item, path + (i,), source, problems, loader) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def _loc(source: SourceMap, node: yaml.Node) -> Location:
    return Location(source.file, node.start_mark.line + 1, node.start_mark.column + 1)
