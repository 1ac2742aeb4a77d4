"""engine/recipe/graph.py: the stage graph's order, predecessors, ancestors and cycles, on toy recipes."""

from __future__ import annotations

import random

from ortflow.engine.recipe.graph import StageGraph, cycle_problems, execution_order, stage_graph

from .helpers import NAME, graph_recipe


def test_order_is_topological_with_ties_broken_by_name():
    recipe = graph_recipe({"c": (["a.model"], []), "b": ([], []), "a": (["inputs.model"], [])})
    graph = StageGraph.from_recipe(recipe)
    assert graph.order == ("a", "b", "c")
    assert graph.predecessors == {"a": (), "b": (), "c": ("a",)}


def test_after_orders_without_data_and_a_reference_plus_after_is_one_edge():
    recipe = graph_recipe(
        {"report": ([], ["speed"]), "speed": (["int8.model"], ["int8"]), "int8": ([], [])}
    )
    graph = StageGraph.from_recipe(recipe)
    assert graph.order == ("int8", "speed", "report")
    assert graph.predecessors["speed"] == ("int8",)
    assert stage_graph(recipe).number_of_edges() == 2


def test_sources_and_unknown_stages_make_no_edges():
    """inputs/datasets are not stages; an unknown stage name is the reference check's to report, not the graph's."""
    recipe = graph_recipe(
        {"a": (["inputs.model", "datasets.calibration", "ghost.model"], ["nobody"])}
    )
    assert StageGraph.from_recipe(recipe).predecessors == {"a": ()}


def test_ancestors_are_transitive_and_leave_out_the_stage_and_its_siblings():
    recipe = graph_recipe(
        {
            "a": ([], []),
            "b": (["a.model"], []),
            "c": (["b.model"], []),
            "d": (["a.model"], []),
            "e": (["c.model", "d.model"], []),
        }
    )
    graph = StageGraph.from_recipe(recipe)
    assert graph.ancestors("e") == {"a", "b", "c", "d"}
    assert graph.ancestors("c") == {"a", "b"}
    assert graph.ancestors("a") == set()


def test_the_plain_order_is_the_networkx_order_on_random_dags():
    """from_recipe (Kahn, no networkx import on a cached run) must give the order the networkx graph gives:
    plans and keys print in that order."""
    rng = random.Random(28)
    for _ in range(30):
        names = [f"s{i:02d}" for i in range(rng.randint(1, 25))]
        rng.shuffle(names)
        stages = {}
        for i, name in enumerate(names):
            earlier = names[:i]
            refs = [f"{n}.model" for n in rng.sample(earlier, min(len(earlier), rng.randint(0, 2)))]
            after = rng.sample(earlier, min(len(earlier), rng.randint(0, 1)))
            stages[name] = (refs, after)
        recipe = graph_recipe(stages)
        plain, networkx = (
            StageGraph.from_recipe(recipe),
            StageGraph.from_networkx(stage_graph(recipe)),
        )
        assert plain == networkx
        assert list(plain.order) == execution_order(stage_graph(recipe))


def test_a_cycle_has_no_order_and_is_reported_with_its_path_at_its_first_stage():
    recipe = graph_recipe({"b": (["a.model"], []), "a": (["b.model"], []), "c": (["a.model"], [])})
    assert StageGraph.from_recipe(recipe) is None
    problems = cycle_problems(stage_graph(recipe), recipe)
    assert [p.message for p in problems] == ["cycle between stages: a -> b -> a"]
    assert (
        str(problems[0].location) == f"{NAME}:2:3"
    )  # a, the cycle's first stage by name, is written second


def test_a_stage_after_itself_is_a_cycle():
    recipe = graph_recipe({"a": ([], ["a"])})
    assert StageGraph.from_recipe(recipe) is None
    assert [p.message for p in cycle_problems(stage_graph(recipe), recipe)] == [
        "cycle between stages: a -> a"
    ]


def test_two_cycles_are_two_problems_in_a_stable_order():
    recipe = graph_recipe(
        {
            "z": (["y.model"], []),
            "y": (["z.model"], []),
            "b": ([], ["a"]),
            "a": ([], ["b"]),
            "ok": (["a.model"], []),
        }
    )
    messages = [p.message for p in cycle_problems(stage_graph(recipe), recipe)]
    assert messages == ["cycle between stages: a -> b -> a", "cycle between stages: y -> z -> y"]
