"""The shape the code keeps (the project's style rules): small modules and functions, every package folder
installed, and broad excepts only at named boundaries, each saying why. ruff and import-linter (.ci/lint)
check imports, layers and cycles; these are the rules they do not express."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SOURCES = ("engine", "stages", "loaders", "ortflow")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
BOUNDARIES = ("boundary:",)  # the comment an allowed catch-all carries: `# ... boundary: <which> ...`


def python_files() -> list[Path]:
    return sorted(p for folder in SOURCES for p in (ROOT / folder).rglob("*.py"))


def test_modules_stay_small():
    long = [f"{p.relative_to(ROOT)}: {n} lines" for p in python_files()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    assert not long, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"


def test_functions_stay_short():
    long = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, f"split these functions into named steps (over {MAX_FUNCTION_LINES} lines): {long}"


def test_catch_alls_are_named_boundaries():
    """`except Exception`/`BaseException` that does not re-raise hides a reason unless it is a boundary (CLI,
    stage run, plugin import, user code, a remote executor) and says so on its line."""
    unexplained = []
    for path in python_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.ExceptHandler) or node.type is None:
                continue
            names = [n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)]
            if not {"Exception", "BaseException"} & set(names):
                continue
            reraises = any(isinstance(n, ast.Raise) for n in ast.walk(node))
            line = lines[node.lineno - 1]
            if not reraises and not any(word in line for word in BOUNDARIES):
                unexplained.append(f"{path.relative_to(ROOT)}:{node.lineno}: {line.strip()}")
    assert not unexplained, f"narrow these excepts, or name the boundary in a '# boundary: ...' comment: {unexplained}"


def test_every_package_folder_is_installed():
    """setuptools installs only the packages pyproject lists (an editable install hides a missing one)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the check is the same on every version
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    mapping = config["package-dir"]
    folders = {}
    for name, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder).parts
            folders[".".join((name, *relative))] = init.parent
    assert sorted(folders) == sorted(config["packages"])
