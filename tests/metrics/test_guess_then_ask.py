"""Audit 16B F1: a proposal is a use of every must-ask slot.

A proposal names the choice, which every must-ask slot bears on. Before, a slot was used
only by a call its answer gates, so an agent that proposed a guess made without the hidden
facts (the ``ask-nothing`` agent's own choice), asked the questions after the user's yes and
then committed scored the expert's R = 1.000 whenever the guess was accepted (bank 13 of 31
tasks, cloud 11 of 34); a rejected guess cost one needless question. Now each slot asked
only after the proposal is missed at the proposal, whatever the user answered.
"""

from __future__ import annotations

import pytest

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.protocol import Action, CallBatch, Say
from stategym.kernel.tools import Effect
from stategym.metrics import Kind, score
from stategym.rollout import run_episode

SEEDS = range(12)


def _actions(domain: str, seed: int, agent: str) -> list[Action]:
    env = Env(domain)
    trajectory = run_episode(env, scripted(env.domain, agent), seed=seed)
    return [record.action() for record in trajectory.rounds]


def _guess_then_ask(domain: str, seed: int) -> list[Action] | None:
    """``ask-nothing``'s episode with the expert's questions (its messages that name no
    option) put right before its first commit; ``None`` where it proposes nothing."""
    env = Env(domain)
    env.reset(seed=seed)
    effects = {tool.name: tool.effect for tool in env.domain.tools}
    options = env.task.truth.options
    guess = _actions(domain, seed, "ask-nothing")
    if not any(isinstance(a, Say) for a in guess):
        return None
    questions = [
        a
        for a in _actions(domain, seed, "expert")
        if isinstance(a, Say) and not any(option in a.text for option in options)
    ]
    commit = next(
        i
        for i, a in enumerate(guess)
        if isinstance(a, CallBatch) and any(effects.get(c.name) is Effect.COMMIT for c in a.calls)
    )
    return [*guess[:commit], *questions, *guess[commit:]]


def _play(domain: str, seed: int, actions: list[Action]) -> tuple[Env, float]:
    env = Env(domain)
    env.reset(seed=seed)
    for action in actions:
        if env.done:
            break
        env.step(action)
    return env, score(env.trajectory, env.task).composite


@pytest.mark.parametrize("domain", ["bank", "cloud"])
def test_a_guess_proposed_before_the_questions_never_ties_the_expert(domain: str) -> None:
    played = 0
    for seed in SEEDS:
        plan = _guess_then_ask(domain, seed)
        if plan is None:
            continue
        env, composite = _play(domain, seed, plan)
        card = score(env.trajectory, env.task)
        proposal = next(r.index for r in env.trajectory.rounds if r.user and r.user.proposed)
        missed = [e for e in card.events if e.kind is Kind.ASK_MISSED]
        if card.clarification.tp + card.clarification.fn == 0:
            continue  # nothing to ask on this task
        played += 1
        assert composite < 1.0, seed
        assert missed and all(e.round <= proposal for e in missed), seed
    assert played >= 4


def test_a_question_put_with_the_proposal_is_late() -> None:
    """Cloud's audit repro: the questions and the guessed proposal in one message."""
    env = Env("cloud")
    env.reset(seed=5)
    options = env.task.truth.options
    guess = _actions("cloud", 5, "ask-nothing")
    at = next(
        i for i, a in enumerate(guess) if isinstance(a, Say) and any(o in a.text for o in options)
    )
    questions = [
        a.text
        for a in _actions("cloud", 5, "expert")
        if isinstance(a, Say) and not any(o in a.text for o in options)
    ]
    proposal = guess[at]
    assert isinstance(proposal, Say) and questions
    joined = Say(" ".join([*questions, proposal.text]))
    env, composite = _play("cloud", 5, [*guess[:at], joined, *guess[at + 1 :]])
    card = score(env.trajectory, env.task)
    assert env.trajectory.rounds[at].user.proposed is not None  # the message proposed
    kinds = [e.kind for e in card.events if e.round == at and e.dimension.value == "clarification"]
    assert Kind.ASK_LATE in kinds and Kind.ASK_MISSED in kinds and Kind.ASK_NEEDED not in kinds
    assert composite < 1.0


def test_the_expert_still_asks_in_time_everywhere() -> None:
    """The rule's other side: the expert asks every slot before it proposes."""
    for domain in ("travel", "meetings", "shop", "bank", "cloud"):
        for seed in SEEDS:
            env = Env(domain)
            trajectory = run_episode(env, scripted(env.domain, "expert"), seed=seed)
            card = score(trajectory, env.task)
            assert card.composite == 1.0 and card.clarification.fn == 0, (domain, seed)
