"""The async runner and the OpenAI-compatible agent against a scripted endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")
from llm_fixtures import completion, http, round_of

from stategym.kernel.errors import UsageError
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import RoundKind, Usage, read_jsonl
from stategym.llm import agent_factory
from stategym.llm.batch import Clock, run_many
from stategym.llm.prompt import PROMPT_VERSION
from stategym.registry import get_domain
from stategym.rollout import run_episode, trajectory_key

TRAVEL = get_domain("travel")
LOOKUPS = [("get_profile", "{}"), ("get_travel_policy", "{}")]
FINISH = [("finish", '{"answer": "done"}')]


def two_rounds(body: dict[str, Any], number: int) -> dict[str, Any]:
    """Round 0: two look-ups in parallel; round 1: finish."""
    return completion(calls=LOOKUPS if round_of(body) == 0 else FINISH)


def factory(endpoint: Any, **options: Any) -> Any:
    return agent_factory(
        "openai", "mock-model", TRAVEL, client=endpoint.client(), backoff=0.0, **options
    )


def run(make_agent: Any, seeds: Any, **options: Any) -> list[Any]:
    return asyncio.run(run_many("travel", make_agent, seeds, **options))


def test_parallel_tool_calls_are_one_round(endpoint: Any) -> None:
    server = endpoint(two_rounds)
    (trajectory,) = run(factory(server), [0])
    first = trajectory.rounds[0]
    assert first.kind is RoundKind.CALLS
    assert [c.name for c in first.calls] == ["get_profile", "get_travel_policy"]
    assert all(c.error is None for c in first.calls)
    assert trajectory.terminated and len(trajectory.rounds) == 2
    # the results went back as tool messages answering the model's own call ids
    replies = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in replies] == ["call_0", "call_1"]
    assert "home_airport" in replies[0]["content"]
    # tools were sent as function schemas, finish last
    names = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert names[-1] == "finish" and "book_and_pay" in names


def test_plain_content_goes_to_the_simulated_user(endpoint: Any) -> None:
    def script(body: dict[str, Any], number: int) -> dict[str, Any]:
        if round_of(body) == 0:
            return completion("What is your budget for this flight?")
        return completion(calls=FINISH)

    server = endpoint(script)
    (trajectory,) = run(factory(server), [0])
    assert trajectory.rounds[0].kind is RoundKind.SAY
    assert trajectory.rounds[0].user is not None and "budget" in trajectory.rounds[0].user.asked
    assert server.requests[1]["messages"][-1]["role"] == "user"


def test_malformed_json_arguments_are_a_format_error(endpoint: Any) -> None:
    def script(body: dict[str, Any], number: int) -> dict[str, Any]:
        if round_of(body) == 0:
            return completion(
                calls=[("get_city_events", '{"airport": "HND"'), ("get_profile", "{}")]
            )
        return completion(calls=FINISH)

    server = endpoint(script)
    (trajectory,) = run(factory(server), [0])
    bad, good = trajectory.rounds[0].calls
    assert bad.error_kind == "malformed_json" and good.error_kind == "not_run"  # round rejected
    assert trajectory.rounds[0].format_errors == ("malformed_json",)
    error = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "not valid JSON" in error["content"]
    assert trajectory.terminated  # the episode went on after the bad call


def test_refusal_is_an_empty_action_not_a_crash(endpoint: Any) -> None:
    def script(body: dict[str, Any], number: int) -> dict[str, Any]:
        if round_of(body) == 0:
            refusal = completion()
            refusal["choices"][0]["message"]["refusal"] = "I can't help with that."
            return refusal
        return completion(calls=FINISH)

    server = endpoint(script)
    (trajectory,) = run(factory(server), [0])
    first = trajectory.rounds[0]
    assert first.kind is RoundKind.INVALID and first.format_errors == ("empty_action",)
    assert first.meta["refusal"] == "I can't help with that."
    assert server.requests[1]["messages"][-1]["content"].startswith("[environment]")
    assert trajectory.terminated


def test_nameless_tool_call_is_a_format_error(endpoint: Any) -> None:
    def script(body: dict[str, Any], number: int) -> dict[str, Any]:
        return completion(calls=[("", "{}")] if round_of(body) == 0 else FINISH)

    (trajectory,) = run(factory(endpoint(script)), [0])
    assert trajectory.rounds[0].calls[0].error_kind == "unknown_tool"


def test_timeouts_and_server_errors_are_retried(endpoint: Any) -> None:
    failures = {
        0: http.ReadTimeout("slow"),
        1: (503, {"error": {"message": "busy"}}),
        2: (429, {"error": {"message": "rate"}}),
        4: http.ConnectError("dropped"),
    }

    def script(body: dict[str, Any], number: int) -> Any:
        return failures.get(number) or two_rounds(body, number)

    server = endpoint(script)
    (trajectory,) = run(factory(server, retries=4), [0])
    assert trajectory.terminated and len(trajectory.rounds) == 2
    assert len(server.requests) == 6  # 4 failures + 2 answers


def test_retries_give_up_and_the_error_stops_the_run(endpoint: Any) -> None:
    server = endpoint(lambda body, number: (500, {"error": {"message": "down"}}))
    with pytest.raises(openai_error("InternalServerError")):
        run(factory(server, retries=2), [0])
    assert len(server.requests) == 3


def test_a_bad_request_is_not_retried(endpoint: Any) -> None:
    server = endpoint(lambda body, number: (400, {"error": {"message": "unknown field"}}))
    with pytest.raises(openai_error("BadRequestError")):
        run(factory(server), [0])
    assert len(server.requests) == 1


def test_context_overflow_ends_the_episode_as_truncated(endpoint: Any) -> None:
    def script(body: dict[str, Any], number: int) -> Any:
        if round_of(body) == 0:
            return completion(calls=LOOKUPS)
        return (
            400,
            {
                "error": {
                    "message": "This model's maximum context length is 64 tokens",
                    "code": "context_length_exceeded",
                }
            },
        )

    (trajectory,) = run(factory(endpoint(script)), [0])
    assert trajectory.truncated and not trajectory.terminated
    assert trajectory.outcome is not None and len(trajectory.rounds) == 1
    assert trajectory.meta["stop_reason"].startswith("context_length")


def test_usage_logprobs_and_token_ids_are_recorded(endpoint: Any) -> None:
    def script(body: dict[str, Any], number: int) -> dict[str, Any]:
        assert body["logprobs"] is True and body["return_token_ids"] is True
        assert body["temperature"] == 0.7 and body["max_tokens"] == 50
        extra = {
            "choice": {
                "token_ids": [5, 6, 7],
                "logprobs": {
                    "content": [
                        {"token": t, "logprob": -0.5, "bytes": None, "top_logprobs": []}
                        for t in ("a", "b", "c")
                    ]
                },
            },
            "prompt_token_ids": [1, 2, 3, 4],
        }
        return completion(calls=LOOKUPS if round_of(body) == 0 else FINISH, **extra)

    make = factory(endpoint(script), logprobs=True, token_ids=True, temperature=0.7, max_tokens=50)
    (trajectory,) = run(make, [0])
    turn = trajectory.rounds[0].model
    assert turn is not None and turn.usage == Usage(prompt_tokens=11, completion_tokens=7)
    assert turn.token_ids == (5, 6, 7) and turn.prompt_token_ids == (1, 2, 3, 4)
    assert turn.logprobs == (-0.5,) * 3 and turn.tokens == ("a", "b", "c")
    assert trajectory.meta["usage"] == {"prompt_tokens": 22, "completion_tokens": 14}
    assert trajectory.meta["prompt_version"] == PROMPT_VERSION
    assert trajectory.meta["model"] == "mock-model" and trajectory.agent == "openai:mock-model"


def test_samples_per_task_have_their_own_seeds(endpoint: Any) -> None:
    server = endpoint(two_rounds)
    trajectories = run(factory(server, seed=3), [0, 1], samples=3)
    assert [(t.seed, t.run.sample) for t in trajectories] == [
        (s, i) for s in (0, 1) for i in range(3)
    ]
    first_round_seeds = {r["seed"] for r in server.requests if round_of(r) == 0}
    assert len(first_round_seeds) == 6


def test_concurrency_is_limited(endpoint: Any) -> None:
    state = {"now": 0, "most": 0}

    async def handler(request: Any) -> Any:
        state["now"] += 1
        state["most"] = max(state["most"], state["now"])
        for _ in range(5):
            await asyncio.sleep(0)  # let the other episodes reach the endpoint
        state["now"] -= 1
        return await server.handle(request)

    server = endpoint(two_rounds)
    client = server.client()
    client._client._transport = http.MockTransport(handler)  # count what is in flight
    make = agent_factory("openai", "m", TRAVEL, client=client)
    clock = Clock()
    trajectories = run(make, range(8), concurrency=3, clock=clock)
    assert len(trajectories) == 8 and state["most"] == 3
    assert clock.env_seconds > 0 and clock.agent_seconds > 0


def test_interrupted_run_resumes_without_losing_episodes(endpoint: Any, tmp_path: Path) -> None:
    out = tmp_path / "trajectories.jsonl"
    healthy = endpoint(two_rounds)

    def dies_after_three_episodes(body: dict[str, Any], number: int) -> Any:
        if number >= 6:
            return (401, {"error": {"message": "key revoked"}})
        return two_rounds(body, number)

    with pytest.raises(openai_error("AuthenticationError")):
        run(factory(endpoint(dies_after_three_episodes)), range(6), concurrency=1, out=out)
    finished = out.read_bytes()
    assert finished.count(b"\n") == 3
    with out.open("ab") as handle:  # a crash in the middle of writing a line
        handle.write(b'{"version": 1, "domain": "tra')
    trajectories = run(factory(healthy), range(6), concurrency=2, out=out)
    assert [t.seed for t in trajectories] == list(range(6))
    assert out.read_bytes().startswith(finished)  # finished episodes kept byte for byte
    assert sorted(t.seed for t in read_jsonl(out)) == list(range(6))
    assert len([r for r in healthy.requests if round_of(r) == 0]) == 3  # only the missing
    assert run(factory(healthy), range(6), out=out) == trajectories  # nothing left to do


def test_resume_refuses_a_file_of_another_run(endpoint: Any, tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    run(factory(endpoint(two_rounds)), [0], out=out)
    with pytest.raises(ValueError, match="another file"):
        run(factory(endpoint(two_rounds)), [0], out=out, knobs=Knobs(dynamics=False))


def test_resume_refuses_episodes_played_with_other_sampling(endpoint: Any, tmp_path: Path) -> None:
    """The Python API resumes as ``run`` and ``eval`` do (audit 12A F3): an episode is reused
    only when its agent played it with the settings it plays now; and the file it leaves
    is in (seed, sample) order, however the episodes finished."""
    out = tmp_path / "t.jsonl"
    server = endpoint(two_rounds)
    make = factory(server, temperature=0.0)
    run(make, [3, 4], out=out)
    hotter = factory(server, temperature=1.0)
    with pytest.raises(UsageError, match=r"sampling.temperature 0.0 there, 1.0 now"):
        run(hotter, range(5), out=out)
    run(make, range(5), out=out, concurrency=3)
    assert [t.seed for t in read_jsonl(out)] == list(range(5))


def test_blocking_act_works_with_the_plain_runner(endpoint: Any) -> None:
    from stategym.kernel.env import Env

    env = Env("travel")
    trajectory = run_episode(env, factory(endpoint(two_rounds)), 4)
    assert trajectory.terminated and trajectory.rounds[0].model.usage.prompt_tokens == 11
    assert trajectory.meta["backend"] == "openai"


def test_unknown_options_and_kinds_are_rejected() -> None:
    with pytest.raises(TypeError, match="no option"):
        agent_factory("openai", "m", TRAVEL, temprature=0.5)
    with pytest.raises(KeyError):
        agent_factory("anthropic", "m", TRAVEL)
    # runner options and unset (None) options are accepted and ignored
    agent_factory("openai", "m", TRAVEL, concurrency=4, samples=2, temperature=None)


def openai_error(name: str) -> type[Exception]:
    import openai

    error: type[Exception] = getattr(openai, name)
    return error


def test_the_engine_streams_llm_specs_with_their_sample_numbers(endpoint: Any) -> None:
    from stategym.rollout import Agents, EpisodeSpec, stream

    server = endpoint(two_rounds)
    agent, options = "openai:mock-model", (("seed", 1),)
    specs = [
        EpisodeSpec("travel", s, agent, options=options, sample=i)
        for s, i in [(0, 1), (0, 2), (1, 0)]
    ]
    played = list(stream(specs, Agents({"client": server.client()}), concurrency=2))
    assert sorted((t.seed, t.run.sample) for _, t in played) == [(0, 1), (0, 2), (1, 0)]
    assert all(t.agent == agent and t.terminated for _, t in played)
    assert all(spec.key() == trajectory_key(t) for spec, t in played)
    # each sample has its own sampling seed: three first requests, three seeds
    seeds = {r["seed"] for r in server.requests if round_of(r) == 0}
    assert len(seeds) == 3


def test_the_engine_raises_what_stopped_it(endpoint: Any) -> None:
    from stategym.rollout import Agents, EpisodeSpec, stream

    server = endpoint(lambda body, number: (401, {"error": {"message": "no"}}))
    specs = [EpisodeSpec("travel", 0, "openai:m")]
    with pytest.raises(openai_error("AuthenticationError")):
        list(stream(specs, Agents({"client": server.client()})))
