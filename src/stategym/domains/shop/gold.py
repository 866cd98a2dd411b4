"""The shop's gold call graph and its checkout decision point, built for one realised task.

Reads: the account, the policy, the catalog search, and per product a diamond of four reads
fed by the search -- ``get_offers`` (vendors and prices), ``get_shipping_quote`` (also fed the
address id by ``get_account``), ``check_stock`` and ``get_product`` (brand, eco label) -- that
join at the cart, where the offer is chosen. When an offer should be bought, a chain of two
writes: the cart line, then the delivery address (fed by ``get_account``; it must follow the
last cart change); after the delivery, the cart review (the verify-before-commit read) and,
only when the total is above the policy's threshold, a purchase approval; the buyer's
confirmation; and checkout, which joins the cart and the approval."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import DecisionPoint, EdgeKind, GoldCall, GoldEdge, Precondition
from stategym.kernel.tools import Effect


@dataclass(frozen=True, slots=True)
class Purchase:
    """What the gold graph of one task depends on.

    Attributes:
        category: the catalog query.
        quantity: units requested.
        address_id: the delivery address on file.
        products: every product id the search returns, in order.
        best: the best offers (empty when nothing should be bought).
        choice: the best offer the expert buys.
        choice_product: its product.
        approval: its total is above the policy's threshold, so checkout needs an approval
            (the conditional branch).
        must_ask: the slots only the buyer knows.
    """

    category: str
    quantity: int
    address_id: str
    products: Sequence[str]
    best: tuple[str, ...]
    choice: str | None
    choice_product: str | None
    approval: bool
    must_ask: tuple[str, ...]


_DIAMOND = ("offers", "quote", "stock", "product")
"""The per-product reads, named ``<kind>:<product id>`` in the gold graph."""

Graph = tuple[tuple[GoldCall, ...], tuple[GoldEdge, ...], tuple[DecisionPoint, ...]]


def gold_graph(purchase: Purchase, knobs: Knobs) -> Graph:
    """Gold calls, edges and decision points (none when the task is stateless)."""
    calls = [GoldCall(f"ask:{s}", "ask") for s in purchase.must_ask]
    calls += [
        GoldCall("get_purchasing_policy", "get_purchasing_policy", {}, Effect.READ),
        GoldCall("search", "search_catalog", {"query": purchase.category}, Effect.READ),
        GoldCall("get_account", "get_account", {}, Effect.READ),
    ]
    edges: list[GoldEdge] = []
    for pid in purchase.products:
        calls += [
            GoldCall(f"offers:{pid}", "get_offers", {"product_id": pid}, Effect.READ),
            GoldCall(
                f"quote:{pid}",
                "get_shipping_quote",
                {"product_id": pid, "address_id": purchase.address_id},
                Effect.READ,
            ),
            GoldCall(f"stock:{pid}", "check_stock", {"product_id": pid}, Effect.READ),
            GoldCall(f"product:{pid}", "get_product", {"product_id": pid}, Effect.READ),
        ]
        edges += [GoldEdge("search", f"{kind}:{pid}", EdgeKind.PIPE) for kind in _DIAMOND]
        edges.append(GoldEdge("get_account", f"quote:{pid}", EdgeKind.PIPE))
    if not knobs.stateful:
        return tuple(calls), tuple(edges), ()
    if purchase.best:
        more_calls, more_edges = _purchase_graph(purchase)
        calls += more_calls
        edges += more_edges
    return tuple(calls), tuple(edges), (_decision(purchase),)


def _decision(purchase: Purchase) -> DecisionPoint:
    preconditions = [
        Precondition("current total and stock of the cart", "review"),
        Precondition("the cart's delivery address", "delivery"),
        Precondition("the buyer confirmed the offer", "confirm"),
        Precondition("the approved vendors", "get_purchasing_policy"),
    ]
    pid = purchase.choice_product
    if pid is not None:
        preconditions += [
            Precondition("shipping and arrival of the offer", f"quote:{pid}"),
            Precondition("units on hand of the offer", f"stock:{pid}"),
            Precondition("brand and eco label of the product", f"product:{pid}"),
        ]
    if purchase.approval:
        preconditions.append(Precondition("the purchase approval", "approval"))
    preconditions += [Precondition(f"{s} from the buyer", f"ask:{s}") for s in purchase.must_ask]
    return DecisionPoint(
        "checkout",
        "checkout",
        bool(purchase.best),
        {},
        purchase.choice,
        tuple(preconditions),
        1.0,
    )


def _purchase_graph(purchase: Purchase) -> tuple[list[GoldCall], list[GoldEdge]]:
    """Cart, review, confirmation and checkout, with what feeds each."""
    calls = [
        GoldCall(
            "cart",
            "add_to_cart",
            {"offer_id": purchase.best, "quantity": purchase.quantity},
            Effect.WRITE,
        ),
        GoldCall("delivery", "set_delivery", {"address_id": purchase.address_id}, Effect.WRITE),
        GoldCall("review", "review_cart", {}, Effect.READ),
        GoldCall("confirm", "confirm"),
        GoldCall("checkout", "checkout", {}, Effect.COMMIT),
    ]
    edges = [
        GoldEdge(
            f"offers:{pid}",
            "cart",
            EdgeKind.PIPE if pid == purchase.choice_product else EdgeKind.DECIDE,
        )
        for pid in purchase.products
    ]
    edges += [
        GoldEdge(f"{kind}:{pid}", "cart", EdgeKind.DECIDE)
        for pid in purchase.products
        for kind in _DIAMOND[1:]
    ]
    edges.append(GoldEdge("get_purchasing_policy", "cart", EdgeKind.DECIDE))
    edges += [GoldEdge(f"ask:{s}", "cart", EdgeKind.GATE) for s in purchase.must_ask]
    edges += [
        GoldEdge("cart", "delivery", EdgeKind.PIPE),
        GoldEdge("get_account", "delivery", EdgeKind.PIPE),
        GoldEdge("cart", "review", EdgeKind.PIPE),
        GoldEdge("delivery", "review", EdgeKind.ORDER),
        GoldEdge("review", "confirm", EdgeKind.DECIDE),
        GoldEdge("cart", "checkout", EdgeKind.PIPE),
        GoldEdge("review", "checkout", EdgeKind.ORDER),
        GoldEdge("confirm", "checkout", EdgeKind.ORDER),
    ]
    if purchase.approval:
        calls.insert(3, GoldCall("approval", "request_approval", {}, Effect.WRITE))
        edges += [
            GoldEdge("cart", "approval", EdgeKind.PIPE),
            GoldEdge("delivery", "approval", EdgeKind.ORDER),
            GoldEdge("get_purchasing_policy", "approval", EdgeKind.DECIDE),
            GoldEdge("approval", "checkout", EdgeKind.PIPE),
        ]
    return calls, edges
