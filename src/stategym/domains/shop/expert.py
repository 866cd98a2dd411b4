"""The shop expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the buyer knows, reads the account,
the purchasing policy and the catalog in one round, fetches every product's offers, shipping
quotes, stock and specification in the next, puts the best offer in the cart, sets the cart's
delivery address, reviews the cart in a round of its own to see the current total and stock,
proposes the offer, and checks out once the buyer agrees.
"""

from __future__ import annotations

from typing import Any

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    assume,
    choose,
    decide_and_commit,
    known_at_start,
    offered_only,
    propose,
    questions,
    rounds,
    worth,
)
from stategym.agents.style import Style
from stategym.generation import order_matters
from stategym.kernel.protocol import CallBatch, Observation, call
from stategym.kernel.task import Task, Value

from .beliefs import DIAMOND, NO_LIMIT, Beliefs, OfferView
from .request import ANY_BRAND, ANY_DAY

QUESTIONS = {
    "budget": "What is your budget for the whole order?",
    "deadline": "By which day do you need the delivery?",
    "brand": "Do you have a preferred brand?",
    "item": "What product do you need?",
    "quantity": "How many units do you need?",
    "address": "Where should the order be shipped?",
    "vendors": "Which vendors may you buy from?",
    "color": "What color would you like?",
    "priorities": "If you can't have everything you asked for, which preference should I "
    "prioritize?",
}
USER_FACTS = ("budget", "deadline", "brand")
GUESSES: dict[str, Value] = {"budget": NO_LIMIT, "deadline": ANY_DAY, "brand": ANY_BRAND}
SPRAY_QUERIES = ("printer paper", "whiteboard", "toner")


def shop_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the shop expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style, first))


def _script(task: Task, style: Style, first: Observation) -> Script:
    values, order = known_at_start(task, style)
    beliefs = Beliefs(values=values, order=order)
    opening = questions(style, beliefs.values, QUESTIONS, USER_FACTS)
    if opening is not None:
        beliefs.see((yield opening))
    yield from _look_up(task, beliefs, style)
    assume(style, beliefs.values, GUESSES)
    decision = Decision(
        question=QUESTIONS["priorities"],
        order_matters=lambda: order_matters(
            [beliefs.sat(o) for o in beliefs.offers.values() if beliefs.feasible(o)],
            beliefs.preferences(),
        ),
        pick=lambda: _pick(beliefs, style),
        attempt=lambda choice, agreement: _attempt(beliefs, style, choice, agreement),
        nothing="No approved offer fits, so I ordered nothing.",
        give_up="I could not complete the order.",
    )
    yield from decide_and_commit(beliefs, style, task.knobs.stateful, decision)


