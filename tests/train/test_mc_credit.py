"""The ``mc`` credit: decision rounds, states restored by replay, and MC values against
brute-force continuations; per-call credit inside a parallel round.

The brute force enumerates every branch of a stand-in policy whose reply law is known
exactly, each played in full by a sequential episode, so ``V(s_1)`` is an exact weighted
sum the sampled estimate (continuations restored by replay, in lock-step) must approach.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

from stategym.train.group import Generated, Member, Sampling, play
from stategym.train.policy import Policy

LIST, ASK, FINISH = "list_options_1 A", "What is your budget for this?", 'finish "Done."'
P_ASK = 0.5
"""After round 0 (always ``LIST``), the stand-in asks with this probability, else finishes."""


class StandIn:
    """A policy with the tiny model's tokenizer whose replies are drawn from a known law."""

    def __init__(self, policy: Policy) -> None:
        self.inner = policy
        self.chat, self.tokenizer, self.stops = policy.chat, policy.tokenizer, policy.stops
        self.pad_id = policy.pad_id

    def reply(self, text: str) -> Generated:
        ids = tuple(self.tokenizer.encode(text, add_special_tokens=False))
        stop = next(iter(self.stops))
        return Generated((*ids, stop), (0.0,) * (len(ids) + 1), True)

    def generate(self, prompts: Any, *, max_tokens: int, temperature: float, generator: Any):
        import torch

        out = []
        for _ in prompts:  # only continuations sample here: round 0 is always replayed
            draw = float(torch.rand((), generator=generator))
            out.append(self.reply(ASK if draw < P_ASK else FINISH))
        return out


class Scripted:
    """A sync backend replaying given replies (the brute force's branches)."""

    def __init__(self, stand_in: StandIn, texts: list[str]) -> None:
        self.stand_in, self.texts, self.chat = stand_in, texts, stand_in.chat

    def describe(self) -> dict[str, Any]:
        return {"backend": "scripted"}

    def complete_sync(self, messages: Any, tools: Any, turn: Any) -> Any:
        from stategym.llm.agent import Reply
        from stategym.llm.parse import parse

        generated = self.stand_in.reply(self.texts[turn.index])
        text = self.stand_in.tokenizer.decode(list(generated.ids[:-1]))
        meta = {"completion_token_ids": list(generated.ids), "finish_reason": "stop",
                "logprobs": list(generated.logprobs), "text": text}  # fmt: skip
        return Reply(parse(text).to_message(f"call_{turn.index}"), meta, ())


@pytest.fixture(scope="module")
def stand_in(sft_run: Path) -> StandIn:
    return StandIn(Policy.load(sft_run / "model"))


def family_member(seed: int = 1_000_004, sample: int = 0) -> Member:
    from stategym.train.tasks import task_family

    family = task_family("ask-or-act")
    return Member(family.domain, seed, family.knobs(seed), sample=sample)


def brute_force_value(stand_in: StandIn, member: Member, depth: int = 10) -> float:
    """Exact ``V(s_1)``: round 0 is LIST; then ``k`` questions and a finish with
    probability ``P_ASK**k (1 - P_ASK)`` (the tail past ``depth`` is below 1e-3). Each
    branch is played in full by its own sequential episode (no lock-step, no replay)."""
    from stategym.kernel.env import Env
    from stategym.llm.agent import ChatAgent
    from stategym.metrics.credit import credit
    from stategym.rollout import Episode, drive

    returns, weights = [], []
    for k in range(depth):
        env = Env(member.domain, knobs=member.knobs)
        observation, _ = env.reset(seed=member.seed)
        backend = Scripted(stand_in, [LIST] + [ASK] * k + [FINISH])
        agent = ChatAgent("policy", backend, env.domain, env.task, rendering="compact")
        trajectory = drive(Episode(env, agent, observation))
        returns.append(math.fsum(credit(trajectory, env.task).rewards[1:]))
        weights.append(P_ASK**k * (1 - P_ASK))
    assert len(set(returns)) > 1  # the law matters: asking changes the return
    return math.fsum(w * r for w, r in zip(weights, returns, strict=True)) / math.fsum(weights)


def test_decision_rounds_are_commits_and_the_first_question() -> None:
    from stategym import Env, run_episode
    from stategym.agents import resolve
    from stategym.train.mc import decision_rounds

    env = Env("shop")
    trajectory = run_episode(env, resolve(env.domain, "expert"), 3)
    kinds = [r.kind.value for r in trajectory.rounds]
    commits = [r.index for r in trajectory.rounds if any(c.effect == "commit" for c in r.calls)]
    says = [i for i, kind in enumerate(kinds) if kind == "say"]
    assert commits and says  # shop's expert asks and checks out
    assert decision_rounds(trajectory) == tuple(sorted({*commits, says[0]}))


def test_mc_values_match_brute_force_continuations(stand_in: StandIn) -> None:
    import torch

    from stategym.train import mc

    member = family_member()
    # the episode to credit: LIST, ASK, FINISH (its first question is at round 1)
    logged = [stand_in.reply(t) for t in (LIST, ASK, FINISH)]
    sampling = Sampling(1.0, 24, 1400, "compact")
    (rollout,), _ = play(stand_in, [Member(**{**_fields(member), "prefix": tuple(logged)})],
                         sampling, torch.Generator().manual_seed(0))  # type: ignore[arg-type]  # fmt: skip
    assert [r.kind.value for r in rollout.trajectory.rounds] == ["calls", "say", "calls"]
    (estimate,) = mc.values(stand_in, [rollout], 1, 400, sampling,  # type: ignore[arg-type]
                            torch.Generator().manual_seed(1))  # fmt: skip
    exact = brute_force_value(stand_in, member)
    assert estimate[0] is not None and estimate[2] is None
    assert estimate[1] is not None
    # 400 samples of returns in [-1, 1]: the standard error is at most 0.05; the two
    # branches' returns differ, so a wrong restore (other state, other law) moves it far
    assert abs(estimate[1] - exact) < 0.1, (estimate, exact)


def _fields(obj: Any) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in obj.__slots__}
