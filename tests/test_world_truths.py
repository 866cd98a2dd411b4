"""The world tells the truth: the money figures, failed calls, tool descriptions and errors.

* **Money lost** (``Outcome.lost``) is what the user paid, less refunds, less the charges the
  kept commitment names: a paid write the commitment did not need is lost (audit 14a F1:
  cloud counted every snapshot of the deleted volume as the deletion's cost).
* **A tool that fails changes nothing**: a call that ends in a ``ToolError`` leaves the
  state as it found it, in every domain (audit 14a F3: a synthetic buy refused for want of
  preparation used up its hold).
* **Tool descriptions promise only what the world does** (audit 14a F4: a cart line and a
  fare hold said they kept the stock and a seat that a scheduled sell-out still took).
* **The docs say how an answer is read** (audit 14a F5), and **an unusable action is told
  what it was** (audit 14a F6: a bare ``ToolCall`` was told it sent nothing, and a ``null``
  answer that it sent none).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stategym import Env, Knobs, call, calls, verify
from stategym.agents import scripted
from stategym.kernel.protocol import Action, CallBatch, ToolCall
from stategym.kernel.task import EventKind
from stategym.kernel.tools import Effect, Tool
from stategym.kernel.trajectory import Outcome, RoundKind
from stategym.kernel.validation import Call, Ready, check_call, run_ready
from stategym.registry import all_domains

DOCS = Path(__file__).parents[1] / "docs"
KNOB_SETTINGS = [Knobs(*flags) for flags in itertools.product((True, False), repeat=5)]
"""All 32 knob settings, ``stateful`` on in the first 16."""
SYNTHETIC = ("synth:chain2+verifycommit+precond", "synth:chain2+fanout3+precond+conflict")
"""Synthetic domains whose buy checks a preparation (with and without a hold: audit 14a F3)."""

Extra = Callable[[Env, Action], Iterable[Action]]
"""Rounds to play after one of the expert's, drawn lazily (each may read the one before)."""


# -- helpers ------------------------------------------------------------------------------


def _expert_rounds(env: Env, seed: int, extra: Extra | None = None) -> Iterator[Action]:
    """Play the expert on task ``seed``, yielding each action before it is played (the
    environment then stands where the expert acts). ``extra(env, action)`` adds rounds
    after that action; the expert sees only its own rounds' observations."""
    observation, _ = env.reset(seed=seed)
    expert = scripted(env.domain, "expert")(env.task)
    while not env.done:
        action = expert.act(observation)
        yield action
        observation = env.step(action).observation
        for added in extra(env, action) if extra is not None else ():
            if not env.done:
                env.step(added)


def _play_expert(env: Env, seed: int, extra: Extra | None = None) -> Outcome:
    for _ in _expert_rounds(env, seed, extra):
        pass
    return env.outcome()


def _named(action: Action, name: str) -> list[ToolCall]:
    return [c for c in action.calls if c.name == name] if isinstance(action, CallBatch) else []


# -- F1: money lost -------------------------------------------------------------------------


def _two_more_snapshots(env: Env, action: Action) -> Iterator[Action]:
    for snapshot in _named(action, "create_snapshot") * 2:
        yield CallBatch((snapshot,))


@pytest.mark.parametrize("irreversible", [True, False], ids=["irreversible", "reversible"])
def test_a_needless_snapshot_of_the_deleted_volume_is_money_lost(irreversible: bool) -> None:
    """Audit 14a F1: the expert, plus two more snapshots of its target after its own. They
    cost money nothing refunds, and the deletion needs one snapshot only: both are lost."""
    knobs = Knobs(irreversible=irreversible)
    checked = 0
    for seed in range(40):
        expert = _play_expert(Env("cloud", knobs=knobs), seed)
        env = Env("cloud", knobs=knobs)
        padded = _play_expert(env, seed, _two_more_snapshots)
        if padded.spent == expert.spent or not padded.goal_reached:
            continue  # the expert took no snapshot on this task
        assert expert.lost == 0 and padded.refunded == 0
        assert padded.lost == padded.spent - expert.spent > 0, seed
        snapshots = [c for c in env.world.charges if c.memo.startswith("snapshot")]
        assert len({c.reference for c in snapshots}) == len(snapshots) == 3
        checked += 1
    assert checked >= 4


def _snapshot_and_delete_it(env: Env, action: Action) -> Iterator[Action]:
    for snapshot in _named(action, "create_snapshot"):
        yield CallBatch((snapshot,))
        taken = env.rounds[-1].calls[0].content["snapshot_id"]
        yield calls(call("delete_snapshot", snapshot_id=taken))


