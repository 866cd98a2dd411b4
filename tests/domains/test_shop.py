"""The shop domain: task features, the gold graph's motifs, cart and order semantics (the
checks every domain passes are in ``test_every_domain.py``)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from stategym import Env, Knobs, call, calls
from stategym.domains.shop.tools import CART_TICKS, RESTOCKING_PCT
from stategym.kernel.task import EdgeKind, SlotKind
from stategym.registry import get_domain

DOMAIN = get_domain("shop")


def test_every_task_feature_occurs() -> None:
    seen: Counter[str] = Counter()
    for seed in range(400):
        task = DOMAIN.generate(seed, Knobs())
        truth = task.truth
        prefs = {c.id for c in task.constraints if c.kind == "preference"}
        seen["must_ask"] += bool(task.must_ask)
        seen["priorities_must_ask"] += "priorities" in task.must_ask
        seen["sacrifice"] += bool(truth.best) and not prefs <= truth.satisfaction[truth.best[0]]
        seen["no_commit"] += not truth.best and not truth.decisions[0].should_commit
        nodes = {c.id for c in truth.calls}
        seen["approval_branch"] += "approval" in nodes
        seen["no_approval_branch"] += "cart" in nodes and "approval" not in nodes
        for event in task.events:
            seen[f"event_{event.field or event.kind}"] += 1
        kinds = {s.kind for s in task.slots}
        seen["derivable_and_irrelevant"] += {SlotKind.DERIVABLE, SlotKind.IRRELEVANT} <= kinds
    for feature in (
        "must_ask",
        "priorities_must_ask",
        "sacrifice",
        "no_commit",
        "approval_branch",
        "no_approval_branch",
        "event_unit_price",
        "event_stock",
        "event_user_update",
        "derivable_and_irrelevant",
    ):
        assert seen[feature] > 10, (feature, seen)


def test_gold_graph_has_the_shop_motifs() -> None:
    for seed in range(200):
        task = DOMAIN.generate(seed, Knobs())
        truth = task.truth
        ids = {c.id for c in truth.calls}
        edges = {(e.src, e.dst): e.kind for e in truth.edges}
        fan_out = [n for n in ids if n.startswith("offers:")]
        assert len(fan_out) == len(task.base.products) >= 3
        assert all(edges[("search", n)] is EdgeKind.PIPE for n in fan_out)
        if truth.best:
            assert edges[("review", "checkout")] is EdgeKind.ORDER  # verify before commit
            assert edges[("cart", "checkout")] is EdgeKind.PIPE  # the join at checkout
            assert edges[("cart", "delivery")] is EdgeKind.PIPE  # a chain of two writes
            assert edges[("get_account", "delivery")] is EdgeKind.PIPE
            assert edges[("delivery", "review")] is EdgeKind.ORDER  # after the last change
            assert ("get_account", "checkout") not in edges  # the cart carries the address
            assert edges[("confirm", "checkout")] is EdgeKind.ORDER
            if "approval" in ids:  # the conditional approval sits beside the review
                assert edges[("cart", "approval")] is EdgeKind.PIPE
                assert edges[("approval", "checkout")] is EdgeKind.PIPE
                assert edges[("delivery", "approval")] is EdgeKind.ORDER
                assert ("review", "approval") not in edges
        else:
            assert not ids & {"cart", "review", "confirm", "checkout"}


def test_every_product_is_a_diamond_of_four_reads_joining_at_the_cart() -> None:
    for seed in range(100):
        for stateful in (True, False):
            truth = DOMAIN.generate(seed, Knobs(stateful=stateful)).truth
            edges = {(e.src, e.dst): e.kind for e in truth.edges}
            tools = {c.id: c.tool for c in truth.calls}
            products = [n.removeprefix("offers:") for n in tools if n.startswith("offers:")]
            for pid in products:
                reads = [f"{kind}:{pid}" for kind in ("offers", "quote", "stock", "product")]
                assert [tools[r] for r in reads] == [
                    "get_offers",
                    "get_shipping_quote",
                    "check_stock",
                    "get_product",
                ]
                assert all(edges[("search", r)] is EdgeKind.PIPE for r in reads)
                assert edges[("get_account", f"quote:{pid}")] is EdgeKind.PIPE
                if "cart" in tools:
                    assert all(("cart" in (dst for src, dst in edges if src == r)) for r in reads)
                    assert edges[(f"quote:{pid}", "cart")] is EdgeKind.DECIDE
                    assert edges[(f"stock:{pid}", "cart")] is EdgeKind.DECIDE
                    assert edges[(f"product:{pid}", "cart")] is EdgeKind.DECIDE


def test_shop_topology_differs_from_travel_meetings_and_bank() -> None:
    from stategym.topology.distance import edit_distance
    from stategym.topology.graph import domain_topology

    shop = domain_topology(DOMAIN)
    for other in ("travel", "meetings", "bank"):
        distance = edit_distance(shop, domain_topology(get_domain(other)))
        assert distance.normalised >= 0.2, (other, distance)  # the protocol's "different"


def _approved(env: Env, quantity: int) -> list[str]:
    """Offers from approved vendors with stock for ``quantity``, cheapest first."""
    vendors = env.task.base.policy.approved_vendors
    offers = [o for o in env.world.offers.values() if o.vendor in vendors and o.stock >= quantity]
    return [o.id for o in sorted(offers, key=lambda o: (o.unit_price, o.id))]


def _cheapest(env: Env) -> tuple[str, int]:
    """The cheapest approved offer with stock for the requested quantity, and that quantity."""
    quantity = env.task.base.quantity
    return _approved(env, quantity)[0], quantity


def _deliver(env: Env, cart_id: str) -> None:
    """Set the cart's delivery to the address on file."""
    address = env.task.base.account.address_id
    result = env.step(calls(call("set_delivery", cart_id=cart_id, address_id=address)))
    assert result.observation.results[0].ok, result.observation.results[0].error


