"""Node order of a written model. ONNX requires topological order, and tools break it: the fp16 converter
appends the Casts it inserts after their consumers, and ORT's quantizers misorder a main graph whose nodes'
subgraphs (`If`/`Loop` branches) read values from the outer graph, since they track declared inputs only
(onnx.checker: "Nodes in a graph must be topologically sorted"). Sorting again with the subgraphs' outer
reads counted as inputs fixes both without changing a node."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _subgraphs(node: Any) -> list[Any]:
    """The graphs a node carries as attributes (If's branches, Loop's and Scan's bodies)."""
    import onnx

    found = []
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            found.append(attribute.g)
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            found.extend(attribute.graphs)
    return found


def outer_reads(graph: Any) -> set[str]:
    """Values a (sub)graph's nodes read that the graph neither produces nor declares: they come from outside."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    read: set[str] = set()
    for node in graph.node:
        read |= _needs(node)
        defined |= set(node.output)
    return read - defined


def _needs(node: Any) -> set[str]:
    """What a node reads: its inputs, and what its subgraphs read from outside them."""
    needs = set(node.input)
    for sub in _subgraphs(node):
        needs |= outer_reads(sub)
    return needs - {""}


def sort_graph(graph: Any) -> bool:
    """Put the graph's nodes in an order where every value is produced before it is read (subgraphs' outer
    reads included), keeping the present order where it is already valid. Returns whether anything moved."""
    import heapq

    produced_by = {out: i for i, node in enumerate(graph.node) for out in node.output if out}
    waiting_on = [
        {produced_by[n] for n in _needs(node) if n in produced_by and produced_by[n] != i}
        for i, node in enumerate(graph.node)
    ]
    readers: dict[int, list[int]] = {}
    for i, producers in enumerate(waiting_on):
        for producer in producers:
            readers.setdefault(producer, []).append(i)
    ready = [i for i, producers in enumerate(waiting_on) if not producers]
    heapq.heapify(ready)  # the lowest index first: the present order wherever it is already valid
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for reader in readers.get(i, []):
            waiting_on[reader].discard(i)
            if not waiting_on[reader]:
                heapq.heappush(ready, reader)
    if len(order) < len(graph.node):
        return False  # a cycle: leave it for onnx.checker to report
    if order == list(range(len(graph.node))):
        return False
    nodes = [graph.node[i] for i in order]
    del graph.node[:]
    graph.node.extend(nodes)
    return True


def resort_if_needed(path: Path) -> bool:
    """Re-sort a written model's main graph in place when its order is invalid; True when it was."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    if not sort_graph(model.graph):
        return False
    onnx.save_model(model, str(path))
    return True