def test_a_refunded_extra_snapshot_loses_nothing() -> None:
    """Guard: a needless snapshot deleted again for its refund (irreversible off) nets to
    nothing under its own id, so the episode loses nothing."""
    knobs = Knobs(irreversible=False)
    checked = 0
    for seed in range(40):
        outcome = _play_expert(Env("cloud", knobs=knobs), seed, _snapshot_and_delete_it)
        if outcome.refunded and outcome.goal_reached:
            assert outcome.lost == 0 and outcome.spent > outcome.refunded
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("name", sorted(all_domains()))
def test_the_expert_loses_no_money(name: str) -> None:
    """Guard: what the expert pays is exactly its one right commitment, under every knob
    setting (the fixer swept seeds 0-199 of every domain the same way)."""
    for seed in range(32):
        outcome = _play_expert(Env(name, knobs=KNOB_SETTINGS[seed]), seed)
        assert outcome.goal_reached and outcome.lost == 0, (name, seed)


# -- F3: a failing tool changes nothing -------------------------------------------------------


def test_a_buy_refused_for_want_of_preparation_keeps_its_hold() -> None:
    """Audit 14a F3, as the audit played it: hold, buy (refused: not prepared), prepare,
    buy again with the same hold. The hold is still usable, at its price."""
    env = Env(SYNTHETIC[0])
    env.reset(seed=1)
    option = env.task.truth.best[0]
    hold = env.step(calls(call("hold_option", option_id=option))).observation.results[0]
    assert hold.error is None
    refused = env.step(calls(call("buy_option", hold_id=hold.content["hold_id"])))
    (result,) = refused.observation.results
    assert result.error_kind == "tool" and "prepare" in (result.error or "")
    assert env.world.holds[hold.content["hold_id"]].status == "active"
    env.step(calls(call("prepare_option", option_id=option)))
    bought = env.step(calls(call("buy_option", hold_id=hold.content["hold_id"])))
    (result,) = bought.observation.results
    assert result.error is None, result.error
    assert result.content["charged"] == hold.content["price"]
    env.step(calls(call("finish")))
    assert env.outcome().goal_reached and verify(env.trajectory) == []


def _remember(value: Any, seen: dict[Any, list[Any]]) -> None:
    """Every string and integer inside a tool result (arguments to try later)."""
    if isinstance(value, dict):
        for item in value.values():
            _remember(item, seen)
    elif isinstance(value, list):
        for item in value:
            _remember(item, seen)
    elif type(value) in (str, int) and value not in seen[type(value)]:
        seen[type(value)].append(value)


def _tries(tool: Tool, own: list[dict[str, Any]], seen: dict[Any, list[Any]]) -> Iterator[dict]:
    """Arguments to try: each call the expert makes of ``tool`` in the episode, then each of
    them with one argument swapped for a value seen so far (the latest few) or a junk one."""
    junk: dict[Any, list[Any]] = {str: ["X0", ""], int: [0, -1, 10**6]}
    for base in own or [{}]:
        yield base
        for param in tool.params:
            values = list(param.choices) if param.choices else []
            values += seen.get(param.annotation, [])[-12:] + junk.get(param.annotation, [])
            for value in values:
                yield {**base, param.name: value}


def _failed_calls_change_nothing(
    env: Env, own: dict[str, list[dict[str, Any]]], seen: dict[Any, list[Any]], depth: int = 1
) -> int:
    """Run every try of every tool on the state as it stands, each the way ``Env.step``
    runs a call (``check_call``, then ``run_ready``); assert every ``ToolError`` left the
    state key unchanged. With ``depth`` left, the states a successful write or commit
    reaches (states the expert never passes through: a hold of an unprepared option) are
    probed the same way, with that call's result seen. Returns how many calls failed."""
    tools = {t.name: t for t in env.domain.available_tools(env.task.knobs)}
    judges = env.domain.judges_answer(env.task.knobs)
    saved, key = env.snapshot(), env.state_key()
    failures = 0
    for tool in tools.values():
        for arguments in _tries(tool, own.get(tool.name, []), seen):
            ready = check_call(Call("", tool.name, arguments), "p", tools, judges, env.provenance)
            if type(ready) is not Ready:
                continue  # a format error never reaches the tool
            record = run_ready(ready, env.world)
            if record.error_kind == "tool":
                failures += 1
                assert env.state_key() == key, (tool.name, arguments, record.error)
                continue
            if depth and tool.effect is not Effect.READ:
                after = {kind: list(values) for kind, values in seen.items()}
                _remember(record.content, after)
                failures += _failed_calls_change_nothing(env, own, after, depth - 1)
            env.restore(saved)
    return failures