def _order(env: Env, offer: str, quantity: int) -> dict:
    """Add, set the delivery, get an approval (the vendor must be approved), check out: the
    checkout result."""
    cart = env.step(calls(call("add_to_cart", offer_id=offer, quantity=quantity)))
    cart_id = cart.observation.results[0].content["cart_id"]
    _deliver(env, cart_id)
    approval = env.step(calls(call("request_approval", cart_id=cart_id))).observation.results[0]
    assert approval.ok, approval.error
    approval_id = approval.content["approval_id"]
    placed = env.step(calls(call("checkout", cart_id=cart_id, approval_id=approval_id)))
    assert placed.observation.results[0].ok, placed.observation.results[0].error
    return placed.observation.results[0].content


@pytest.mark.parametrize(("irreversible", "fee_pct"), [(True, RESTOCKING_PCT), (False, 0)])
def test_returns_cost_a_restocking_fee_only_with_irreversibility_on(
    irreversible: bool, fee_pct: int
) -> None:
    env = Env("shop", knobs=Knobs(irreversible=irreversible, dynamics=False))
    env.reset(seed=3)
    order = _order(env, *_cheapest(env))
    assert [c.option for c in env.commitments()] == [order["option"]]
    returned = env.step(calls(call("return_order", order_id=order["order_id"])))
    content = returned.observation.results[0].content
    assert content["fee"] == order["charged"] * fee_pct // 100
    assert content["refund"] == order["charged"] - content["fee"]
    assert env.commitments() == ()
    assert env.outcome().lost == content["fee"]
    assert sum(env.world.accounts.values()) == env.task.base.balance


def test_an_order_of_another_quantity_or_of_several_offers_is_no_option() -> None:
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(seed=5)
    quantity = env.task.base.quantity
    roomy = _approved(env, quantity + 1)
    order = _order(env, roomy[0], quantity + 1)
    assert order["option"] == f"{roomy[0]}x{quantity + 1}"
    assert order["option"] not in env.task.truth.satisfaction
    assert not env.outcome().goal_reached
    env.reset(seed=5)
    env.step(calls(call("add_to_cart", offer_id=roomy[1], quantity=quantity)))
    order = _order(env, roomy[0], quantity)  # the same cart: one order of two offers
    assert order["option"] == f"{roomy[1]}x{quantity}+{roomy[0]}x{quantity}"
    (committed,) = env.commitments()
    assert committed.option not in env.task.truth.satisfaction
    assert not env.outcome().goal_reached


