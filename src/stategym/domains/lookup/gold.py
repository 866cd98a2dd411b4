"""The lookup task's gold call graph: searches, then one read per hop, each fed by the last.

A chain is a path of ``PIPE`` edges (search -> subject -> next hop ...); a fan-out is one read
feeding a read per product; a comparison is two chains side by side (a diamond closed by the
answer). There are no writes, no commits and no user nodes.
"""

from __future__ import annotations

from stategym.kernel.task import EdgeKind, GoldCall, GoldEdge
from stategym.kernel.tools import Effect

from .questions import Question


def gold_graph(question: Question) -> tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...]]:
    """Gold nodes and edges of one lookup question."""
    calls: list[GoldCall] = []
    edges: list[GoldEdge] = []

    def read(entity_id: str, source: str) -> str:
        node = f"get:{entity_id}"
        calls.append(GoldCall(node, "get_entity", {"entity_id": entity_id}, Effect.READ))
        edges.append(GoldEdge(source, node, EdgeKind.PIPE))
        return node

    for index, (name, hops) in enumerate(zip(question.subjects, question.hops, strict=True)):
        search = f"search:{index}"
        calls.append(GoldCall(search, "search", {"query": name}, Effect.READ))
        previous = read(hops[0], search)
        if question.form == "extreme":
            for product in hops[1:]:
                read(product, previous)
            continue
        for entity_id in hops[1:]:
            previous = read(entity_id, previous)
    return tuple(calls), tuple(edges)