@pytest.mark.parametrize("name", [*sorted(all_domains()), *SYNTHETIC])
def test_a_tool_call_that_fails_leaves_the_state_unchanged(name: str) -> None:
    """At every state the expert passes through, every tool is called with the expert's own
    arguments, and with each argument swapped for a value seen so far or a junk one: every
    call that ends in a ``ToolError`` must leave ``state_key()`` as it was."""
    failures = 0
    for seed in range(4):
        knobs = KNOB_SETTINGS[(seed * 7) % 16]  # stateful on: write and commit tools offered
        own: dict[str, list[dict[str, Any]]] = {}
        for action in _expert_rounds(Env(name, knobs=knobs), seed):
            for made in action.calls if isinstance(action, CallBatch) else ():
                own.setdefault(made.name, []).append(dict(made.arguments))
        env = Env(name, knobs=knobs)
        seen: dict[Any, list[Any]] = {str: [], int: []}
        for _ in _expert_rounds(env, seed):
            if env.rounds:
                for record in env.rounds[-1].calls:
                    _remember(record.content, seen)
            failures += _failed_calls_change_nothing(env, own, seen)
    assert failures > 50  # the probe reached failing calls


# -- F4: holds and carts say what they keep ---------------------------------------------------


def _description(env: Env, tool: str) -> str:
    (schema,) = [s for s in env.tool_schemas if s["function"]["name"] == tool]
    return str(schema["function"]["description"])


def _sell_out(env: Env, table: str, field: str) -> tuple[int, str] | None:
    """The first scheduled event that sells out a record of ``table``: (tick, key)."""
    for event in env.task.events:
        sets = event.kind is EventKind.SET and (event.table, event.field) == (table, field)
        if sets and event.value == 0:
            return event.at, str(event.key)
    return None


def test_a_cart_line_says_it_keeps_no_stock_and_a_sell_out_fails_checkout() -> None:
    """Audit 14a F4 (shop): a sell-out inside a cart line's lifetime fails checkout, and
    neither the tool's description nor the cart review says the line reserved stock."""
    env = Env("shop")
    description = _description(env, "add_to_cart")
    assert "reserve" not in description.lower() and "sells out" in description
    for seed in range(40):
        env.reset(seed=seed)
        sell_out = _sell_out(env, "offers", "stock")
        if sell_out is None:
            continue
        at, offer = sell_out
        account = env.step(calls(call("get_account"))).observation.results[0].content
        added = env.step(calls(call("add_to_cart", offer_id=offer, quantity=1)))
        line = added.observation.results[0].content
        if line is None or line["expires_at"] is None or line["expires_at"] < at + 3:
            continue
        cart = line["cart_id"]
        env.step(calls(call("set_delivery", cart_id=cart, address_id=account["address_id"])))
        while env.world.clock <= at:
            env.step(calls(call("get_account")))
        review = env.step(calls(call("review_cart", cart_id=cart))).observation
        (row,) = review.results[0].content["lines"]
        assert row["in_stock"] is False and "reserved_until" not in row
        assert row["expires_at"] == line["expires_at"] >= env.world.clock
        checkout = env.step(calls(call("checkout", cart_id=cart))).observation
        assert "sold out" in (checkout.results[0].error or "")
        return
    pytest.fail("no shop task sells out an offer inside a cart line's lifetime")


HOLDS = [
    ("travel", "flights", "seats", "hold_fare", "flight_id", "book_and_pay", "get_profile"),
    (
        "synth:chain2+verifycommit",
        "options",
        "stock",
        "hold_option",
        "option_id",
        "buy_option",
        "list_purchases",
    ),
]
"""A hold tool of each domain that has one and keeps a price, not a unit: (domain, the
table and field a sell-out event sets, the hold tool and its argument, the payment tool,
an idle read with no arguments)."""


@pytest.mark.parametrize(
    ("name", "table", "field", "hold", "argument", "pay", "idle"), HOLDS, ids=[h[0] for h in HOLDS]
)
def test_a_hold_says_it_keeps_the_price_not_a_unit(
    name: str, table: str, field: str, hold: str, argument: str, pay: str, idle: str
) -> None:
    """Audit 14a F4 (travel's "Hold a seat", and the synthetic hold): an option held and then
    sold out fails payment although the hold has not expired, and the description says so."""
    env = Env(name)
    description = _description(env, hold)
    assert (
        "Hold a seat" not in description and "aside" in description and "sells out" in description
    )
    for seed in range(60):
        env.reset(seed=seed)
        sell_out = _sell_out(env, table, field)
        if sell_out is None:
            continue
        at, option = sell_out
        held = env.step(calls(call(hold, **{argument: option}))).observation.results[0]
        if held.error is not None or held.content["expires_at"] <= at:
            continue
        while env.world.clock <= at:
            env.step(calls(call(idle)))
        assert env.world.clock <= held.content["expires_at"]
        paid = env.step(calls(call(pay, hold_id=held.content["hold_id"])))
        assert "sold out" in (paid.observation.results[0].error or "")
        return
    pytest.fail(f"no {name} task sells out an option inside a hold's lifetime")