def test_the_cart_shows_and_charges_current_prices() -> None:
    for seed in range(200):
        task = DOMAIN.generate(seed, Knobs())
        jump = next((e for e in task.events if e.field == "unit_price"), None)
        if jump is not None and task.base.offers[jump.key].stock >= task.base.quantity:
            break
    env = Env("shop")
    env.reset(seed=seed)
    added = env.step(calls(call("add_to_cart", offer_id=jump.key, quantity=task.base.quantity)))
    cart = added.observation.results[0].content["cart_id"]
    while env.world.clock < jump.at:
        env.step(calls(call("list_orders")))
    line = env.step(calls(call("review_cart", cart_id=cart))).observation.results[0].content
    assert line["lines"][0]["unit_price"] == jump.value
    _deliver(env, cart)
    approval = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert approval.content["approved_total"] == line["total"]
    approval_id = approval.content["approval_id"]
    placed = env.step(calls(call("checkout", cart_id=cart, approval_id=approval_id)))
    assert placed.observation.results[0].content["charged"] == line["total"]


def test_cart_lines_expire_only_with_dynamics_on() -> None:
    for dynamics in (True, False):
        env = Env("shop", knobs=Knobs(dynamics=dynamics))
        env.reset(seed=8)
        offer, quantity = _cheapest(env)
        cart = env.step(calls(call("add_to_cart", offer_id=offer, quantity=quantity)))
        cart_id = cart.observation.results[0].content["cart_id"]
        _deliver(env, cart_id)
        approval = env.step(calls(call("request_approval", cart_id=cart_id)))
        approval_id = approval.observation.results[0].content["approval_id"]
        for _ in range(CART_TICKS):
            env.step(calls(call("get_account")))
        result = env.step(
            calls(call("checkout", cart_id=cart_id, approval_id=approval_id))
        ).observation.results[0]
        assert result.ok is not dynamics
        assert dynamics is ("expired" in (result.error or ""))
        assert bool(env.world.charges) is not dynamics


def test_option_ids_are_offer_ids() -> None:
    for seed in range(300):
        options = list(DOMAIN.generate(seed, Knobs()).truth.satisfaction)
        assert all(re.fullmatch(r"[A-Z]{2}\d{3}", o) for o in options)


def test_a_refused_tool_call_changes_nothing() -> None:
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(seed=2)
    offer, _ = _cheapest(env)
    stock = env.world.offers[offer].stock
    for bad in (
        call("add_to_cart", offer_id=offer, quantity=stock + 1),
        call("add_to_cart", offer_id="ZZ999", quantity=1),
        call("checkout", cart_id="K9"),
        call("set_delivery", cart_id="K9", address_id="AD000"),
        call("return_order", order_id="O1"),
        call("get_offers", product_id="P0"),
        call("get_product", product_id="P0"),
        call("check_stock", product_id="P0"),
        call("get_shipping_quote", product_id="P0", address_id=env.task.base.account.address_id),
        call(
            "get_shipping_quote",
            product_id=next(iter(env.task.base.products)),
            address_id="AD000",
        ),
    ):
        before = env.world.snapshot()
        result = env.step(calls(bad)).observation.results[0]
        assert result.error_kind == "tool"
        after = env.world.snapshot()
        assert (after.tables, after.charges, after.next_id) == (
            before.tables,
            before.charges,
            before.next_id,
        )


