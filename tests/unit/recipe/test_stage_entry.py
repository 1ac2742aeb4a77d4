"""engine/recipe/stage_entry.py: a `stages:` entry read once into a StageEntry, each part the engine relies on
narrowed there (a part of the wrong shape reads as absent: the recipe schema reports it), on in-memory recipes
and through the whole loader."""

from __future__ import annotations

from pathlib import Path

from ortflow.engine.contracts.registry import Plugins
from ortflow.engine.recipe.load import read_recipe
from ortflow.engine.recipe.stage_entry import StageEntry, read_stages

from .helpers import parsed

STAGES = """
stages:
  opt:
    uses: graph_optimization
    in: {model: inputs.model}
    with: {level: all}
    after: [prep, 3]
    resources: {gpu: 1, memory: 2.5, label: big}
    workers: node-a
    optional: true
  odd:
    uses: [not, a, name]
    after: prep
    workers: [node-a, 7, node-b]
    optional: yes please
  prep: just text
"""


def test_each_part_is_read_by_name_and_narrowed_where_the_engine_relies_on_its_shape():
    data, _ = parsed(STAGES)
    entries = read_stages(data["stages"])
    assert list(entries) == ["opt", "odd", "prep"]
    assert entries["opt"] == StageEntry(
        uses="graph_optimization",
        params={"level": "all"},
        inputs={"model": "inputs.model"},
        after=["prep", 3],  # a wrong item keeps its place: errors name it by index
        resources={"gpu": 1, "memory": 2.5},
        workers=["node-a"],
        optional=True,
    )


def test_a_part_of_the_wrong_shape_reads_as_absent_and_a_non_mapping_entry_keeps_its_name():
    data, _ = parsed(STAGES)
    entries = read_stages(data["stages"])
    odd = entries["odd"]
    assert (odd.uses, odd.after, odd.workers, odd.optional) == ("", [], ["node-a", "node-b"], False)
    assert entries["prep"] == StageEntry(mapping=False)
    assert read_stages(["a", "list"]) == {} and read_stages(None) == {}


def test_the_loaded_recipe_carries_the_narrowed_parts_to_each_matrix_instance(tmp_path: Path):
    (tmp_path / "m.onnx").write_bytes(b"")
    recipe_file = tmp_path / "r.yaml"
    recipe_file.write_text(
        "version: 1\nname: r\ninputs: {model: m.onnx}\nstages:\n"
        "  opt:\n    uses: graph_optimization\n    in: {model: inputs.model}\n"
        "    matrix: {level: [basic, all]}\n    workers: node-a\n    resources: {gpu: 1}\n"
        "    optional: true\n"
        "  last:\n    uses: graph_optimization\n    in: {model: inputs.model}\n    after: [opt]\n"
    )
    recipe, problems = read_recipe(recipe_file, Plugins())
    assert not problems, problems
    variants = ["opt[level=basic]", "opt[level=all]"]
    for name in variants:
        spec = recipe.stages[name]
        assert (spec.workers, spec.resources, spec.optional) == (["node-a"], {"gpu": 1}, True)
        assert spec.params["level"] == name.removeprefix("opt[level=").rstrip("]")
    assert (
        recipe.stages["last"].after == variants
    )  # `after:` a matrix stage waits for every variant