# -- F5: the docs say how an answer is read ---------------------------------------------------


def test_the_docs_say_a_punctuation_only_answer_is_empty() -> None:
    """Audit 14a F5: environment.md names the normalisation the outcome uses, and each
    example it gives is judged as it says (bank, stateful off, a task with nothing best)."""
    text = " ".join((DOCS / "environment.md").read_text().split())
    assert "normalise_answer" in text
    assert 'a blank answer or one of punctuation only (`"?"`, `"..."`, `"-"`) counts as empty' in (
        text
    )
    env = Env("bank", knobs=Knobs(stateful=False))
    seed = next(s for s in range(200) if env.reset(seed=s) and not env.task.truth.best)
    judged = {"?": True, "...": True, "-": True, "": True, "None.": True, "I don't know": False}
    for answer, reached in judged.items():
        env.reset(seed=seed)
        env.step(calls(call("finish", answer=answer)))
        assert env.outcome().goal_reached is reached, answer


# -- F6: an unusable action is told what it was -----------------------------------------------


def test_a_bare_tool_call_is_told_to_wrap_it() -> None:
    """Audit 14a F6: a ``ToolCall`` sent where a batch belongs is a format error that names
    it and says what to send, not an "empty action"; another object is named too."""
    env = Env("travel")
    env.reset(seed=0)
    result = env.step(call("get_profile"))  # type: ignore[arg-type]
    assert result.info["format_errors"] == ("bad_message",)
    error = result.observation.error or ""
    assert "ToolCall" in error and "calls(" in error and "empty" not in error
    assert env.rounds[-1].kind is RoundKind.INVALID and env.world.clock == 1
    other = env.step({"a": 1})  # type: ignore[arg-type]
    assert other.info["format_errors"] == ("empty_action",)
    assert "dict" in (other.observation.error or "")
    env.step(calls(call("finish")))
    assert verify(env.trajectory) == []


def test_a_null_answer_is_told_it_must_be_a_string_not_that_it_is_missing() -> None:
    """Audit 14a F6: where the answer is required, ``null`` is present and not a string;
    only an answer left out is missing. Where it is optional, ``null`` is no answer."""
    cases: list[tuple[dict[str, Any] | str, str, str]] = [
        ({"answer": None}, "wrong_type", "must be a string"),
        ('{"answer": null}', "wrong_type", "must be a string"),
        ({}, "missing_argument", "missing argument 'answer'"),
    ]
    for arguments, kind, words in cases:
        env = Env("lookup")
        env.reset(seed=0)
        result = env.step(CallBatch((ToolCall("finish", arguments),)))
        (record,) = result.observation.results
        assert result.info["format_errors"] == (kind,) and not result.terminated
        assert words in (record.error or ""), record.error
    env = Env("travel")
    env.reset(seed=0)
    assert env.step(calls(call("finish", answer=None))).terminated


# -- the kernel's rule, for a domain whose tool breaks it ------------------------------------


def test_a_tool_that_writes_then_refuses_leaves_the_world_as_it_found_it() -> None:
    """A third-party tool may forget to check before it writes: the environment restores
    the world around a write or commit call that raises ``ToolError`` (kernel.validation),
    so the agent told "refused" is not left with half a change (a hold, a fee, an id spent)."""
    import dataclasses

    from stategym.kernel.errors import ToolError
    from stategym.registry import get_domain
    from stategym.rollout import run_episode

    travel = get_domain("travel")
    hold = next(t for t in travel.tools if t.name == "hold_fare")

    def holds_then_refuses(world: Any, **arguments: Any) -> Any:
        hold.fn(world, **arguments)
        world.transfer("user", "airline", 5, "a fee it should not keep", "X")
        raise ToolError("refused after writing")

    careless = dataclasses.replace(hold, fn=holds_then_refuses)
    domain = dataclasses.replace(
        travel, tools=tuple(careless if t is hold else t for t in travel.tools)
    )
    played = run_episode(Env("travel"), scripted(travel, "expert"), 0)
    held = next(c for r in played.rounds for c in r.calls if c.name == "hold_fare")
    env = Env(domain)
    env.reset(seed=0)
    before = env.world.snapshot()
    result = env.step(calls(call("hold_fare", **held.arguments)))
    assert result.observation.results[0].error == "refused after writing"
    after = env.world.snapshot()
    assert (after.tables, after.accounts, after.charges, after.next_id) == (
        before.tables,
        before.accounts,
        before.charges,
        before.next_id,
    )
