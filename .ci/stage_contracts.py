"""import-linter contracts over the built-in stages, whose list is read at lint time from the entry points.

The stages are the modules that the installed `ortflow.stages` entry points name (what the registry loads), so a
new built-in stage is its module and its entry-point line: no import-linter list to keep in step by hand. What
the stages share is every package in `stages/`'s top folder (the theme packages), found in the import graph.
A module in the top folder with no entry point, or an entry point with no module, breaks the contract with the
fix, so nothing in the top folder escapes the isolation contracts.

`.ci/lint` puts this folder on PYTHONPATH and pyproject's `contract_types` names the two types.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import entry_points

from grimp import ImportGraph
from importlinter.application import output
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.independence import IndependenceContract
from importlinter.domain import fields
from importlinter.domain.contract import ContractCheck
from importlinter.domain.imports import ModuleExpression


@dataclass(frozen=True)
class StageLayout:
    """The top folder of the stages' package split as the contracts need it, and what disagrees."""

    stages: frozenset[str]
    themes: frozenset[str]
    problems: tuple[str, ...]


def entry_point_modules(group: str, package: str) -> set[str]:
    """The modules directly in `package` that the installed entry points of `group` name."""
    named = {point.module for point in entry_points(group=group)}
    return {module for module in named if module.rpartition(".")[0] == package}


def stage_layout(graph: ImportGraph, group: str, package: str) -> StageLayout:
    """Stages from the entry points, themes from the graph; each disagreement as its fix."""
    stages = entry_point_modules(group, package)
    children = graph.find_children(package)
    themes = {child for child in children if graph.find_children(child)}
    problems = [
        f"{module}: a module in {package}'s top folder, which holds only stages, with no entry point in "
        f'[project.entry-points."{group}"]: add one, or move the helper into a theme package'
        for module in sorted(children - themes - stages)
    ]
    problems += [
        f"{module}: an entry point of {group!r} names it, but the package has no such module"
        for module in sorted(stages - children)
    ]
    return StageLayout(frozenset(stages & children), frozenset(themes), tuple(problems))


def _set_modules(contract: object, field: str, modules: frozenset[str]) -> None:
    """A module field filled as import-linter fills it from the configuration (the parsed expressions)."""
    setattr(contract, field, {ModuleExpression(module) for module in modules})


def _broken_layout(layout: StageLayout) -> ContractCheck:
    return ContractCheck(kept=False, metadata={"layout_problems": list(layout.problems)})


def _render_layout(check: ContractCheck) -> bool:
    """Prints the layout's problems; False where the check broke on imports instead."""
    problems = check.metadata.get("layout_problems")
    for problem in problems or ():
        output.print_error(problem, bold=False)
    return bool(problems)


class StagesIndependent(IndependenceContract):
    """No stage imports another (they find each other through the registry), the stages being the entry points'."""

    type_name = "built_in_stages_independent"
    entry_point_group = fields.StringField()
    package = fields.StringField()
    modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        layout = stage_layout(graph, str(self.entry_point_group), str(self.package))
        if layout.problems:
            return _broken_layout(layout)
        _set_modules(self, "modules", layout.stages)
        return super().check(graph, verbose)

    def render_broken_contract(self, check: ContractCheck) -> None:
        if not _render_layout(check):
            super().render_broken_contract(check)


class ThemesImportNoStage(ForbiddenContract):
    """What stages share (every package in the stages' top folder) imports no stage."""

    type_name = "stage_themes_import_no_stage"
    entry_point_group = fields.StringField()
    package = fields.StringField()
    source_modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)
    forbidden_modules = fields.SetField(subfield=fields.ModuleExpressionField(), required=False)

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        layout = stage_layout(graph, str(self.entry_point_group), str(self.package))
        if layout.problems:
            return _broken_layout(layout)
        _set_modules(self, "source_modules", layout.themes)
        _set_modules(self, "forbidden_modules", layout.stages)
        return super().check(graph, verbose)

    def render_broken_contract(self, check: ContractCheck) -> None:
        if not _render_layout(check):
            super().render_broken_contract(check)
