"""The bank expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the user knows, reads the invoice and
the accounts in one round, then checks the payee, the rails and (only if some account holds
another currency) the exchange rates in one round. A failed payee check ends the episode with
nothing paid. Otherwise it picks the best route, locks the rate in a round of its own when the
route converts currency, proposes the route, and sends the transfer once the user agrees.
"""

from __future__ import annotations

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    assume,
    choose,
    decide_and_commit,
    finish,
    known_at_start,
    offered_only,
    propose,
    questions,
    rounds,
    worth,
)
from stategym.agents.style import Style
from stategym.generation import order_matters
from stategym.kernel.protocol import CallBatch, Observation, ToolCall, call
from stategym.kernel.task import Task, Value

from .beliefs import NO_LIMIT, Beliefs, Route
from .rules import FINE, USE

QUESTIONS = {
    "fee_cap": "What is the most you are willing to pay in fees?",
    "savings": "May I use money from your savings account?",
    "conversion": "Should I avoid converting currency?",
    "invoice": "Which invoice should I pay?",
    "payee": "Who is the payee?",
    "due_day": "When is the invoice due?",
    "iban": "What is the payee's account number?",
    "balances": "How much money is in your accounts?",
    "category": "Which budget category should this payment go under?",
    "priorities": "If you can't have everything you asked for, which preference should I "
    "prioritize?",
}
USER_FACTS = ("fee_cap", "savings", "conversion")
GUESSES: dict[str, Value] = {"fee_cap": NO_LIMIT, "savings": USE, "conversion": FINE}
GUESSED_CURRENCY = "EUR"
SPRAY_CURRENCIES = ("JPY", "CHF", "SEK", "NOK")


def bank_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the bank expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style, first))


def _script(task: Task, style: Style, first: Observation) -> Script:
    values, order = known_at_start(task, style)
    beliefs = Beliefs(values=values, order=order)
    opening = questions(style, beliefs.values, QUESTIONS, USER_FACTS)
    if opening is not None:
        beliefs.see((yield opening))
    yield from _look_up(task, beliefs, style)
    assume(style, beliefs.values, GUESSES)
    yield from _choose_and_commit(task, beliefs, style)


