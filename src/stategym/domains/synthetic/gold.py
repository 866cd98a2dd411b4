"""The gold plan of a synthetic task: calls, edges and the commit decision point.

Node ids are canonical (``link1``, ``source2``, ``hold``, ``ask:limit``...); the tools they
call carry the surface's names, so renaming a surface leaves the plan's graph unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import (
    DecisionPoint,
    EdgeKind,
    GoldCall,
    GoldEdge,
    Precondition,
    Value,
)
from stategym.kernel.tools import Effect
from stategym.topology.motifs import Spec

from .surface import Surface
from .tools import expected_value, input_key, option_field
from .world import Option, SynthBase


class _Plan:
    def __init__(self, surface: Surface, base: SynthBase) -> None:
        self.surface, self.base = surface, base
        self.calls: list[GoldCall] = []
        self.edges: list[GoldEdge] = []

    def read(
        self, node: str, tool_key: str, inputs: tuple[str, ...], after: tuple[str | None, ...]
    ) -> None:
        """A lookup taking ``inputs``, each piped from the matching node of ``after``."""
        args: Mapping[str, Value] = {
            self.surface.values[k]: expected_value(self.base, k) for k in inputs
        }
        self.calls.append(GoldCall(node, self.surface.tool(tool_key), args, Effect.READ))
        for src in after:
            if src is not None:
                self.edges.append(GoldEdge(src, node, EdgeKind.PIPE))


def _lookups(spec: Spec, plan: _Plan) -> str | None:
    """Chain, diamond and branch; returns the node whose value the sources take."""
    tail: str | None = None
    previous = "ref"
    for i in range(1, spec.chain + 1):
        plan.read(f"link{i}", f"link{i}", (previous,), (tail,))
        tail, previous = f"link{i}", f"k{i}"
    if spec.diamond:
        key = input_key(spec, "diamond")
        plan.read("left", "left", (key,), (tail,))
        plan.read("right", "right", (key,), (tail,))
        plan.read("merge", "merge", ("left", "right"), ("left", "right"))
        tail = "merge"
    if spec.branch:
        key = input_key(spec, "branch")
        plan.read("route", "route", (key,), (tail,))
        plan.read("via", f"via{plan.base.route}", (key,), (tail,))
        plan.edges.append(GoldEdge("route", "via", EdgeKind.DECIDE))
        tail = "via"
    return tail


def gold_plan(
    spec: Spec,
    surface: Surface,
    knobs: Knobs,
    base: SynthBase,
    final: Mapping[str, Option],
    best: tuple[str, ...],
    must_ask: tuple[str, ...],
) -> tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]:
    """Gold calls, edges and decision points of a synthetic task."""
    plan = _Plan(surface, base)
    plan.calls += [GoldCall(f"ask:{s}", "ask") for s in must_ask]
    tail = _lookups(spec, plan)
    key = input_key(spec, "sources")
    sources = [f"source{i}" for i in range(1, spec.fanout + 1)]
    for node in sources:
        plan.read(node, node, (key,), (tail,))
    if not knobs.stateful:
        return tuple(plan.calls), tuple(plan.edges), ()
    listing = {f"source{final[o].source}" for o in best}
    if best:
        _commit_plan(spec, surface, plan, best, sources, listing, must_ask)
    pre = [Precondition(f"{s} from the user", f"ask:{s}") for s in must_ask]
    if spec.verifycommit:
        pre += [
            Precondition(f"fresh price of the chosen {surface.noun}", "hold"),
            Precondition(f"the user agreed to the {surface.noun}", "confirm"),
        ]
    else:
        pre += [
            Precondition(f"the chosen {surface.noun}'s listing", node) for node in sorted(listing)
        ]
    if spec.precond:
        pre.append(Precondition(f"the {surface.noun} is prepared", "prepare"))
    decision = DecisionPoint(
        "buy", surface.tool("buy"), bool(best), {}, best[0] if best else None, tuple(pre), 1.0
    )
    return tuple(plan.calls), tuple(plan.edges), (decision,)


def _commit_plan(
    spec: Spec,
    surface: Surface,
    plan: _Plan,
    best: tuple[str, ...],
    sources: list[str],
    listing: set[str],
    must_ask: tuple[str, ...],
) -> None:
    pick = {option_field(surface): best}
    choices = ["hold" if spec.verifycommit else "buy"] + (["prepare"] if spec.precond else [])
    if spec.verifycommit:
        plan.calls.append(GoldCall("hold", surface.tool("hold"), pick, Effect.WRITE))
    if spec.precond:
        plan.calls.append(GoldCall("prepare", surface.tool("prepare"), pick, Effect.WRITE))
    if spec.verifycommit:
        plan.calls += [
            GoldCall("confirm", "confirm"),
            GoldCall("buy", surface.tool("buy"), {}, Effect.COMMIT),
        ]
        plan.edges += [
            GoldEdge("hold", "confirm", EdgeKind.DECIDE),
            GoldEdge("hold", "buy", EdgeKind.PIPE),
            GoldEdge("confirm", "buy", EdgeKind.ORDER),
        ]
    else:
        plan.calls.append(GoldCall("buy", surface.tool("buy"), pick, Effect.COMMIT))
    if spec.precond:
        plan.edges.append(GoldEdge("prepare", "buy", EdgeKind.ORDER))
    for choice in choices:
        plan.edges += [
            GoldEdge(s, choice, EdgeKind.PIPE if s in listing else EdgeKind.DECIDE) for s in sources
        ]
        plan.edges += [GoldEdge(f"ask:{s}", choice, EdgeKind.GATE) for s in must_ask]
