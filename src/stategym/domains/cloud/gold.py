"""The cloud task's gold call graph and decision point, built for the realised world.

The graph is a chain into a fan-out (account -> volumes -> one activity read per volume and
one description per instance a volume hangs on), a decision gated by the must-ask slots, the
user's agreement, then a conditional branch of writes (a snapshot where the retention policy
protects the volume's tier, a detach where it is attached), a dry-run check that can only
pass after those writes have taken effect (state preconditions, ``ORDER``), and the delete.
"""

from __future__ import annotations

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import DecisionPoint, EdgeKind, GoldCall, GoldEdge, Precondition
from stategym.kernel.tools import Effect

from .world import CloudBase

READ, WRITE, COMMIT = Effect.READ, Effect.WRITE, Effect.COMMIT


def gold_graph(
    base: CloudBase, knobs: Knobs, best: tuple[str, ...], must_ask: tuple[str, ...]
) -> tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]:
    """Gold nodes, edges and decision points of one cloud task."""
    calls = [GoldCall(f"ask:{s}", "ask") for s in must_ask]
    calls += [
        GoldCall("get_account", "get_account", {}, READ),
        GoldCall("get_retention_policy", "get_retention_policy", {}, READ),
        GoldCall("list_volumes", "list_volumes", {"project_id": base.account.project_id}, READ),
    ]
    edges = [GoldEdge("get_account", "list_volumes", EdgeKind.PIPE)]
    reads = ["get_account", "get_retention_policy", "list_volumes"]
    for vid in base.volumes:
        node = f"activity:{vid}"
        calls.append(GoldCall(node, "get_volume_activity", {"volume_id": vid}, READ))
        edges.append(GoldEdge("list_volumes", node, EdgeKind.PIPE))
        reads.append(node)
    for iid in sorted({v.attached_to for v in base.volumes.values() if v.attached_to}):
        node = f"instance:{iid}"
        calls.append(GoldCall(node, "describe_instance", {"instance_id": iid}, READ))
        edges.append(GoldEdge("list_volumes", node, EdgeKind.PIPE))
        reads.append(node)
    if not knobs.stateful:
        return tuple(calls), tuple(edges), ()
    decision = _decision(best, must_ask)
    if not best:
        return tuple(calls), tuple(edges), (decision,)
    chosen = base.volumes[best[0]]
    writes = []
    if chosen.tier in base.policy.snapshot_tiers:
        writes.append(GoldCall("snapshot", "create_snapshot", {"volume_id": best}, WRITE))
    if chosen.attached_to is not None:
        writes.append(GoldCall("detach", "detach_volume", {"volume_id": best}, WRITE))
    calls += [
        GoldCall("confirm", "confirm"),
        *writes,
        GoldCall("check", "check_deletion", {"volume_id": best}, READ),
        GoldCall("delete", "delete_volume", {"volume_id": best}, COMMIT),
    ]
    first = [w.id for w in writes] or ["check"]
    edges += [GoldEdge(r, "confirm", EdgeKind.DECIDE) for r in reads]
    edges += [GoldEdge(r, f, EdgeKind.DECIDE) for r in reads for f in first]
    edges += [GoldEdge(f"ask:{s}", f, EdgeKind.GATE) for s in must_ask for f in first]
    edges += [GoldEdge("confirm", f, EdgeKind.ORDER) for f in first]
    edges += [GoldEdge(w.id, "check", EdgeKind.ORDER) for w in writes]
    edges.append(GoldEdge("check", "delete", EdgeKind.DECIDE))
    return tuple(calls), tuple(edges), (decision,)


def _decision(best: tuple[str, ...], must_ask: tuple[str, ...]) -> DecisionPoint:
    preconditions = [
        Precondition("the user agreed to delete the volume", "confirm"),
        Precondition(
            "a dry run shows the volume detached and, where the policy asks, backed up", "check"
        ),
        Precondition("which tiers the retention policy protects", "get_retention_policy"),
        Precondition("the volume's size and attachment", "list_volumes"),
    ]
    preconditions += [Precondition(f"{s} from the user", f"ask:{s}") for s in must_ask]
    # no required arguments: the volume id is the option, and deleting any best volume is right
    return DecisionPoint(
        "delete", "delete_volume", bool(best), {}, best[0] if best else None, tuple(preconditions)
    )
