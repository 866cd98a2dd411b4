"""The terms a tool's description states are the terms of the world the model is in (audit
14d), and a guess is a value only running a call could tell (audit 14d F2).

* With ``irreversible`` off, payment can be undone and returns and cancellations refund in
  full, yet every description said "Payment cannot be undone", "others refund nothing", "a
  restocking fee", "cannot be recalled" under every knob: the model was told the opposite
  of its world in the setting that tests whether it uses reversibility (F1). Now each such
  sentence is declared with the one that replaces it there (``@tool(when_off=...)``), the
  environment and the renderers offer the same text, and the replacements are checked
  against what the undo tools do.
* An argument echoed back by another call of the round (``verify_payee(name="")`` beside a
  payment with bank's default ``quote_id=""``) is not a guessed result (F2).
* "an int is not an action" (F4, the message's half).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import gymnasium
import orjson
import pytest

import stategym  # noqa: F401  (registers the Gymnasium ids)
from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import CallBatch, ToolCall
from stategym.kernel.tools import Effect, Tool, tool
from stategym.kernel.trajectory import Trajectory
from stategym.metrics import Kind, score
from stategym.registry import all_domains
from stategym.rendering import make_renderer, offered_tools
from stategym.rollout import run_episode

SYNTH = "synth:chain2+fanout3+askgate+verifycommit+conflict+precond"
DOMAINS = [*sorted(all_domains()), SYNTH]
OFF = Knobs(irreversible=False)


def _undoable(t: Tool) -> list[tuple[str, str]]:
    """The ``(said, replacement)`` pairs a tool declares for the ``irreversible`` knob."""
    return [(said, undone) for knob, said, undone in t.when_off if knob == "irreversible"]


def _descriptions(env: Env) -> dict[str, str]:
    return {s["function"]["name"]: s["function"]["description"] for s in env.tool_schemas}


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("irreversible", [True, False])
def test_the_environment_and_the_renderers_offer_the_same_descriptions(
    domain: str, irreversible: bool
) -> None:
    knobs = Knobs(irreversible=irreversible)
    env = Env(domain, knobs=knobs)
    assert env.tool_schemas == offered_tools(env.domain, knobs)


@pytest.mark.parametrize("domain", DOMAINS)
def test_no_sentence_true_only_of_an_irreversible_world_is_offered_without_it(
    domain: str,
) -> None:
    on, off = _descriptions(Env(domain)), _descriptions(Env(domain, knobs=OFF))
    for t in Env(domain).domain.tools:
        for said, undone in _undoable(t):
            assert said in on[t.name] and said not in off[t.name]
            assert undone in off[t.name]
    for text in off.values():
        for final in ("cannot be undone", "refund nothing", "restocking fee", "cannot be recalled"):
            assert final not in text


def test_every_domain_that_commits_money_declares_its_undoable_terms() -> None:
    for domain in ("travel", "bank", "shop", "meetings", SYNTH):
        commits = [t for t in Env(domain).domain.tools if t.effect is Effect.COMMIT]
        assert any(_undoable(t) for t in commits), domain


def test_a_sentence_the_docstring_does_not_hold_fails_at_declaration() -> None:
    with pytest.raises(ValueError, match="not in its text"):

        @tool(effect=Effect.COMMIT, when_off={"irreversible": {"Payment is final.": "It is not."}})
        def pay(world: object, amount: int) -> None:
            """Pay. Payment cannot be undone.

            Args:
                amount: how much.
            """


# -- the replacements are true: the undo tools refund in full with the knob off -----------

UNDO = {
    "travel": ("book_and_pay", "cancel_booking", "booking_id"),
    "bank": ("send_transfer", "recall_transfer", "transfer_id"),
    "shop": ("checkout", "return_order", "order_id"),
    "meetings": ("send_invitation", "cancel_invitation", "invitation_id"),
    SYNTH: ("buy_option", "cancel_purchase", "purchase_id"),
}


def _expert(domain: str, seed: int, knobs: Knobs) -> Trajectory:
    env = Env(domain, knobs=knobs)
    return run_episode(env, scripted(env.domain, "expert"), seed)


def _commits(domain: str, knobs: Knobs) -> Iterator[tuple[int, Trajectory]]:
    commit = UNDO[domain][0]
    for seed in range(12):
        trajectory = _expert(domain, seed, knobs)
        if any(c.name == commit and c.error is None for r in trajectory.rounds for c in r.calls):
            yield seed, trajectory


def _undo_after_commit(domain: str, seed: int, trajectory: Trajectory) -> tuple[int, int]:
    """Replay the expert up to its finish, undo its commit; (paid for it, refunded)."""
    commit, undo, key = UNDO[domain]
    env = Env(domain, knobs=OFF)
    env.reset(seed=seed)
    for record in trajectory.rounds:
        action = record.action()
        if isinstance(action, CallBatch) and any(c.name == "finish" for c in action.calls):
            break
        env.step(action)
    done = next(c for r in env.trajectory.rounds for c in r.calls if c.name == commit)
    reference = done.content[key]
    paid = sum(c.amount for c in env.world.charges if c.reference == reference)
    before = len(env.world.charges)
    result = env.step(CallBatch((ToolCall(undo, {key: reference}),)))
    assert result.observation.results[0].error is None
    refunded = sum(c.amount for c in env.world.charges[before:])
    return paid, refunded


@pytest.mark.parametrize("domain", sorted(UNDO))
def test_with_irreversible_off_an_undo_refunds_everything_paid(domain: str) -> None:
    seed, trajectory = next(_commits(domain, OFF))
    paid, refunded = _undo_after_commit(domain, seed, trajectory)
    assert paid > 0 and refunded == paid


# -- F2: an echo is not a guessed result --------------------------------------------------


def test_an_argument_another_call_of_the_round_echoes_is_not_a_guess() -> None:
    for seed in range(40):
        trajectory = _expert("bank", seed, Knobs())
        sends = [c for r in trajectory.rounds for c in r.calls if c.name == "send_transfer"]
        if sends and sends[0].arguments["quote_id"] == "":
            break
    else:
        pytest.fail("no bank task pays without a quote in seeds 0-39")
    iban = next(
        c.arguments["iban"] for r in trajectory.rounds for c in r.calls if c.name == "verify_payee"
    )
    env = Env("bank")
    env.reset(seed=seed)
    for record in trajectory.rounds:
        action = record.action()
        if isinstance(action, CallBatch) and any(c.name == "send_transfer" for c in action.calls):
            echo = ToolCall("verify_payee", {"iban": iban, "name": ""})
            action = CallBatch((echo, *action.calls))
        env.step(action)
    card = score(env.trajectory)
    kinds = [e.kind for e in card.events if e.kind.name.startswith("COMMIT")]
    assert kinds == [Kind.COMMIT_SAFE]


# -- F4 --------------------------------------------------------------------------------------


def test_an_object_that_is_not_an_action_is_named_with_its_article() -> None:
    env = Env("travel")
    env.reset(seed=0)
    error = env.step(5).observation.error  # type: ignore[arg-type]
    assert error is not None and "an int is not an action" in error


# -- the domain's instructions follow the knob as the descriptions do ----------------------


@pytest.mark.parametrize("kind", ["messages", "compact"])
def test_the_system_prompt_states_the_return_terms_of_its_world(kind: str) -> None:
    shop = Env("shop").domain
    on = make_renderer(shop, Knobs(), kind).system_prompt()
    off = make_renderer(shop, OFF, kind).system_prompt()
    assert "Returns cost a restocking fee." in on and "restocking fee" not in off
    assert "Returns are refunded in full." in off


def test_the_gym_reset_info_gives_the_instructions_of_its_knobs() -> None:
    env = gymnasium.make("stategym/Shop-v0", irreversible=False)
    _, info = env.reset(seed=0)
    assert "restocking fee" not in info["instructions"]


def test_an_undoable_instruction_the_instructions_do_not_hold_fails_to_build() -> None:
    shop = Env("shop").domain
    with pytest.raises(ValueError, match="not in its text"):
        dataclasses.replace(
            shop, instructions_when_off={"irreversible": {"Returns are final.": "They are not."}}
        )


# -- the whole prompt, not its parts: every domain, both renderings (audit 14e F1, F2) ------

FINAL = ("cannot be undone", "cannot be recalled", "refund nothing", "restocking fee", "permanent")


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("kind", ["messages", "compact"])
def test_no_prompt_calls_a_change_final_where_it_can_be_undone(domain: str, kind: str) -> None:
    renderer = make_renderer(Env(domain).domain, OFF, kind)
    text = renderer.system_prompt() + orjson.dumps(renderer.tools).decode()
    assert [phrase for phrase in FINAL if phrase in text.lower()] == []


def test_cloud_says_a_deleted_volume_can_be_restored_with_the_knob_off() -> None:
    text = _descriptions(Env("cloud", knobs=OFF))["delete_volume"]
    assert "restore_volume" in text and "permanent" not in text
