"""The bank domain: task features, the gold graph's motifs and payment semantics (the checks
every domain passes are in ``test_every_domain.py``)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from stategym import Env, Knobs, call, calls, run_episode
from stategym.agents import resolve
from stategym.domains.bank.tools import QUOTE_TICKS
from stategym.domains.bank.world import PAYEE_ACCOUNT, parse_route
from stategym.kernel.task import EdgeKind, SlotKind, Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import Trajectory
from stategym.metrics.score import score
from stategym.registry import get_domain

DOMAIN = get_domain("bank")


def _trajectories(agent: str, seeds: range, knobs: Knobs | None = None) -> list[Trajectory]:
    env = Env("bank", knobs=knobs or Knobs())
    return [run_episode(env, resolve(env.domain, agent), s) for s in seeds]


def _fraud(task: Task) -> bool:
    holder = task.base.holders[task.base.invoice.iban]
    return holder.name != task.base.invoice.payee_name


def test_every_task_feature_occurs() -> None:
    seen: Counter[str] = Counter()
    for seed in range(400):
        task = DOMAIN.generate(seed, Knobs())
        truth = task.truth
        nodes = {c.id for c in truth.calls}
        prefs = {c.id for c in task.constraints if c.kind == "preference"}
        seen["must_ask"] += bool(task.must_ask)
        seen["priorities_must_ask"] += "priorities" in task.must_ask
        seen["sacrifice"] += bool(truth.best) and not prefs <= truth.satisfaction[truth.best[0]]
        seen["no_commit_fraud"] += not truth.best and _fraud(task)
        seen["no_commit_unaffordable"] += not truth.best and not _fraud(task)
        seen["conversion_branch"] += "lock" in nodes
        seen["no_conversion_branch"] += "send" in nodes and "lock" not in nodes
        seen["no_rates_needed"] += "rates" not in nodes
        for event in task.events:
            seen[f"event_{event.table or event.kind}"] += 1
        kinds = {s.kind for s in task.slots}
        seen["derivable_and_irrelevant"] += {SlotKind.DERIVABLE, SlotKind.IRRELEVANT} <= kinds
    for feature in (
        "must_ask",
        "priorities_must_ask",
        "sacrifice",
        "no_commit_fraud",
        "no_commit_unaffordable",
        "conversion_branch",
        "no_conversion_branch",
        "no_rates_needed",
        "event_rates",
        "event_user_accounts",
        "event_user_update",
        "derivable_and_irrelevant",
    ):
        assert seen[feature] > 5, (feature, seen)


def test_gold_graph_has_the_bank_motifs() -> None:
    for seed in range(300):
        truth = DOMAIN.generate(seed, Knobs()).truth
        ids = {c.id for c in truth.calls}
        edges = {(e.src, e.dst): e.kind for e in truth.edges}
        diamond = {"verify", "rails"} | (ids & {"rates"})
        assert all(edges[("get_invoice", n)] is EdgeKind.PIPE for n in diamond)
        if not truth.best:
            assert not ids & {"lock", "confirm", "send"}
            continue
        assert edges[("verify", "send")] is EdgeKind.DECIDE  # verify-then-commit gate
        assert edges[("confirm", "send")] is EdgeKind.ORDER
        send = next(c for c in truth.calls if c.id == "send")
        route = f"{send.args['account_id']}{'EXP' if send.args['rail'] == 'express' else 'STD'}"
        assert route == truth.decisions[0].option and route in truth.best
        if "lock" in ids:
            assert edges[("lock", "send")] is EdgeKind.PIPE
            assert {p.revealed_by for p in truth.decisions[0].preconditions} >= {"lock", "verify"}


def _pay(env: Env, route: str) -> dict:
    """Send the invoice by ``route``, locking a rate first when the route converts."""
    invoice = env.task.base.invoice
    account, rail = parse_route(route)
    quote = ""
    if env.world.user_accounts[account].currency != invoice.currency:
        locked = env.step(
            calls(call("lock_fx_rate", invoice_id=invoice.id, account_id=account, rail=rail))
        )
        quote = locked.observation.results[0].content["quote_id"]
    sent = env.step(
        calls(
            call(
                "send_transfer",
                invoice_id=invoice.id,
                account_id=account,
                rail=rail,
                quote_id=quote,
            )
        )
    )
    return sent.observation.results[0].content


def _payable(knobs: Knobs) -> tuple[Env, str]:
    env = Env("bank", knobs=knobs)
    for seed in range(100):
        env.reset(seed=seed)
        if env.task.truth.best:
            return env, env.task.truth.best[0]
    raise AssertionError("no payable task in 100 seeds")


@pytest.mark.parametrize("irreversible", [True, False])
def test_transfers_can_be_recalled_only_with_irreversibility_off(irreversible: bool) -> None:
    env, route = _payable(Knobs(irreversible=irreversible, dynamics=False))
    sent = _pay(env, route)
    assert [c.option for c in env.commitments()] == [route]
    assert env.world.accounts[PAYEE_ACCOUNT] == env.task.base.invoice.amount
    recalled = env.step(calls(call("recall_transfer", transfer_id=sent["transfer_id"])))
    result = recalled.observation.results[0]
    assert result.ok is not irreversible
    assert bool(env.commitments()) is irreversible
    assert env.outcome().lost == 0
    assert sum(env.world.accounts.values()) == env.task.base.ledger


def test_paying_twice_is_possible_and_loses_money() -> None:
    env, route = _payable(Knobs(dynamics=False))
    first = _pay(env, route)
    second = _pay(env, route)
    assert first["option"] == second["option"] == route
    outcome = env.outcome()
    assert not outcome.goal_reached  # the world is committed to the route twice
    paid = env.task.base.invoice.amount
    assert outcome.spent == outcome.lost == 2 * paid + first["fees"] + second["fees"]
    assert env.world.accounts[PAYEE_ACCOUNT] == 2 * paid


def test_only_an_agent_that_skips_the_payee_check_pays_a_mismatched_payee() -> None:
    frauds = []
    for seed in range(400):
        task = DOMAIN.generate(seed, Knobs())
        payable = any(
            {"min_balance", "within_fees"} <= hits for hits in task.truth.satisfaction.values()
        )
        if _fraud(task) and payable:
            frauds.append(seed)
    assert len(frauds) > 15
    env = Env("bank")
    for agent, pays in (("expert", False), ("commit-unverified", True)):
        for seed in frauds[:15]:
            trajectory = run_episode(env, resolve(env.domain, agent), seed)
            assert bool(env.commitments()) is pays
            assert (score(trajectory, env.task).composite < 0) is pays


def test_locked_rates_expire_only_with_dynamics_on() -> None:
    for dynamics in (True, False):
        env = Env("bank", knobs=Knobs(dynamics=dynamics))
        seed = next(
            s
            for s in range(200)
            if "lock" in {c.id for c in DOMAIN.generate(s, Knobs(dynamics=dynamics)).truth.calls}
        )
        env.reset(seed=seed)
        invoice = env.task.base.invoice
        account, rail = parse_route(env.task.truth.decisions[0].option or "")
        locked = (
            env.step(
                calls(call("lock_fx_rate", invoice_id=invoice.id, account_id=account, rail=rail))
            )
            .observation.results[0]
            .content
        )
        for _ in range(QUOTE_TICKS + 1):
            env.step(calls(call("list_transfers")))
        sent = env.step(
            calls(
                call(
                    "send_transfer",
                    invoice_id=invoice.id,
                    account_id=account,
                    rail=rail,
                    quote_id=locked["quote_id"],
                )
            )
        )
        assert sent.observation.results[0].ok is not dynamics
        assert bool(env.world.charges) is not dynamics


def test_a_rate_event_moves_the_rates_the_agent_reads() -> None:
    for seed in range(200):
        task = DOMAIN.generate(seed, Knobs())
        jump = next((e for e in task.events if e.table == "rates"), None)
        if jump is not None:
            break
    env = Env("bank")
    env.reset(seed=seed)
    currency = task.base.invoice.currency
    before = env.step(calls(call("get_fx_rates", currency=currency))).observation.results[0]
    while env.world.clock < jump.at:
        env.step(calls(call("list_transfers")))
    after = env.step(calls(call("get_fx_rates", currency=currency))).observation.results[0]
    margins = {r["sell"]: r["margin_bp"] for r in after.content}
    assert margins[jump.key] == jump.value
    assert {r["sell"]: r["margin_bp"] for r in before.content}[jump.key] != jump.value


def test_write_and_commit_results_name_the_route_they_use() -> None:
    for trajectory in _trajectories("expert", range(100)) + _trajectories("shotgun", range(30)):
        for record in trajectory.rounds:
            for c in record.calls:
                if c.effect in (Effect.WRITE, Effect.COMMIT) and c.error is None:
                    assert c.content["option"] in {
                        f"{c.arguments['account_id']}{code}" for code in ("STD", "EXP")
                    }


def test_option_ids_name_an_account_and_a_rail() -> None:
    for seed in range(300):
        options = list(DOMAIN.generate(seed, Knobs()).truth.satisfaction)
        assert all(re.fullmatch(r"(CA|SV)\d{2}(STD|EXP)", o) for o in options)


def test_a_refused_tool_call_changes_nothing() -> None:
    env, route = _payable(Knobs(dynamics=False))
    invoice = env.task.base.invoice
    account, rail = parse_route(route)
    for bad in (
        call("send_transfer", invoice_id="INV0", account_id=account, rail=rail),
        call("send_transfer", invoice_id=invoice.id, account_id="CA00", rail=rail),
        call("send_transfer", invoice_id=invoice.id, account_id=account, rail=rail, quote_id="Q42"),
        call("recall_transfer", transfer_id="T1"),
        call("verify_payee", iban="XX0", name=invoice.payee_name),
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
