"""Which recipe a command means when none is named, found the way dvc finds dvc.yaml: `engine run`,
`engine plan`, `engine status`... in a project folder need no path typed every time.

The recipe is the one named by `recipe:` in the current folder's ortflow.yaml, else the one `*.yaml` file in
the current folder that reads as a recipe (a `version:` and a `stages:` at its top). Parent folders are not
searched: a command run from the wrong folder must not quietly pick up a recipe above it. Several candidates
are an error that lists them, never a guess."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from ortflow.engine.leaves.errors import OrtflowError, RecipeError
from ortflow.engine.leaves.yamlsource import load_yaml
from ortflow.engine.store.remote_config import CONFIG_NAME, default_recipe

SUFFIXES = (".yaml", ".yml")
# A file this large is no hand-written recipe (the largest shipped is 5 KB): not read while looking.
MAX_CANDIDATE_BYTES = 1 << 20
# Arguments that name a file even when it does not exist (so the loader says "file not found", or that a
# model is not a recipe), rather than a stage of the recipe found here.
FILE_SUFFIXES = (*SUFFIXES, ".lock", ".onnx", ".ort", ".pb", ".pt", ".pth", ".safetensors")


@dataclass(frozen=True)
class FoundRecipe:
    path: Path
    origin: str  # why this one: "ortflow.yaml's `recipe:`" or "the only recipe in <folder>"


def is_recipe(path: Path) -> bool:
    """A `*.yaml` file whose top level has `version:` and `stages:`; anything unreadable is not one. Read
    with the recipe's own bounded parser: any YAML may lie in a folder (nested 30,000 deep, an alias bomb)."""
    try:
        if path.suffix not in SUFFIXES or not path.is_file():  # a FIFO named x.yaml is never opened
            return False
        if path.stat().st_size > MAX_CANDIDATE_BYTES:
            return False
        data, _ = load_yaml(path)
    except (OSError, RecipeError):
        return False
    return isinstance(data, dict) and "version" in data and "stages" in data


def candidates(folder: Path) -> list[Path]:
    """The recipes in `folder` itself (not below it, not above it), by name."""
    return sorted(
        (p for p in folder.iterdir() if p.suffix in SUFFIXES and is_recipe(p)), key=lambda p: p.name
    )


def find_recipe(folder: Path | None = None) -> FoundRecipe:
    """The recipe this folder means (see the module's docstring); OrtflowError (exit 2) when none or several."""
    folder = Path.cwd() if folder is None else folder
    named = default_recipe(folder / CONFIG_NAME)
    if named is not None:
        return FoundRecipe(_relative(named), f"`recipe:` in {folder / CONFIG_NAME}")
    found = candidates(folder)
    shown = "the current folder" if folder == Path.cwd() else str(folder)
    if len(found) == 1:
        return FoundRecipe(_relative(found[0]), f"the only recipe in {shown}")
    if not found:
        raise OrtflowError(
            f"no recipe named, and none in {shown} (a *.yaml with `version:` and `stages:`; parent folders are "
            "not searched) — name one (`engine run recipes/quickstart.yaml`), or write one with `engine init MODEL`"
        )
    names = ", ".join(p.name for p in found)
    raise OrtflowError(
        f"{len(found)} recipes in {shown}: {names} — name one (`engine run {found[0].name}`), "
        f"or make one the default with `recipe: {found[0].name}` in {CONFIG_NAME}"
    )


def resolve(args: argparse.Namespace) -> None:
    """Fill in `args.recipe` for a command that takes one when none was named (and `cache pull`'s recipes). With `[RECIPE] [STAGE...]`
    (run, plan), a first word that is neither a file nor file-like is a stage of the recipe found here."""
    if getattr(args, "cache_command", None) == "pull" and not args.recipes:
        args.recipes = [find_recipe().path]  # what to pull is what this folder's recipe locks
    if not hasattr(args, "recipe"):
        return
    named: Path | None = args.recipe
    stages = getattr(args, "stages", None)
    if named is not None and (stages is None or _names_a_file(named)):
        return
    found = find_recipe()
    if named is not None:  # `engine run int8`: a stage of the recipe found here
        args.stages = [str(named), *(stages or [])]
    args.recipe = found.path


def _names_a_file(path: Path) -> bool:
    return path.exists() or path.suffix.lower() in FILE_SUFFIXES or len(path.parts) > 1


def _relative(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path
