"""ortflow engine: recipes, the stage DAG, the content-addressed artifact store and the CLI (installed as
ortflow.engine). Its floors, top to bottom (docs/architecture.md; pyproject's import-linter contracts keep them):
cli -> pipeline, starter -> run, publish -> recipe -> store -> ort -> contracts -> leaves.

The modules that sat in this folder before the floor plan (stage, errors, registry...) still import under their old
names (ortflow.engine.<name>) for one release, as the same module objects: plugins written against them keep
working (the registry's warning names the ortflow.api import to use instead)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

_CLI = ("commands trust_commands cli_starter cli_help starter_commands console console_tables table_fit listings "
        "recipe_discovery doctor stage_reference transfer_view cache_scope")  # fmt: skip
_CONTRACTS = ("types stage declarations documents metric dataset builds params provenance benchmark_results "
              "report_section registry")  # fmt: skip
_LEAVES = ("errors json_types environment cuda_provider secrets schema_check yamlsource disk_space wording "
           "terminal_text detection_heads")  # fmt: skip
# old module name under ortflow.engine -> where it lives now
MOVED = {
    **{name: f"{__name__}.cli.{name}" for name in _CLI.split()},
    **{name: f"{__name__}.contracts.{name}" for name in _CONTRACTS.split()},
    **{name: f"{__name__}.leaves.{name}" for name in _LEAVES.split()},
}


class _OldName(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `ortflow.engine.<old>` and hands back the module at its new place (one module, two names)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        prefix, _, name = fullname.rpartition(".")
        if prefix != __name__ or name not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name.rpartition(".")[2]])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported under its new name."""


if not any(isinstance(finder, _OldName) for finder in sys.meta_path):
    sys.meta_path.append(_OldName())
