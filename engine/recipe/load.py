"""Recipe loading: YAML -> overrides -> schema checks -> a validated, fully resolved Recipe."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ortflow.engine.contracts.registry import Plugins
from ortflow.engine.contracts.types import Recipe, StageSpec
from ortflow.engine.leaves.errors import Location, OrtflowError, Problem, RecipeError
from ortflow.engine.leaves.json_types import Json, JsonObject
from ortflow.engine.leaves.yamlsource import load_yaml
from ortflow.engine.recipe.credentials import credential_problems
from ortflow.engine.recipe.matrix import DEFAULT_MAX_STAGES, Expansion, expand
from ortflow.engine.recipe.overrides import apply_overrides
from ortflow.engine.recipe.schema import recipe_is_valid, recipe_schema
from ortflow.engine.recipe.schema_errors import validate
from ortflow.engine.recipe.sources import resolve_datasets, resolve_inputs
from ortflow.engine.recipe.stage_entry import StageEntry, read_stages
from ortflow.engine.recipe.stage_specs import Scope, resolve_stages


def read_recipe(
    path: Path, plugins: Plugins, overrides: Sequence[str] = (), params_file: Path | None = None
) -> tuple[Recipe, list[Problem]]:
    """The recipe as far as it could be resolved, and every problem found (syntax errors raise)."""
    path = Path(path)
    display = _display_name(path)
    data, source = load_yaml(path, display)
    if not isinstance(data, dict):
        raise RecipeError(
            [
                Problem(
                    "a recipe must be a YAML mapping",
                    Location(display),
                    "see recipes/quickstart.yaml",
                )
            ]
        )
    problems = apply_overrides(data, source, list(overrides), params_file)
    problems.extend(credential_problems(data, source))
    if not recipe_is_valid(data):
        problems.extend(validate(data, recipe_schema(), source))
    # Go on past schema problems: every check below skips what has the wrong shape (already reported),
    # so one pass reports everything that is wrong.
    inputs_part, datasets_part = (_section(data.get(k)) for k in ("inputs", "datasets"))
    inputs = resolve_inputs(inputs_part, path.parent, source, problems)
    datasets = resolve_datasets(datasets_part, plugins.datasets, path.parent, source, problems)
    written = read_stages(data.get("stages"))
    expansion = expand(
        written, _port_shapes(written, plugins), source, _max_stages(data.get("max_stages"))
    )
    problems.extend(expansion.problems)
    scope = Scope(
        expansion.stages,
        {},
        set(inputs_part),
        set(datasets_part),
        source,
        problems,
        {name: spec.path for name, spec in inputs.items()},
    )
    stages = resolve_stages(scope, plugins)
    _mark_instances(stages, expansion)
    target_cpu = _target_cpu(data.get("target"))
    for spec in stages.values():
        spec.target_cpu = target_cpu
    recipe = Recipe(
        path.resolve(),
        str(data.get("name")),
        inputs,
        datasets,
        stages,
        source,
        list(overrides),
        expansion.matrices,
        target_cpu,
    )
    return recipe, _once_per_matrix(problems, expansion.matrices)


def _section(value: Json) -> JsonObject:
    """`inputs:` or `datasets:`, name -> entry; anything but a mapping reads as none (the schema
    reports it)."""
    return value if isinstance(value, dict) else {}


def _max_stages(limit: Json) -> int:
    """The recipe's `max_stages:` where it is a positive integer (else the schema reports it), or the default."""
    return (
        limit
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
        else DEFAULT_MAX_STAGES
    )


def _mark_instances(stages: dict[str, StageSpec], expansion: Expansion) -> None:
    """Each resolved instance of a matrix stage learns its template and axis values (plans, reports and
    `engine run <template>` go by them)."""
    for instances in expansion.instances.values():
        for instance in instances or []:
            if instance.id in stages and instance.id != instance.template:
                stages[instance.id].template, stages[instance.id].axes = (
                    instance.template,
                    instance.axes,
                )


def _target_cpu(target: Json) -> str:
    """`target: {cpu: ...}`: the CPU the recipe builds for ("native": this machine's)."""
    cpu = target.get("cpu") if isinstance(target, dict) else None
    return cpu if isinstance(cpu, str) else "native"


def _once_per_matrix(problems: list[Problem], matrices: dict[str, list[str]]) -> list[Problem]:
    """A problem every variant of a matrix stage has (a wrong parameter written once) is reported once.
    Linear in problems: each message is scanned once for the instance ids it quotes."""
    owner = {instance: template for template, ids in matrices.items() for instance in ids}
    generals = (
        [_generalized(p, owner, matrices) for p in problems]
        if owner
        else [(p, 0) for p in problems]
    )
    counts: dict[str, int] = {}
    for general, _ in generals:
        counts[str(general)] = counts.get(str(general), 0) + 1
    kept: list[Problem] = []
    seen: set[str] = set()
    for problem, (general, variants) in zip(problems, generals):
        text = str(general)
        if counts[text] > 1 and counts[text] == variants:
            if text not in seen:
                seen.add(text)
                kept.append(general)
        else:
            kept.append(problem)
    return kept


def _generalized(
    problem: Problem, owner: dict[str, str], matrices: dict[str, list[str]]
) -> tuple[Problem, int]:
    """The problem said of the matrix stage instead of its variant (`'int8' (every variant)`), and how many
    variants that stage has (0: it names none). An id may itself hold quotes, so each quoted span is tried
    from the shortest up."""
    message = problem.message
    quotes = [i for i, char in enumerate(message) if char == "'"]
    parts: list[str] = []
    variants = start = q = 0
    while q < len(quotes):
        for r in range(q + 1, len(quotes)):
            template = owner.get(message[quotes[q] + 1 : quotes[r]])
            if template is not None:
                parts += [message[start : quotes[q]], f"'{template}' (every variant)"]
                variants, start, q = max(variants, len(matrices[template])), quotes[r] + 1, r
                break
        q += 1
    return Problem("".join([*parts, message[start:]]), problem.location, problem.hint), variants


def _port_shapes(raw: dict[str, StageEntry], plugins: Plugins) -> dict[str, dict[str, bool]]:
    """Per stage, whether each input port takes many references: it decides what `x.model[*]` means there."""
    shapes: dict[str, dict[str, bool]] = {}
    for name, spec in raw.items():
        uses = spec.uses
        if uses in plugins.stages:
            try:
                shapes[name] = {p.name: p.many for p in plugins.stages.get(uses).inputs}
            except OrtflowError:
                pass  # a broken plugin: reported where the stage is resolved
    return shapes


def _display_name(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
