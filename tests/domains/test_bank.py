"""The bank domain: expert, knobs, task features, payment semantics and the user's phrases."""

from __future__ import annotations

import re
from collections import Counter
from statistics import mean

import pytest

from stategym import Env, Knobs, call, calls, replay, run_episode
from stategym.agents import resolve
from stategym.domains import get_domain
from stategym.domains.bank.expert import QUESTIONS
from stategym.domains.bank.tools import QUOTE_TICKS
from stategym.domains.bank.world import PAYEE_ACCOUNT, parse_route
from stategym.metrics.score import score
from stategym.task import EdgeKind, SlotKind, Task
from stategym.tools import Effect
from stategym.trajectory import RoundKind, Trajectory, dumps
from stategym.user import SimulatedUser, normalise

DOMAIN = get_domain("bank")
KNOB_VARIANTS = (
    "all_off",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
)


def _trajectories(agent: str, seeds: range, knobs: Knobs | None = None) -> list[Trajectory]:
    env = Env("bank", knobs=knobs or Knobs())
    return [run_episode(env, resolve(env.domain, agent), s) for s in seeds]


def _episodes(agent: str, seeds: range, knobs: Knobs | None = None) -> list[tuple[bool, float]]:
    env = Env("bank", knobs=knobs or Knobs())
    make = resolve(env.domain, agent)
    out = []
    for seed in seeds:
        trajectory = run_episode(env, make, seed)
        assert trajectory.outcome is not None
        out.append((trajectory.outcome.goal_reached, score(trajectory, env.task).composite))
    return out


def _off_plan(trajectory: Trajectory, task: Task) -> list[str]:
    """How an episode strays from the gold plan: calls no gold node stands for, gold calls
    never made, questions other than the must-ask ones, refused calls."""
    made = [c for r in trajectory.rounds for c in r.calls if c.name != "finish"]
    gold = [g for g in task.truth.calls if g.tool not in ("ask", "confirm")]
    problems = [
        f"extra {c.name}"
        for c in made
        if not any(g.matches(c.name, c.arguments) for g in gold if isinstance(c.arguments, dict))
    ]
    problems += [
        f"missing {g.id}"
        for g in gold
        if not any(c.error is None and g.matches(c.name, c.arguments) for c in made)
    ]
    problems += [f"refused {c.name}" for c in made if c.error is not None]
    asked = [a for r in trajectory.rounds if r.user for a in r.user.asked]
    if sorted(asked) != sorted(task.must_ask):
        problems.append(f"asked {asked}, must ask {task.must_ask}")
    return problems


def _expert_failures(seeds: range, knobs: Knobs) -> dict[int, object]:
    """Seeds where the expert misses the goal, scores below 1, or strays from the plan."""
    env = Env("bank", knobs=knobs)
    make = resolve(env.domain, "expert")
    failures: dict[int, object] = {}
    for seed in seeds:
        trajectory = run_episode(env, make, seed)
        assert trajectory.outcome is not None
        composite = score(trajectory, env.task).composite
        problems = _off_plan(trajectory, env.task)
        if not trajectory.outcome.goal_reached or composite != 1.0 or problems:
            failures[seed] = (trajectory.outcome.goal_reached, composite, problems)
    return failures


def _fraud(task: Task) -> bool:
    holder = task.base.holders[task.base.invoice.iban]
    return holder.name != task.base.invoice.payee_name


def test_expert_reaches_the_goal_and_scores_one_on_1000_tasks() -> None:
    assert _expert_failures(range(1000), Knobs()) == {}


@pytest.mark.parametrize("knobs", KNOB_VARIANTS)
def test_expert_reaches_the_goal_under_every_knob(knobs: str) -> None:
    assert _expert_failures(range(1000, 1300), Knobs.parse(knobs)) == {}


@pytest.mark.parametrize("agent", ["serial", "random"])
def test_serial_and_random_do_measurably_worse(agent: str) -> None:
    expert = _episodes("expert", range(200))
    other = _episodes(agent, range(200))
    assert mean(g for g, _ in other) < 0.9 * mean(g for g, _ in expert)
    assert mean(r for _, r in other) < mean(r for _, r in expert) - 0.5


def test_generation_and_episodes_are_deterministic() -> None:
    for knobs in (Knobs(), Knobs.all_off()):
        assert DOMAIN.generate(11, knobs) == DOMAIN.generate(11, knobs)
    for agent in ("expert", "serial", "random", "shotgun"):
        first = [dumps(t) for t in _trajectories(agent, range(40))]
        assert first == [dumps(t) for t in _trajectories(agent, range(40))]


