"""The bank expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the user knows, reads the invoice and
the accounts in one round, then checks the payee, the rails and (only if some account holds
another currency) the exchange rates in one round. A failed payee check ends the episode with
nothing paid. Otherwise it picks the best route, locks the rate in a round of its own when the
route converts currency, proposes the route, and sends the transfer once the user agrees.
"""

from __future__ import annotations

from collections.abc import Generator

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.style import Style
from stategym.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.task import Task, final_values

from .beliefs import NO_LIMIT, Beliefs, Route
from .rules import FINE, USE, order_matters

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
GUESSES: dict[str, int | str] = {"fee_cap": NO_LIMIT, "savings": USE, "conversion": FINE}
GUESSED_CURRENCY = "EUR"
SPRAY_CURRENCIES = ("JPY", "CHF", "SEK", "NOK")


def bank_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the bank expert for ``task`` with the habits in ``style``."""
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
    invoice_id = str(task.request.given["invoice"])
    first = [call("get_invoice", invoice_id=invoice_id), call("list_accounts")]
    if style.batching == "guess":  # the invoice's currency has not been seen yet
        first.append(call("get_fx_rates", currency=GUESSED_CURRENCY))
    # speculative calls go where they depend on nothing unseen, so they cost economy only
    spray = [call("list_transfers"), *(call("get_fx_rates", currency=c) for c in SPRAY_CURRENCIES)]
    spray = spray[: style.spray]
    for action in _rounds(first + spray[:1], style):
        beliefs.see((yield action))
    invoice = beliefs.invoice
    if invoice is None:
        return
    second = [call("list_rails", iban=invoice.iban)]
    if style.verify == "before":
        second.insert(0, _verify(beliefs))
    if beliefs.needs_rates() and not beliefs.rates:
        second.append(call("get_fx_rates", currency=invoice.currency))
    for action in _rounds(second + spray[1:], style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _verify(beliefs: Beliefs) -> ToolCall:
    assert beliefs.invoice is not None
    return call("verify_payee", iban=beliefs.invoice.iban, name=beliefs.invoice.payee_name)


def _pick(beliefs: Beliefs, style: Style) -> Route | None:
    """The best route the agent knows of, or ``None`` if none is feasible."""
    feasible = beliefs.feasible()
    if not feasible:
        return None
    if style.first_fit:
        return feasible[0]
    order = beliefs.order or beliefs.preferences()
    weights = {p: 2 ** (len(order) - i) for i, p in enumerate(order)}
    return min(
        feasible, key=lambda r: (-sum(weights.get(p, 0) for p in beliefs.meets(r)), r.fees, r.id)
    )


def _must_ask_order(beliefs: Beliefs, style: Style) -> bool:
    if beliefs.order is not None or style.ask == "nothing" or style.first_fit:
        return False
    return order_matters([r.hits for r in beliefs.feasible()], beliefs.preferences())


def _choose_and_commit(task: Task, beliefs: Beliefs, style: Style) -> Script:
    stateful = task.knobs.stateful
    if beliefs.verified is False or beliefs.invoice is None:
        yield _finish(
            "none"
            if not stateful
            else "The payee's name does not match the account on the invoice, so I paid nothing."
        )
        return
    confirmed: str | None = None
    quotes = 0
    for _ in range(12):  # re-decisions after rate moves, refusals and changes of mind
        if _must_ask_order(beliefs, style):
            beliefs.see((yield Say(QUESTIONS["priorities"])))
            continue
        choice = _pick(beliefs, style)
        if choice is None:
            yield _finish(
                "none"
                if not stateful
                else "No account can pay within your limits, so I paid nothing."
            )
            return
        if not stateful:
            yield _finish(choice.id)
            return
        beliefs.changed = False
        if style.commit == "shotgun":
            yield from _shotgun(beliefs, choice)
            return
        converts = choice.account.currency != beliefs.invoice.currency
        quote_id = ""
        if converts and style.verify != "same_round":
            locked = beliefs.see((yield CallBatch((_lock(beliefs, choice),)))).get("lock_fx_rate")
            if locked is None:
                beliefs.excluded.add(choice.id)
                continue
            quotes += 1
            quote_id = locked["quote_id"]
            fresh = _pick(beliefs, style)
            if style.verify == "before" and (
                fresh is None or fresh.id != choice.id or beliefs.changed
            ):
                continue  # the locked rate or a change of mind changed the best route
        if style.confirm != "skip" and confirmed != choice.id:
            accepted = yield from _propose(beliefs, style, choice)
            if not accepted:
                beliefs.excluded.add(choice.id)
            if not accepted or beliefs.changed:
                continue
            confirmed = choice.id
        if style.commit == "never":
            yield _finish(f"{choice.id} is the best route; I did not send anything.")
            return
        if (yield from _commit(beliefs, style, choice, quote_id, quotes)):
            yield _finish(f"Paid by {choice.id}.")
            return
        beliefs.excluded.add(choice.id)
    yield _finish("I could not complete the payment.")


def _commit(
    beliefs: Beliefs, style: Style, choice: Route, quote_id: str, quotes: int
) -> Generator[Action, Observation, bool]:
    """Send the transfer; a same-round checker checks the payee (and locks the rate, guessing
    the quote's id) beside it. Returns whether the transfer went through."""
    assert beliefs.invoice is not None
    batch = []
    if style.verify == "same_round":
        batch.append(_verify(beliefs))
        if choice.account.currency != beliefs.invoice.currency:
            batch.append(_lock(beliefs, choice))
            quote_id = f"Q{quotes + 1}"  # the id the lock in this round will get
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


def _propose(beliefs: Beliefs, style: Style, choice: Route) -> Generator[Action, Observation, bool]:
    """Propose the route (once, or repeatedly for confirm-spam); returns the user's verdict."""
    invoice = beliefs.invoice
    assert invoice is not None
    text = (
        f"Shall I pay {invoice.amount} {invoice.currency} to {invoice.payee_name} by route "
        f"{choice.id}: the {choice.rail.rail} rail from account {choice.account.id}, "
        f"landing on day {1 + choice.rail.days}, with {choice.fees} {invoice.currency} in "
        f"extra costs and {choice.debit} {choice.account.currency} debited?"
    )
    first: Observation | None = None
    for _ in range(3 if style.confirm == "spam" else 1):
        obs = yield Say(text)
        beliefs.see(obs)
        first = obs if first is None else first
    return first is not None and f"Yes, {choice.id}" in (first.user or "")


def _shotgun(beliefs: Beliefs, choice: Route) -> Script:
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
    yield _finish(f"Paid by {', '.join(r.id for r in picks)}.")


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))