def _look_up(task: Task, beliefs: Beliefs, style: Style) -> Script:
    item = str(task.request.given["item"])
    lookups = [
        call("get_account"),
        call("get_purchasing_policy"),
        call("search_catalog", query=item),
    ]
    if style.batching == "guess":  # product ids the catalog has not shown yet
        lookups += [call("get_offers", product_id=f"P{n}") for n in (101, 102, 103)]
    spray = [call("list_orders"), *(call("search_catalog", query=q) for q in SPRAY_QUERIES)]
    for action in rounds(lookups + offered_only(spray[: style.spray], task), style):
        beliefs.see((yield action))
    fetch = [
        call(tool, product_id=pid, **_address(tool, beliefs))
        for pid in beliefs.catalog
        for tool in (*DIAMOND, "get_product")
        if (tool, pid) not in beliefs.fetched
    ]
    for action in rounds(fetch, style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _address(tool: str, beliefs: Beliefs) -> dict[str, str]:
    """The extra argument a per-product read takes: the quote needs the address."""
    return {"address_id": beliefs.address_id or ""} if tool == "get_shipping_quote" else {}


def _pick(beliefs: Beliefs, style: Style) -> OfferView | None:
    """The best offer the agent knows of, or ``None`` if none is feasible."""
    feasible = [o for o in beliefs.offers.values() if beliefs.feasible(o)]
    order = beliefs.order or beliefs.default_order()
    return choose(
        feasible, style, lambda o: (-worth(beliefs.meets(o), order), beliefs.total(o), o.id)
    )


def _attempt(
    beliefs: Beliefs, style: Style, choice: OfferView, agreement: Agreement
) -> Steps[str | None]:
    """Put the offer in the cart, review it, propose it, and check out."""
    if style.commit == "shotgun":
        return (yield from _shotgun(beliefs, style, choice))
    add = call("add_to_cart", offer_id=choice.id, quantity=beliefs.quantity())
    added = beliefs.see((yield CallBatch((add,)))).get("add_to_cart")
    if added is None:
        beliefs.excluded.add(choice.id)
        return None
    cart, line = added["cart_id"], added["line_id"]
    if not (yield from _deliver(beliefs, cart)):
        beliefs.see((yield CallBatch((call("remove_from_cart", line_id=line),))))
        return None
    approval = yield from _prepare(beliefs, style, choice, cart)
    if approval is not None and agreement.pending(style, choice.id):
        text = _proposal(beliefs, choice)
        first = (yield from propose(text, style, beliefs.see))[0]
        accepted = agreed(first, choice.id)
        if not accepted:
            beliefs.excluded.add(choice.id)
        approval = approval if accepted and not beliefs.changed else None
        agreement.option = choice.id if approval is not None else agreement.option
    if approval is None:  # the choice changed: take the line out and decide again
        beliefs.see((yield CallBatch((call("remove_from_cart", line_id=line),))))
        return None
    if style.commit == "never":
        return f"{choice.id} is the best offer; I did not order it."
    if (yield from _checkout(beliefs, style, cart, approval)):
        return f"Ordered {choice.id}."
    beliefs.excluded.add(choice.id)
    beliefs.see((yield CallBatch((call("remove_from_cart", line_id=line),))))
    return None


def _deliver(beliefs: Beliefs, cart: str) -> Steps[bool]:
    """Set the cart's delivery address, after its last change; returns whether it took."""
    address = call("set_delivery", cart_id=cart, address_id=beliefs.address_id or "")
    return "set_delivery" in beliefs.see((yield CallBatch((address,))))


def _prepare(beliefs: Beliefs, style: Style, choice: OfferView, cart: str) -> Steps[str | None]:
    """Review the cart (when verifying first) and request the approval its total needs, side
    by side. Returns the approval id (``""``: none needed), or ``None`` when the review
    changed the choice."""
    batch = [call("review_cart", cart_id=cart)] if style.verify == "before" else []
    if beliefs.needs_approval(beliefs.total(choice)):
        batch.append(call("request_approval", cart_id=cart))
    found: dict[str, Any] = {}
    for action in rounds(batch, style):
        found.update(beliefs.see((yield action)))
    if style.verify == "before" and (_pick(beliefs, style) is not choice or beliefs.changed):
        return None  # the current price, stock or a change of mind changed the choice
    approval = found.get("request_approval")
    return str(approval["approval_id"]) if approval else ""


def _checkout(beliefs: Beliefs, style: Style, cart: str, approval: str) -> Steps[bool]:
    """Check out (beside the review for a same-round check); returns whether it went through."""
    order = [call("checkout", cart_id=cart, approval_id=approval)]
    if style.verify == "same_round":
        order.insert(0, call("review_cart", cart_id=cart))
    return "checkout" in beliefs.see((yield CallBatch(tuple(order))))


def _proposal(beliefs: Beliefs, choice: OfferView) -> str:
    product = beliefs.products[choice.product_id]
    return (
        f"I found offer {choice.id}: {beliefs.quantity()} x {product.name} from "
        f"{choice.vendor}, {beliefs.total(choice)} in all, arriving on day "
        f"{1 + choice.delivery_days}. Shall I place the order?"
    )


def _shotgun(beliefs: Beliefs, style: Style, choice: OfferView) -> Steps[str]:
    """Buy the choice together with the next cheapest feasible offers, so that one fits."""
    others = sorted(
        (o for o in beliefs.offers.values() if o.id != choice.id and beliefs.feasible(o)),
        key=lambda o: (beliefs.total(o), o.id),
    )
    picks = [choice, *others[:2]]
    obs = yield CallBatch(
        tuple(call("add_to_cart", offer_id=o.id, quantity=beliefs.quantity()) for o in picks)
    )
    carts = [r.content["cart_id"] for r in obs.results if r.ok]
    beliefs.see(obs)
    if carts and (yield from _deliver(beliefs, carts[0])):
        approval = ""
        if beliefs.needs_approval(sum(beliefs.total(o) for o in picks)):
            asked = beliefs.see((yield CallBatch((call("request_approval", cart_id=carts[0]),))))
            approval = asked["request_approval"]["approval_id"] if asked else ""
        yield from _checkout(beliefs, style, carts[0], approval)
    return f"Ordered {', '.join(o.id for o in picks)}."
