"""What a command works on, opened in one place: the workspace (the store, then the recipe through its snapshot),
the recipe alone (validated, for the commands that need no store) and the cache a `cache` command names. Each is
opened on first use and kept, so a command that asks twice opens once, and the commands stay thin: they read
their arguments, call a library verb on what this opened, and hand the result to the console."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ortflow.engine.leaves.errors import OrtflowError

if TYPE_CHECKING:
    from ortflow.engine.cli.output import Output
    from ortflow.engine.contracts.types import Recipe
    from ortflow.engine.pipeline import Workspace
    from ortflow.engine.recipe.graph import StageGraph
    from ortflow.engine.store.artifacts import ArtifactStore
    from ortflow.engine.store.remote import Remote


def open_workspace(
    recipe: Path,
    cache: Path | None,
    overrides: Sequence[str] = (),
    params: Path | None = None,
    out_dir: Path | None = None,
    remote: Remote | None = None,
    out: Output | None = None,
) -> Workspace:
    """The one call of the CLI into Workspace.open; with `out`, what the store pulls from a remote is said."""
    from ortflow.engine.pipeline import Workspace

    messages = {"say": out.say, "warn": out.warn} if out is not None else {}
    return Workspace.open(recipe, overrides, params, cache, out_dir, remote, **messages)


class CommandBase:
    """A command's arguments and what they name, each opened once, on first use."""

    def __init__(self, args: argparse.Namespace, out: Output | None = None) -> None:
        self.args = args
        self.out = out  # where the workspace's store says what it pulls (None: it says nothing)
        self._workspace: Workspace | None = None
        self._recipe: tuple[Recipe, StageGraph] | None = None
        self._store: ArtifactStore | None = None

    def workspace(self, remote: Remote | None = None) -> Workspace:
        """The recipe's workspace (--cache, --out, overrides and params), its store reading through to `remote`."""
        if self._workspace is None:
            args = self.args
            self._workspace = open_workspace(
                args.recipe,
                args.cache,
                args.overrides,
                args.params,
                getattr(args, "out", None),
                remote,
                self.out,
            )
        return self._workspace

    def recipe(self) -> tuple[Recipe, StageGraph]:
        """The recipe validated and its stage graph, without opening a store (validate, dag)."""
        if self._recipe is None:
            from ortflow.engine.pipeline import load

            self._recipe = load(self.args.recipe, self.args.overrides, self.args.params)
        return self._recipe

    def store(self, create: bool = False) -> ArtifactStore:
        """The cache a `cache` command names (--cache, else the first recipe's); made only when `create`."""
        if self._store is None:
            from ortflow.engine.store.artifacts import open_store
            from ortflow.engine.store.location import cache_root

            recipes = self.args.recipes
            root = cache_root(self.args.cache, recipes[0] if recipes else None)
            if not create and not (root / "objects").is_dir():
                raise OrtflowError(
                    f"no artifact store at {root} — name a recipe, or pass --cache DIR"
                )
            self._store = open_store(root)
        return self._store
