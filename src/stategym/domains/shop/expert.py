"""The shop expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the buyer knows, reads the account,
the purchasing policy and the catalog in one round, fetches every product's offers in the
next, puts the best offer in the cart, reviews the cart in a round of its own to see the
current total and stock, proposes the offer, and checks out once the buyer agrees.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.style import Style
from stategym.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.task import Task, final_values

from .beliefs import NO_LIMIT, Beliefs, OfferView
from .generator import ANY_BRAND, ANY_DAY, order_matters

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
GUESSES: dict[str, int | str] = {"budget": NO_LIMIT, "deadline": ANY_DAY, "brand": ANY_BRAND}
SPRAY_QUERIES = ("printer paper", "whiteboard", "toner")


def shop_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the shop expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style, first))


def _script(task: Task, style: Style, first: Observation) -> Script:
    beliefs = Beliefs(values=dict(task.request.given))
    if "priorities" in task.request.given:
        beliefs.order = tuple(str(task.request.given["priorities"]).split(">"))
    if style.privileged:
        beliefs.values.update(final_values(task))
        prefs = {c.id for c in task.constraints if c.kind == "preference"}
        beliefs.order = tuple(c for c in task.priority_order() if c in prefs)
    asks = _questions(beliefs, style)
    if asks:
        beliefs.see((yield Say(" ".join(QUESTIONS[a] for a in asks))))
    yield from _look_up(task, beliefs, style)
    if style.ask == "nothing":
        for name, guess in GUESSES.items():
            beliefs.values.setdefault(name, guess)
    yield from _choose_and_commit(task, beliefs, style)


def _questions(beliefs: Beliefs, style: Style) -> list[str]:
    if style.privileged or style.ask == "nothing":
        return []
    if style.ask == "everything":
        return list(QUESTIONS)
    return [name for name in USER_FACTS if name not in beliefs.values]


def _rounds(batch: list[ToolCall], style: Style) -> list[CallBatch]:
    """One parallel round, or one round per call for a serial agent."""
    if style.batching == "serial":
        return [CallBatch((c,)) for c in batch]
    return [CallBatch(tuple(batch))]


def _look_up(task: Task, beliefs: Beliefs, style: Style) -> Script:
    item = str(task.request.given["item"])
    lookups = [call("get_purchasing_policy"), call("search_catalog", query=item)]
    if task.knobs.stateful:
        lookups.insert(0, call("get_account"))
    if style.batching == "guess":  # product ids the catalog has not shown yet
        lookups += [call("get_offers", product_id=f"P{n}") for n in (101, 102, 103)]
    spray = [call("list_orders"), *(call("search_catalog", query=q) for q in SPRAY_QUERIES)]
    for action in _rounds(lookups + spray[: style.spray], style):
        beliefs.see((yield action))
    fetch = [
        call("get_offers", product_id=pid) for pid in beliefs.products if pid not in beliefs.fetched
    ]
    for action in _rounds(fetch, style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _pick(beliefs: Beliefs, style: Style) -> OfferView | None:
    """The best offer the agent knows of, or ``None`` if none is feasible."""
    feasible = [o for o in beliefs.offers.values() if beliefs.feasible(o)]
    if not feasible:
        return None
    if style.first_fit:
        return feasible[0]
    order = beliefs.order or beliefs.default_order()
    weights = {p: 2 ** (len(order) - i) for i, p in enumerate(order)}
    return min(
        feasible,
        key=lambda o: (-sum(weights.get(p, 0) for p in beliefs.meets(o)), beliefs.total(o), o.id),
    )


def _must_ask_order(beliefs: Beliefs, style: Style) -> bool:
    if beliefs.order is not None or style.ask == "nothing" or style.first_fit:
        return False
    sets = [beliefs.sat(o) for o in beliefs.offers.values() if beliefs.feasible(o)]
    return order_matters(sets, beliefs.preferences())


def _choose_and_commit(task: Task, beliefs: Beliefs, style: Style) -> Script:
    confirmed: str | None = None
    for _ in range(12):  # re-decisions after price moves, sell-outs and changes of mind
        if _must_ask_order(beliefs, style):
            beliefs.see((yield Say(QUESTIONS["priorities"])))
            continue
        choice = _pick(beliefs, style)
        if choice is None:
            stateless = not task.knobs.stateful
            yield _finish("none" if stateless else "No approved offer fits, so I ordered nothing.")
            return
        if not task.knobs.stateful:
            yield _finish(choice.id)
            return
        beliefs.changed = False
        if style.commit == "shotgun":
            yield from _shotgun(beliefs, style, choice)
            return
        add = call("add_to_cart", offer_id=choice.id, quantity=beliefs.quantity())
        added = beliefs.see((yield CallBatch((add,)))).get("add_to_cart")
        if added is None:
            beliefs.excluded.add(choice.id)
            continue
        cart, line = added["cart_id"], added["line_id"]
        approval = yield from _prepare(beliefs, style, choice, cart)
        if approval is not None and style.confirm != "skip" and confirmed != choice.id:
            accepted = yield from _propose(beliefs, style, choice)
            if not accepted:
                beliefs.excluded.add(choice.id)
            approval = approval if accepted and not beliefs.changed else None
            confirmed = choice.id if approval is not None else confirmed
        if approval is None:  # the choice changed: take the line out and decide again
            beliefs.see((yield CallBatch((call("remove_from_cart", line_id=line),))))
            continue
        if style.commit == "never":
            yield _finish(f"{choice.id} is the best offer; I did not order it.")
            return
        if (yield from _checkout(beliefs, style, cart, approval)):
            yield _finish(f"Ordered {choice.id}.")
            return
        beliefs.excluded.add(choice.id)
        beliefs.see((yield CallBatch((call("remove_from_cart", line_id=line),))))
    yield _finish("I could not complete the order.")


def _prepare(
    beliefs: Beliefs, style: Style, choice: OfferView, cart: str
) -> Generator[Action, Observation, str | None]:
    """Review the cart (when verifying first) and request the approval its total needs, side
    by side. Returns the approval id (``""``: none needed), or ``None`` when the review
    changed the choice."""
    batch = [call("review_cart", cart_id=cart)] if style.verify == "before" else []
    if beliefs.needs_approval(beliefs.total(choice)):
        batch.append(call("request_approval", cart_id=cart))
    found: dict[str, Any] = {}
    for action in _rounds(batch, style) if batch else []:
        found.update(beliefs.see((yield action)))
    if style.verify == "before" and (_pick(beliefs, style) is not choice or beliefs.changed):
        return None  # the current price, stock or a change of mind changed the choice
    approval = found.get("request_approval")
    return str(approval["approval_id"]) if approval else ""


def _checkout(
    beliefs: Beliefs, style: Style, cart: str, approval: str
) -> Generator[Action, Observation, bool]:
    """Check out (beside the review for a same-round check); returns whether it went through."""
    order = [
        call("checkout", cart_id=cart, address_id=beliefs.address_id or "", approval_id=approval)
    ]
    if style.verify == "same_round":
        order.insert(0, call("review_cart", cart_id=cart))
    return "checkout" in beliefs.see((yield CallBatch(tuple(order))))


def _propose(
    beliefs: Beliefs, style: Style, choice: OfferView
) -> Generator[Action, Observation, bool]:
    """Propose the offer (once, or repeatedly for confirm-spam); returns the buyer's verdict."""
    product = beliefs.products[choice.product_id]
    text = (
        f"I found offer {choice.id}: {beliefs.quantity()} x {product.name} from "
        f"{choice.vendor}, {beliefs.total(choice)} in all, arriving on day "
        f"{1 + choice.delivery_days}. Shall I place the order?"
    )
    obs = first = None
    for _ in range(3 if style.confirm == "spam" else 1):
        obs = yield Say(text)
        beliefs.see(obs)
        first = obs if first is None else first
    return first is not None and f"Yes, {choice.id}" in (first.user or "")


def _shotgun(beliefs: Beliefs, style: Style, choice: OfferView) -> Script:
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
    if carts:
        approval = ""
        if beliefs.needs_approval(sum(beliefs.total(o) for o in picks)):
            asked = beliefs.see((yield CallBatch((call("request_approval", cart_id=carts[0]),))))
            approval = asked["request_approval"]["approval_id"] if asked else ""
        yield from _checkout(beliefs, style, carts[0], approval)
    yield _finish(f"Ordered {', '.join(o.id for o in picks)}.")


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))