def _big_cart(env: Env) -> tuple[str, int]:
    """Fill the cart with an approved offer whose order total needs an approval."""
    base = env.task.base
    for offer in env.world.offers.values():
        total = offer.unit_price * base.quantity + offer.shipping
        approved = offer.vendor in base.policy.approved_vendors
        if approved and offer.stock >= base.quantity and total > base.policy.approval_over:
            added = env.step(calls(call("add_to_cart", offer_id=offer.id, quantity=base.quantity)))
            return added.observation.results[0].content["cart_id"], total
    raise AssertionError("no offer needs an approval")


def test_checkout_above_the_threshold_needs_an_approval_of_the_current_cart() -> None:
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(
        seed=next(
            s
            for s in range(100)
            if "approval" in {c.id for c in DOMAIN.generate(s, Knobs(dynamics=False)).truth.calls}
        )
    )
    cart, total = _big_cart(env)
    _deliver(env, cart)
    refused = env.step(calls(call("checkout", cart_id=cart)))
    assert "need an approval" in (refused.observation.results[0].error or "")
    granted = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert granted.content["approved_total"] == total
    approval = granted.content["approval_id"]
    extra = next(o for o in env.world.offers.values() if o.stock > 0)
    env.step(calls(call("add_to_cart", offer_id=extra.id, quantity=1)))
    _deliver(env, cart)
    stale = env.step(calls(call("checkout", cart_id=cart, approval_id=approval)))
    assert "changed since approval" in (stale.observation.results[0].error or "")
    assert env.world.charges == []


def test_approval_is_denied_for_an_unapproved_vendor() -> None:
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(seed=4)
    quantity = env.task.base.quantity
    rogue = next(
        o
        for o in env.world.offers.values()
        if o.vendor not in env.task.base.policy.approved_vendors and o.stock >= quantity
    )
    added = env.step(calls(call("add_to_cart", offer_id=rogue.id, quantity=quantity)))
    cart = added.observation.results[0].content["cart_id"]
    _deliver(env, cart)
    denied = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert denied.error_kind == "tool" and "not an approved vendor" in (denied.error or "")
    assert env.world.approvals.changed == {}


def test_the_delivery_must_follow_the_last_cart_change() -> None:
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(seed=6)
    offer, quantity = _cheapest(env)
    added = env.step(calls(call("add_to_cart", offer_id=offer, quantity=quantity)))
    cart = added.observation.results[0].content["cart_id"]
    bare = env.step(calls(call("checkout", cart_id=cart))).observation.results[0]
    assert "no delivery address" in (bare.error or "")
    unset = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert "set the delivery" in (unset.error or "")
    _deliver(env, cart)
    second = _approved(env, 1)[-1]
    line = env.step(calls(call("add_to_cart", offer_id=second, quantity=1)))
    after_add = env.step(calls(call("checkout", cart_id=cart))).observation.results[0]
    assert "no delivery address" in (after_add.error or "")  # the change cleared it
    _deliver(env, cart)
    line_id = line.observation.results[0].content["line_id"]
    env.step(calls(call("remove_from_cart", line_id=line_id)))
    assert env.world.carts[cart].address_id is None
    assert env.world.charges == []


def test_offers_quotes_stock_and_specification_come_from_separate_reads() -> None:
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(seed=1)
    pid = next(iter(env.task.base.products))
    address = env.task.base.account.address_id
    obs = env.step(
        calls(
            call("get_offers", product_id=pid),
            call("get_shipping_quote", product_id=pid, address_id=address),
            call("check_stock", product_id=pid),
            call("get_product", product_id=pid),
        )
    ).observation
    offers, quotes, stock, spec = (r.content for r in obs.results)
    assert {tuple(sorted(row)) for row in offers} == {
        ("offer_id", "product_id", "unit_price", "vendor")
    }
    assert [r["offer_id"] for r in offers] == [r["offer_id"] for r in quotes]
    assert [r["offer_id"] for r in offers] == [r["offer_id"] for r in stock]
    for row in quotes:
        assert row["shipping"] == env.world.offers[row["offer_id"]].shipping
    for row in stock:
        assert row["stock"] == env.world.offers[row["offer_id"]].stock > 0
    product = env.task.base.products[pid]
    assert (spec["brand"], spec["eco_certified"]) == (product.brand, product.eco)
