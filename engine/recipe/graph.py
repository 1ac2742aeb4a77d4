"""The recipe's stage graph: stage -> stage edges from data references and `after:`. StageGraph (plain data, built
without networkx) is what runs use; the networkx graph finds and reports cycles and renders the DAG."""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ortflow.engine.contracts.types import Recipe
from ortflow.engine.leaves.errors import Problem
from ortflow.engine.store.hashing import hash_bytes

if TYPE_CHECKING:
    import networkx as nx  # type: ignore[import-untyped]  # networkx ships no stubs


@dataclass(frozen=True)
class StageGraph:
    """What the scheduler needs of the DAG: a topological order and each stage's predecessors.

    Derived from the networkx graph once; plain data, so a validated recipe's graph can be stored and
    reloaded without importing networkx again.
    """

    order: tuple[str, ...]
    predecessors: dict[str, tuple[str, ...]]

    @classmethod
    def from_recipe(cls, recipe: Recipe) -> StageGraph | None:
        """Without networkx (its import alone costs ~0.2 s on a cached re-run): Kahn's algorithm with ties
        broken by name, the order execution_order gives. None when there is a cycle (stage_graph and
        cycle_problems then say where)."""
        preds: dict[str, set[str]] = {name: set() for name in recipe.stages}
        for name, spec in recipe.stages.items():
            preds[name].update(
                r.source for r in spec.refs() if not r.is_source and r.source in recipe.stages
            )
            preds[name].update(a for a in spec.after if a in recipe.stages)
        consumers: dict[str, list[str]] = {name: [] for name in preds}
        for name, found in preds.items():
            for pred in found:
                consumers[pred].append(name)
        waiting = {name: len(found) for name, found in preds.items()}
        ready = [name for name, count in waiting.items() if count == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            name = heapq.heappop(ready)
            order.append(name)
            for consumer in consumers[name]:
                waiting[consumer] -= 1
                if waiting[consumer] == 0:
                    heapq.heappush(ready, consumer)
        if len(order) != len(preds):
            return None
        return cls(tuple(order), {name: tuple(sorted(found)) for name, found in preds.items()})

    @classmethod
    def from_networkx(cls, graph: "nx.DiGraph") -> "StageGraph":
        return cls(
            tuple(execution_order(graph)),
            {n: tuple(sorted(graph.predecessors(n))) for n in graph.nodes},
        )

    def ancestors(self, name: str) -> set[str]:
        found: set[str] = set()
        todo = list(self.predecessors[name])
        while todo:
            node = todo.pop()
            if node not in found:
                found.add(node)
                todo.extend(self.predecessors[node])
        return found


def stage_graph(recipe: Recipe) -> "nx.DiGraph":
    """The graph of whatever stages resolved, cycles included."""
    import networkx as nx

    graph = nx.DiGraph()
    for name in recipe.stages:
        graph.add_node(name)
    for name, spec in recipe.stages.items():
        for ref in spec.refs():
            if not ref.is_source and ref.source in recipe.stages:
                graph.add_edge(ref.source, name, via=str(ref))
        for before in spec.after:
            if before in recipe.stages and not graph.has_edge(before, name):
                graph.add_edge(before, name, via="after")
    return graph


def cycle_problems(graph: "nx.DiGraph", recipe: Recipe) -> list[Problem]:
    problems = []
    for cycle in _cycles(graph):
        path = " -> ".join([*cycle, cycle[0]])
        first = recipe.stages[cycle[0]]
        problems.append(
            Problem(
                f"cycle between stages: {path}",
                first.location,
                "remove one of these references or `after:` entries",
            )
        )
    return problems


def _cycles(graph: "nx.DiGraph") -> list[list[str]]:
    import networkx as nx

    cycles = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1 or any(graph.has_edge(n, n) for n in component):
            sub = graph.subgraph(component)
            cycle = [edge[0] for edge in nx.find_cycle(sub)]
            start = cycle.index(min(cycle))  # stable order for messages and tests
            cycles.append(cycle[start:] + cycle[:start])
    return sorted(cycles)


def execution_order(graph: "nx.DiGraph") -> list[str]:
    """Topological order, ties broken by name so plans print the same way every time."""
    import networkx as nx

    return list(nx.lexicographical_topological_sort(graph))


def render_text(graph: "nx.DiGraph", recipe: Recipe) -> str:
    lines = []
    for name in execution_order(graph):
        spec = recipe.stages[name]
        sources = [str(r) for r in spec.refs()] + [f"after {a}" for a in spec.after]
        lines.append(f"{name} ({spec.uses})")
        for i, src in enumerate(sources):
            lines.append(f"  {'└' if i == len(sources) - 1 else '├'}── {src}")
    return "\n".join(lines)


def render_mermaid(graph: "nx.DiGraph", recipe: Recipe) -> str:
    def node(
        text: str,
    ) -> str:  # Mermaid ids are plain words; a matrix instance id has brackets, commas and =
        dotted = text.replace(".", "__")
        safe = re.sub(r"[^A-Za-z0-9_]", "_", dotted)
        return (
            safe if safe == dotted else f"{safe}_{hash_bytes(text.encode())[:12]}"
        )  # distinct ids stay distinct

    def text(value: str) -> str:  # inside a quoted Mermaid label
        return value.replace('"', "#quot;")

    lines = ["flowchart LR"]
    for kind, names in (("inputs", recipe.inputs), ("datasets", recipe.datasets)):
        for name in names:
            lines.append(f'  {node(f"{kind}.{name}")}[("{text(f"{kind}.{name}")}")]')
    for name in execution_order(graph):
        lines.append(f'  {node(name)}["{text(name)}<br/>{recipe.stages[name].uses}"]')
    for name in execution_order(graph):
        for port, binding in sorted(recipe.stages[name].inputs.items()):
            for ref in binding.refs:
                origin = node(str(ref)) if ref.is_source else node(ref.source)
                lines.append(f"  {origin} -->|{port}| {node(name)}")
        for before in recipe.stages[name].after:
            lines.append(f"  {node(before)} -.-> {node(name)}")
    return "\n".join(lines)


def render_dot(graph: "nx.DiGraph", recipe: Recipe) -> str:
    def q(text: str) -> str:  # a DOT string: a matrix value may hold quotes or backslashes
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {q(recipe.name)} {{", "  rankdir=LR;"]
    for kind, names in (("inputs", recipe.inputs), ("datasets", recipe.datasets)):
        for name in names:
            lines.append(f"  {q(f'{kind}.{name}')} [shape=cylinder];")
    for name in execution_order(graph):
        label = q(name)[:-1] + "\\n" + recipe.stages[name].uses + '"'  # DOT's own line break
        lines.append(f"  {q(name)} [shape=box, label={label}];")
        for port, binding in sorted(recipe.stages[name].inputs.items()):
            for ref in binding.refs:
                origin = str(ref) if ref.is_source else ref.source
                lines.append(f"  {q(origin)} -> {q(name)} [label={q(port)}];")
        for before in recipe.stages[name].after:
            lines.append(f"  {q(before)} -> {q(name)} [style=dashed];")
    lines.append("}")
    return "\n".join(lines)