@pytest.mark.parametrize("agent", ["expert", "serial", "random", "commit-same-round", "shotgun"])
def test_replay_reproduces_the_state(agent: str) -> None:
    for trajectory in _trajectories(agent, range(60)):
        assert replay(trajectory).state_key() == trajectory.digest


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
        assert len(ids) == len(truth.calls)
        assert all(e.src in ids and e.dst in ids for e in truth.edges)
        assert all(e.src.startswith("ask:") for e in truth.edges if e.kind is EdgeKind.GATE)
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


def test_knobs_are_respected() -> None:
    for seed in range(200):
        stateless = DOMAIN.generate(seed, Knobs(stateful=False))
        assert stateless.truth.decisions == ()
        assert {c.effect for c in stateless.truth.calls if c.effect} == {Effect.READ}
        assert not [
            s
            for s in DOMAIN.generate(seed, Knobs(hidden_info=False)).slots
            if s.kind is SlotKind.MISSING
        ]
        assert DOMAIN.generate(seed, Knobs(dynamics=False)).events == ()
        flat = DOMAIN.generate(seed, Knobs(priorities=False))
        assert "priorities" not in flat.must_ask
        full = frozenset(c.id for c in flat.constraints)
        assert not flat.truth.best or flat.truth.satisfaction[flat.truth.best[0]] == full
    env = Env("bank", knobs=Knobs(stateful=False))
    env.reset(seed=0)
    offered = {s["function"]["name"] for s in env.tool_schemas}
    assert offered == {t.name for t in DOMAIN.tools if t.effect is Effect.READ} | {"finish"}


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


def test_write_and_commit_results_name_their_option() -> None:
    for trajectory in _trajectories("expert", range(100)) + _trajectories("shotgun", range(30)):
        for record in trajectory.rounds:
            for c in record.calls:
                if c.effect in (Effect.WRITE, Effect.COMMIT) and c.error is None:
                    assert c.content["option"] in {
                        f"{c.arguments['account_id']}{code}" for code in ("STD", "EXP")
                    }


def test_option_ids_are_single_distinct_tokens() -> None:
    for seed in range(300):
        options = list(DOMAIN.generate(seed, Knobs()).truth.satisfaction)
        assert all(re.fullmatch(r"(CA|SV)\d{2}(STD|EXP)", o) for o in options)
        assert len({normalise(o) for o in options}) == len(options)


PARAPHRASES: dict[str, tuple[str, ...]] = {
    "fee_cap": (
        "What fees are acceptable?",
        "How much extra can it cost you?",
        "What are you willing to pay on top?",
        "Are bank charges a concern?",
    ),
    "savings": ("Can I take it from your savings?", "Is the rainy day money off limits?"),
    "conversion": (
        "May I convert currency?",
        "Is an exchange between currencies ok?",
        "Do you mind a conversion?",
    ),
    "invoice": ("Which invoice is it?", "What's the invoice number?"),
    "payee": ("Who are you paying?", "Who should receive the money?", "Who's the recipient?"),
    "due_day": ("When is it due?", "Is there a deadline?", "When must the money land?"),
    "iban": (
        "What's their IBAN?",
        "Do you have their bank details?",
        "What account number should I use?",
    ),
    "balances": ("What's your balance?", "How much money do you have?", "Are there enough funds?"),
    "category": ("Which category is this?", "How should I categorise it for bookkeeping?"),
}


def test_the_user_routes_paraphrases_and_the_experts_questions_to_one_slot() -> None:
    task = DOMAIN.generate(0, Knobs())
    user = SimulatedUser(task, DOMAIN.slot_phrases)
    for slot, texts in PARAPHRASES.items():
        for text in texts:
            assert user.respond(text).asked == (slot,), text
    for slot, question in QUESTIONS.items():
        turn = user.respond(question)
        if slot == "priorities":
            assert turn.priority_asked and turn.asked in ((), ("priorities",))
        else:
            assert turn.asked == (slot,) and not turn.priority_asked, question


def test_proposals_name_one_option_and_reach_no_slot() -> None:
    proposals = 0
    for trajectory in _trajectories("expert", range(300)) + _trajectories(
        "ask-nothing", range(100)
    ):
        for record in trajectory.rounds:
            if record.kind is RoundKind.SAY and record.user and record.user.proposed:
                proposals += 1
                assert record.user.asked == () and not record.user.priority_asked
    assert proposals > 200


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