def _look_up(task: Task, beliefs: Beliefs, style: Style) -> Script:
    invoice_id = str(task.request.given["invoice"])
    first = [call("get_invoice", invoice_id=invoice_id), call("list_accounts")]
    if style.batching == "guess":  # the invoice's currency has not been seen yet
        first.append(call("get_fx_rates", currency=GUESSED_CURRENCY))
    # speculative calls go where they depend on nothing unseen, so they cost economy only
    spray = [call("list_transfers"), *(call("get_fx_rates", currency=c) for c in SPRAY_CURRENCIES)]
    spray = spray[: style.spray]
    for action in rounds(first + offered_only(spray[:1], task), style):
        beliefs.see((yield action))
    invoice = beliefs.invoice
    if invoice is None:
        return
    second = [call("list_rails", iban=invoice.iban)]
    if style.verify == "before":
        second.insert(0, _verify(beliefs))
    if beliefs.needs_rates() and not beliefs.rates:
        second.append(call("get_fx_rates", currency=invoice.currency))
    for action in rounds(second + spray[1:], style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _verify(beliefs: Beliefs) -> ToolCall:
    assert beliefs.invoice is not None
    return call("verify_payee", iban=beliefs.invoice.iban, name=beliefs.invoice.payee_name)


def _pick(beliefs: Beliefs, style: Style) -> Route | None:
    """The best route the agent knows of, or ``None`` if none is feasible."""
    order = beliefs.order or beliefs.preferences()
    return choose(
        beliefs.feasible(), style, lambda r: (-worth(beliefs.meets(r), order), r.fees, r.id)
    )


def _choose_and_commit(task: Task, beliefs: Beliefs, style: Style) -> Script:
    if beliefs.verified is False or beliefs.invoice is None:
        yield finish(
            "none"
            if not task.knobs.stateful
            else "The payee's name does not match the account on the invoice, so I paid nothing."
        )
        return
    decision = Decision(
        question=QUESTIONS["priorities"],
        order_matters=lambda: order_matters(
            [r.hits for r in beliefs.feasible()], beliefs.preferences()
        ),
        pick=lambda: _pick(beliefs, style),
        attempt=lambda choice, agreement: _attempt(beliefs, style, choice, agreement),
        nothing="No account can pay within your limits, so I paid nothing.",
        give_up="I could not complete the payment.",
        answer=_answer,
    )
    yield from decide_and_commit(beliefs, style, task.knobs.stateful, decision)


def _answer(route: Route) -> str:
    """A route as the answer form asks for it: the account's id, a space, the rail's code
    (``CA17 EXP``), so the compact rendering writes it with the account's handle."""
    return f"{route.account.id} {route.id.removeprefix(route.account.id)}"


def _attempt(
    beliefs: Beliefs, style: Style, choice: Route, agreement: Agreement
) -> Steps[str | None]:
    """Lock the rate (when the route converts), propose the route, and send the transfer."""
    assert beliefs.invoice is not None
    if style.commit == "shotgun":
        return (yield from _shotgun(beliefs, choice))
    converts = choice.account.currency != beliefs.invoice.currency
    quote_id = ""
    if converts and style.verify != "same_round":
        locked = beliefs.see((yield CallBatch((_lock(beliefs, choice),)))).get("lock_fx_rate")
        if locked is None:
            beliefs.excluded.add(choice.id)
            return None
        beliefs.locks += 1
        quote_id = locked["quote_id"]
        fresh = _pick(beliefs, style)
        if style.verify == "before" and (fresh is None or fresh.id != choice.id or beliefs.changed):
            return None  # the locked rate or a change of mind changed the best route
    if agreement.pending(style, choice.id):
        first = (yield from propose(_proposal(beliefs, choice), style, beliefs.see))[0]
        if not agreed(first, choice.id):
            beliefs.excluded.add(choice.id)
            return None
        if beliefs.changed:
            return None
        agreement.option = choice.id
    if style.commit == "never":
        return f"{choice.id} is the best route; I did not send anything."
    if (yield from _commit(beliefs, style, choice, quote_id)):
        return f"Paid by {choice.id}."
    beliefs.excluded.add(choice.id)
    return None


def _commit(beliefs: Beliefs, style: Style, choice: Route, quote_id: str) -> Steps[bool]:
    """Send the transfer; a same-round checker checks the payee (and locks the rate, guessing
    the quote's id) beside it. Returns whether the transfer went through."""
    assert beliefs.invoice is not None
    batch = []
    if style.verify == "same_round":
        batch.append(_verify(beliefs))
        if choice.account.currency != beliefs.invoice.currency:
            batch.append(_lock(beliefs, choice))
            quote_id = f"Q{beliefs.locks + 1}"  # the id the lock in this round will get
    batch.append(_send(beliefs, choice, quote_id))
    return "send_transfer" in beliefs.see((yield CallBatch(tuple(batch))))


def _lock(beliefs: Beliefs, route: Route) -> ToolCall:
    assert beliefs.invoice is not None
    return call(
        "lock_fx_rate",
        invoice_id=beliefs.invoice.id,
        account_id=route.account.id,
        rail=route.rail.rail,
    )


def _send(beliefs: Beliefs, route: Route, quote_id: str) -> ToolCall:
    assert beliefs.invoice is not None
    return call(
        "send_transfer",
        invoice_id=beliefs.invoice.id,
        account_id=route.account.id,
        rail=route.rail.rail,
        quote_id=quote_id,
    )


def _proposal(beliefs: Beliefs, choice: Route) -> str:
    invoice = beliefs.invoice
    assert invoice is not None
    return (
        f"Shall I pay {invoice.amount} {invoice.currency} to {invoice.payee_name} by route "
        f"{choice.id}: the {choice.rail.rail} rail from account {choice.account.id}, "
        f"landing on day {1 + choice.rail.days}, with {choice.fees} {invoice.currency} in "
        f"extra costs and {choice.debit} {choice.account.currency} debited?"
    )


def _shotgun(beliefs: Beliefs, choice: Route) -> Steps[str]:
    """Pay by the chosen route and the next cheapest feasible ones, so that one fits."""
    assert beliefs.invoice is not None
    others = sorted(
        (r for r in beliefs.feasible() if r.id != choice.id), key=lambda r: (r.fees, r.id)
    )
    picks = [choice, *others[:2]]
    currency = beliefs.invoice.currency
    locks = [_lock(beliefs, r) for r in picks if r.account.currency != currency]
    quotes: dict[str, str] = {}
    if locks:
        obs = yield CallBatch(tuple(locks))
        beliefs.see(obs)
        quotes = {r.content["option"]: r.content["quote_id"] for r in obs.results if r.ok}
    beliefs.see((yield CallBatch(tuple(_send(beliefs, r, quotes.get(r.id, "")) for r in picks))))
    return f"Paid by {', '.join(r.id for r in picks)}."
