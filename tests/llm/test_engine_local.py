"""The local agent (``hf:``) on the batched engine: episodes played concurrently share
batches, keep their caches across rounds, and log exactly what one-at-a-time play logs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from stategym.kernel.trajectory import Trajectory, dumps, loads
from stategym.kernel.verify import verify
from stategym.llm import agent_factory
from stategym.llm.batch import run_many
from stategym.registry import get_domain

SEEDS = [0, 1, 2]


def _play(model: Path, concurrency: int) -> tuple[list[Trajectory], Any]:
    make = agent_factory(
        "hf", str(model), get_domain("travel"), max_tokens=40, temperature=1.0, threads=1,
        prompt_ids=True,
    )  # fmt: skip
    played = asyncio.run(run_many("travel", make, SEEDS, concurrency=concurrency))
    return played, make.backend


def _turns(trajectories: list[Trajectory]) -> list[Any]:
    return [
        (r.model.token_ids, r.model.prompt_token_ids, r.action())
        for t in trajectories
        for r in t.rounds
        if r.model is not None
    ]


def test_concurrent_episodes_share_batches_and_log_what_sequential_play_logs(
    tiny_model: Path,
) -> None:
    alone, one = _play(tiny_model, 1)
    together, many = _play(tiny_model, len(SEEDS))
    rounds = sum(len(t.rounds) for t in together)
    assert one.batches == rounds  # one at a time: a batch per round
    assert many.batches < rounds  # together: rounds of different episodes shared batches
    assert _turns(together) == _turns(alone)
    logprobs = [lp for t in alone for r in t.rounds for lp in (r.model.logprobs or ())]
    again = [lp for t in together for r in t.rounds for lp in (r.model.logprobs or ())]
    assert again == pytest.approx(logprobs, abs=1e-4)
    # The kept caches fed each round only what the previous round's prompt did not hold.
    engine = many.model.engine
    assert engine.fed_tokens < engine.prompt_tokens / 2
    assert not engine._sessions  # every ended episode released its cache


def test_every_round_extends_the_last_prompt(tiny_model: Path) -> None:
    played, _ = _play(tiny_model, len(SEEDS))
    for trajectory in played:
        assert len(trajectory.rounds) >= 2
        previous: tuple[int, ...] | None = None
        for record in trajectory.rounds:
            turn = record.model
            assert turn is not None and turn.prompt_token_ids is not None
            if previous is not None:
                assert turn.prompt_token_ids[: len(previous)] == previous
                assert turn.span is not None and turn.span.start == len(turn.prompt_token_ids)
            previous = turn.prompt_token_ids + tuple(turn.token_ids or ())


def _scripted(
    tiny_model: Path, reply: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Trajectory], list[int]]:
    """`stategym run`'s path (the rollout engine on its worker thread) with every generation
    replaced by ``reply``: the episodes played, and the size of each model batch."""
    from stategym import rollout
    from stategym.llm.local import Generation, LocalModel
    from stategym.rollout import Agents, EpisodeSpec

    sizes: list[int] = []

    def answer(model: LocalModel, requests: Any, started: float | None = None) -> Any:
        sizes.append(len(requests))
        ids = (*model.tokenizer.encode(reply, add_special_tokens=False), min(model._stops))
        return [
            Generation(reply, tuple(prompt), ids, (0.0,) * len(ids), "stop", 0.0)
            for prompt, _, _ in requests
        ]

    monkeypatch.setattr(LocalModel, "generate_batch", answer)
    options = (("max_tokens", 48), ("threads", 1))
    specs = [EpisodeSpec("travel", seed, f"hf:{tiny_model}", options=options) for seed in SEEDS]
    return [t for _, t in rollout.stream(specs, Agents(), concurrency=len(SEEDS))], sizes


@pytest.mark.parametrize(
    "reply",
    [
        "What is your budget for this trip, and do you need a refundable fare?",
        '<tool_call>{"name": "get_profile", "arguments": {}}</tool_call>',
    ],
    ids=["question", "tool call"],
)
def test_the_run_path_answers_episodes_in_flight_in_lock_step(
    tiny_model: Path, reply: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run path batches every episode in flight into each model call, whatever the
    replies are: a batch per round of the longest episode, not per round played (a slow GPU
    run once raised the doubt)."""
    played, sizes = _scripted(tiny_model, reply, monkeypatch)
    longest = max(len(t.rounds) for t in played)
    assert longest > 1
    assert len(sizes) == longest
    assert sizes[0] == len(SEEDS)
    assert sum(sizes) == sum(len(t.rounds) for t in played)


PROFILE = '<tool_call>{"name": "get_profile", "arguments": {}}</tool_call>'


def test_a_call_drafted_in_unclosed_reasoning_is_a_counted_format_error(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unclosed ``<think>`` takes the call after it, and the round says so: before, the
    round was an empty action with no trace of the call the model drafted (audit 10A F7)."""
    played, _ = _scripted(tiny_model, f"<think>I should read the profile {PROFILE}", monkeypatch)
    for trajectory in played:
        first = trajectory.rounds[0]
        assert first.format_errors == ("empty_action", "unclosed_think")
        assert first.meta["format_errors"] == ["unclosed_think"]
        assert verify(trajectory) == []
        assert loads(dumps(trajectory)) == trajectory


def test_reasoning_the_prompt_opened_is_not_said_to_the_user(
    tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply that starts inside reasoning (templates that end the generation prompt with
    ``<think>``) acts on what follows ``</think>`` alone: before, the reasoning was said to the
    user with the question."""
    question = "What is your budget for this trip?"
    played, _ = _scripted(tiny_model, f"The user wants a flight.</think>{question}", monkeypatch)
    for trajectory in played:
        first = trajectory.rounds[0]
        assert first.say == question and first.format_errors == ()
        assert verify(trajectory) == []
