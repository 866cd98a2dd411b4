"""The shop domain: expert, knobs, task features, cart and order semantics, the user's phrases."""

from __future__ import annotations

import re
from collections import Counter
from statistics import mean

import pytest

from stategym import Env, Knobs, call, calls, replay, run_episode
from stategym.agents import resolve
from stategym.domains import get_domain
from stategym.domains.shop.expert import QUESTIONS
from stategym.domains.shop.tools import CART_TICKS, RESTOCKING_PCT
from stategym.metrics.score import score
from stategym.task import EdgeKind, SlotKind, Task
from stategym.tools import Effect
from stategym.trajectory import RoundKind, Trajectory, dumps
from stategym.user import SimulatedUser, normalise

DOMAIN = get_domain("shop")
KNOB_VARIANTS = (
    "all_off",
    "stateful=off",
    "irreversible=off",
    "hidden_info=off",
    "priorities=off",
    "dynamics=off",
)


def _trajectories(agent: str, seeds: range, knobs: Knobs | None = None) -> list[Trajectory]:
    env = Env("shop", knobs=knobs or Knobs())
    return [run_episode(env, resolve(env.domain, agent), s) for s in seeds]


def _episodes(agent: str, seeds: range, knobs: Knobs | None = None) -> list[tuple[bool, float]]:
    env = Env("shop", knobs=knobs or Knobs())
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
    env = Env("shop", knobs=knobs)
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
        assert len(ids) == len(truth.calls)
        assert all(e.src in ids and e.dst in ids for e in truth.edges)
        assert all(e.src.startswith("ask:") for e in truth.edges if e.kind is EdgeKind.GATE)
        fan_out = [n for n in ids if n.startswith("offers:")]
        assert len(fan_out) == len(task.base.products) >= 3
        assert all(edges[("search", n)] is EdgeKind.PIPE for n in fan_out)
        if truth.best:
            assert edges[("review", "checkout")] is EdgeKind.ORDER  # verify before commit
            assert edges[("cart", "checkout")] is EdgeKind.PIPE  # the join at checkout
            assert edges[("get_account", "checkout")] is EdgeKind.PIPE
            assert edges[("confirm", "checkout")] is EdgeKind.ORDER
            if "approval" in ids:  # the conditional approval sits beside the review
                assert edges[("cart", "approval")] is EdgeKind.PIPE
                assert edges[("approval", "checkout")] is EdgeKind.PIPE
                assert ("review", "approval") not in edges
            assert truth.decisions[0].option in truth.best
        else:
            assert not ids & {"cart", "review", "confirm", "checkout"}


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
    env = Env("shop", knobs=Knobs(stateful=False))
    env.reset(seed=0)
    offered = {s["function"]["name"] for s in env.tool_schemas}
    assert offered == {t.name for t in DOMAIN.tools if t.effect is Effect.READ} | {"finish"}


def _approved(env: Env, quantity: int) -> list[str]:
    """Offers from approved vendors with stock for ``quantity``, cheapest first."""
    vendors = env.task.base.policy.approved_vendors
    offers = [o for o in env.world.offers.values() if o.vendor in vendors and o.stock >= quantity]
    return [o.id for o in sorted(offers, key=lambda o: (o.unit_price, o.id))]


def _cheapest(env: Env) -> tuple[str, int]:
    """The cheapest approved offer with stock for the requested quantity, and that quantity."""
    quantity = env.task.base.quantity
    return _approved(env, quantity)[0], quantity


def _order(env: Env, offer: str, quantity: int) -> dict:
    """Add, get an approval (the vendor must be approved), check out: the checkout result."""
    cart = env.step(calls(call("add_to_cart", offer_id=offer, quantity=quantity)))
    cart_id = cart.observation.results[0].content["cart_id"]
    approval = env.step(calls(call("request_approval", cart_id=cart_id))).observation.results[0]
    assert approval.ok, approval.error
    address = env.task.base.account.address_id
    approval_id = approval.content["approval_id"]
    placed = env.step(
        calls(call("checkout", cart_id=cart_id, address_id=address, approval_id=approval_id))
    )
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
    approval = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert approval.content["approved_total"] == line["total"]
    address = task.base.account.address_id
    approval_id = approval.content["approval_id"]
    placed = env.step(
        calls(call("checkout", cart_id=cart, address_id=address, approval_id=approval_id))
    )
    assert placed.observation.results[0].content["charged"] == line["total"]


def test_cart_lines_expire_only_with_dynamics_on() -> None:
    for dynamics in (True, False):
        env = Env("shop", knobs=Knobs(dynamics=dynamics))
        env.reset(seed=8)
        offer, quantity = _cheapest(env)
        cart = env.step(calls(call("add_to_cart", offer_id=offer, quantity=quantity)))
        cart_id = cart.observation.results[0].content["cart_id"]
        approval = env.step(calls(call("request_approval", cart_id=cart_id)))
        approval_id = approval.observation.results[0].content["approval_id"]
        for _ in range(CART_TICKS):
            env.step(calls(call("get_account")))
        address = env.task.base.account.address_id
        result = env.step(
            calls(call("checkout", cart_id=cart_id, address_id=address, approval_id=approval_id))
        ).observation.results[0]
        assert result.ok is not dynamics
        assert dynamics is ("expired" in (result.error or ""))
        assert bool(env.world.charges) is not dynamics


def test_write_and_commit_results_name_their_option() -> None:
    for trajectory in _trajectories("expert", range(100)) + _trajectories("shotgun", range(30)):
        for record in trajectory.rounds:
            for c in record.calls:
                if c.effect in (Effect.WRITE, Effect.COMMIT) and c.error is None:
                    assert isinstance(c.content["option"], str) and c.content["option"]


def test_option_ids_are_single_distinct_tokens() -> None:
    for seed in range(300):
        options = list(DOMAIN.generate(seed, Knobs()).truth.satisfaction)
        assert all(re.fullmatch(r"[A-Z]{2}\d{3}", o) for o in options)
        assert len({normalise(o) for o in options}) == len(options)


PARAPHRASES: dict[str, tuple[str, ...]] = {
    "budget": (
        "What's your budget?",
        "How much can you spend in total?",
        "What can the team afford?",
        "Is there a price limit?",
    ),
    "deadline": (
        "By when do you need them?",
        "Is there a deadline?",
        "How soon must it arrive? I mean, when do you need it?",
        "What delivery date works?",
    ),
    "brand": (
        "Any particular brand?",
        "Do you care about the manufacturer?",
        "What make do you prefer?",
    ),
    "item": ("What product should I look for?", "Which item is it?"),
    "quantity": ("How many do you need?", "What quantity?"),
    "address": (
        "What's the shipping address?",
        "Where should I send it to?",
        "What address do we deliver to?",
    ),
    "vendors": (
        "Which vendors are approved?",
        "Any supplier I must use?",
        "Which shops are we allowed to buy from?",
    ),
    "color": ("Which colour?", "Any color preference?"),
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
    env = Env("shop", knobs=Knobs(dynamics=False))
    env.reset(seed=2)
    offer, _ = _cheapest(env)
    stock = env.world.offers[offer].stock
    for bad in (
        call("add_to_cart", offer_id=offer, quantity=stock + 1),
        call("add_to_cart", offer_id="ZZ999", quantity=1),
        call("checkout", cart_id="K9", address_id="AD000"),
        call("return_order", order_id="O1"),
        call("get_offers", product_id="P0"),
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
    address = env.task.base.account.address_id
    refused = env.step(calls(call("checkout", cart_id=cart, address_id=address)))
    assert "need an approval" in (refused.observation.results[0].error or "")
    granted = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert granted.content["approved_total"] == total
    approval = granted.content["approval_id"]
    extra = next(o for o in env.world.offers.values() if o.stock > 0)
    env.step(calls(call("add_to_cart", offer_id=extra.id, quantity=1)))
    stale = env.step(
        calls(call("checkout", cart_id=cart, address_id=address, approval_id=approval))
    )
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
    denied = env.step(calls(call("request_approval", cart_id=cart))).observation.results[0]
    assert denied.error_kind == "tool" and "not an approved vendor" in (denied.error or "")
    assert env.world.approvals.changed == {}
