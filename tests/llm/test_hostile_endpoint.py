"""A hostile chat-completions endpoint: whatever it answers, the run plays on or stops in one
line, and every trajectory it writes reads back and replays.

Regressions (audit 9b): the endpoint's metadata was logged as it came, so a ``finish_reason``
of 5 or token ids ``"abc"`` made the file unreadable (F1); trajectories of real LLM runs with
tolerated parse errors failed ``stategym score --verify`` (F2); odd response shapes, odd usage
counts (F3) and lone surrogates (F4) crashed the run with a traceback, after the episode had
finished; and an endpoint that stopped the run did so in a 50-line traceback, an odd model
list crashed the probe, and a plain-text "prompt is too long" was not read as the context
limit (F5).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")
from llm_fixtures import ScriptedEndpoint, completion, http, round_of

import loopback
from stategym.cli import main
from stategym.kernel.env import Env
from stategym.kernel.protocol import MAX_ID
from stategym.kernel.trajectory import RoundKind, Trajectory, dumps, loads, read_jsonl
from stategym.kernel.verify import INVALID_KINDS, verify
from stategym.llm import agent_factory
from stategym.llm.agent import ChatAgent, Reply, Turn
from stategym.llm.batch import run_many
from stategym.registry import get_domain

TRAVEL = get_domain("travel")
LOOKUP = [("get_profile", "{}")]
FINISH = [("finish", '{"answer": "done"}')]
ASK = "What is your budget?"


class RawEndpoint(ScriptedEndpoint):
    """A scripted endpoint whose script answers JSON text as sent: lone surrogate escapes,
    ``NaN``, bodies that are no object (what a ``json=`` response cannot write)."""

    async def handle(self, request: Any) -> Any:
        body = json.loads(request.content)  # the request was sent: it encoded as UTF-8
        self.requests.append(body)
        answer = self.script(body, len(self.requests) - 1)
        status, text = answer if isinstance(answer, tuple) else (200, answer)
        headers = {"content-type": "application/json"}
        return http.Response(status, content=text.encode("utf-8"), headers=headers)


def text_of(value: Any) -> str:
    """JSON text as a careless server writes it (``NaN``, ``Infinity``, ``\\ud800``)."""
    return json.dumps(value)


def reply(calls: list[tuple[str, str]] = LOOKUP, choice: Any = None, **top: Any) -> str:
    """A completion with ``calls``, its first choice's fields and top-level fields replaced."""
    body = completion(calls=calls)
    body["choices"][0].update(choice or {})
    body.update(top)
    return text_of(body)


def message(value: Any) -> str:
    """A completion whose first choice's message is ``value``."""
    return reply(choice={"message": value})


def played(first: str, tmp_path: Path) -> tuple[Trajectory, RawEndpoint]:
    """One episode whose round 0 gets ``first`` and round 1 a finish; the trajectory as the
    file it was written to reads it back (it must read back equal and replay)."""

    def script(body: dict[str, Any], number: int) -> str:
        return first if round_of(body) == 0 else text_of(completion(calls=FINISH))

    server = RawEndpoint(script)
    make = agent_factory("openai", "m", TRAVEL, client=server.client(), backoff=0.0)
    tmp_path.mkdir(exist_ok=True)
    out = tmp_path / "trajectories.jsonl"
    (trajectory,) = asyncio.run(run_many("travel", make, [0], out=out))
    (written,) = read_jsonl(out)
    assert written == trajectory
    assert verify(written) == []
    assert written.terminated and len(server.requests) == 2  # it played on after round 0
    return written, server


METADATA = {
    # F1: metadata of the wrong type was logged, and the file could not be read back
    "finish_reason_number": (reply(choice={"finish_reason": 5}), ["finish_reason"]),
    "finish_reason_object": (reply(choice={"finish_reason": {"a": 1}}), ["finish_reason"]),
    "logprob_token_number": (
        reply(choice={"logprobs": {"content": [{"token": 5, "logprob": -0.1}]}}),
        ["logprobs"],
    ),
    "token_ids_strings": (reply(choice={"token_ids": ["a", "b"]}), ["token_ids"]),
    "token_ids_text": (reply(choice={"token_ids": "abc"}), ["token_ids"]),
    "prompt_ids_mixed": (reply(prompt_token_ids=[1.5, "x"]), ["prompt_token_ids"]),
    "format_errors_text": (
        reply(choice={"stategym": {"format_errors": "abc"}}),
        ["stategym.format_errors"],
    ),
    # F3: shapes that crashed the run
    "usage_text": (reply(usage="lots"), ["usage"]),
    "usage_list": (reply(usage=[1, 2]), ["usage"]),
    "usage_count_text": (
        reply(usage={"prompt_tokens": "many", "completion_tokens": 1}),
        ["prompt_tokens"],
    ),
    "usage_infinite": (
        reply(usage={"prompt_tokens": float("inf"), "completion_tokens": 1}),
        ["prompt_tokens"],
    ),
    "usage_nan": (
        reply(usage={"prompt_tokens": float("nan"), "completion_tokens": 1}),
        ["prompt_tokens"],
    ),
    "usage_huge_and_fractional": (
        reply(usage={"prompt_tokens": 1.5, "completion_tokens": 1e30}),
        ["prompt_tokens", "completion_tokens"],
    ),
    "usage_beyond_64_bits": (
        reply(usage={"prompt_tokens": 2**64, "completion_tokens": -5}),
        ["prompt_tokens", "completion_tokens"],
    ),
    "logprobs_text": (reply(choice={"logprobs": "abc"}), ["logprobs"]),
    "logprobs_not_objects": (reply(choice={"logprobs": {"content": [1, 2]}}), ["logprobs"]),
    "logprob_nan": (
        reply(choice={"logprobs": {"content": [{"token": "a", "logprob": float("nan")}]}}),
        ["logprobs"],
    ),
    "token_ids_number": (reply(choice={"token_ids": 5}), ["token_ids"]),
    "extension_list": (reply(choice={"stategym": [1]}), ["stategym"]),
    # audit 10b F7: a kind the parser does not tolerate would be a format error replay cannot
    # give (verify refuses it), so the endpoint cannot add one
    "format_errors_other_kind": (
        reply(choice={"stategym": {"format_errors": ["unclosed_tool_call", "wrong_type"]}}),
        ["stategym.format_errors"],
    ),
    "refusal_number": (reply(choice={"message": {"content": None, "refusal": 5}}), ["refusal"]),
}


@pytest.mark.parametrize("case", sorted(METADATA))
def test_metadata_of_the_wrong_type_is_dropped_and_named(case: str, tmp_path: Path) -> None:
    body, dropped = METADATA[case]
    trajectory, _ = played(body, tmp_path)
    first = trajectory.rounds[0]
    assert first.meta["dropped"] == dropped
    turn = first.model
    assert turn is not None
    assert turn.finish_reason is None or isinstance(turn.finish_reason, str)
    assert turn.usage is not None
    for count in (turn.usage.prompt_tokens, turn.usage.completion_tokens):
        assert count is None or (type(count) is int and 0 <= count < 2**63)
    assert turn.token_ids is None and turn.prompt_token_ids is None and turn.logprobs is None
    assert all(type(n) is int for n in trajectory.meta["usage"].values())
    if case != "refusal_number":
        assert first.kind is RoundKind.CALLS and first.format_errors == ()


SHAPES = {
    # F3: a message in a shape the core cannot read is the round's format error
    "tool_calls_object": (message({"content": None, "tool_calls": {"a": 1}}), []),
    "tool_calls_text": (message({"content": None, "tool_calls": "get_profile()"}), []),
    "tool_call_text": (message({"content": None, "tool_calls": ["x"]}), []),
    "tool_call_null": (message({"content": None, "tool_calls": [None]}), []),
    "function_text": (
        message({"content": None, "tool_calls": [{"id": "c0", "function": "get_profile"}]}),
        [],
    ),
    "message_text": (message("hi"), ["message"]),
    "choices_object": (text_of({"id": "x", "choices": {"0": 1}}), ["choices"]),
    "choice_text": (text_of({"id": "x", "choices": ["hello"]}), ["choices"]),
    "content_number": (message({"content": 42}), []),
}


@pytest.mark.parametrize("case", sorted(SHAPES))
def test_an_unreadable_reply_is_the_rounds_format_error(case: str, tmp_path: Path) -> None:
    body, dropped = SHAPES[case]
    trajectory, server = played(body, tmp_path)
    first = trajectory.rounds[0]
    assert first.kind is RoundKind.INVALID
    assert len(first.format_errors) == 1 and first.format_errors[0] in INVALID_KINDS
    assert first.meta.get("dropped", []) == dropped
    # the model was told, in the conversation it continued
    assert server.requests[1]["messages"][-1]["content"].startswith("[environment]")


LONE = "\ud800"
CLEAN = "\ufffd"


def test_lone_surrogates_in_a_reply_are_cleaned_as_agent_text_is(tmp_path: Path) -> None:
    """F4: content, a tool name, a call id and a finish reason, each with a lone surrogate."""
    said, _ = played(reply(calls=[], choice={"message": {"content": ASK + LONE}}), tmp_path / "a")
    assert said.rounds[0].kind is RoundKind.SAY and said.rounds[0].say == ASK + CLEAN

    named, _ = played(reply(calls=[("get_" + LONE, "{}")]), tmp_path / "b")
    (call,) = named.rounds[0].calls
    assert call.name == "get_" + CLEAN and call.error_kind == "unknown_tool"

    body = completion(calls=LOOKUP)
    body["choices"][0]["message"]["tool_calls"][0]["id"] = "\udc00"
    body["choices"][0]["finish_reason"] = LONE
    marked, server = played(text_of(body), tmp_path / "c")
    (call,) = marked.rounds[0].calls
    assert call.id == CLEAN and call.error is None
    assert marked.rounds[0].model is not None and marked.rounds[0].model.finish_reason == CLEAN
    assert server.requests[1]["messages"][-2]["tool_calls"][0]["id"] == CLEAN


def test_a_call_id_the_log_cannot_keep_is_renamed_in_the_next_request(tmp_path: Path) -> None:
    """Regression (stop 59): an id over MAX_ID characters went back to the endpoint in the
    assistant message while the tool result answered the environment's ``c0_0``, a request
    that answers no call of the message before it (chat endpoints refuse it)."""
    body = completion(calls=LOOKUP)
    body["choices"][0]["message"]["tool_calls"][0]["id"] = "call_" + "x" * MAX_ID
    trajectory, server = played(text_of(body), tmp_path)
    assert trajectory.rounds[0].calls[0].id == "c0_0"
    *_, sent, result = server.requests[1]["messages"]
    assert [call["id"] for call in sent["tool_calls"]] == ["c0_0"]
    assert result["role"] == "tool" and result["tool_call_id"] == "c0_0"


def test_a_lone_surrogate_inside_argument_text_is_the_environments_to_judge(
    tmp_path: Path,
) -> None:
    """Guard (held before the fix too): the argument text is decoded by the environment."""
    arguments = json.dumps({"airport": LONE})  # the escape, inside the arguments' text
    trajectory, _ = played(reply(calls=[("get_city_events", arguments)]), tmp_path)
    assert trajectory.rounds[0].kind is RoundKind.CALLS


def tolerant(body: dict[str, Any], number: int) -> dict[str, Any]:
    """Every kind of round, each with a parse error the server tolerated (as ``stategym
    serve`` reports them), then a finish."""
    rounds: list[tuple[dict[str, Any], list[str]]] = [
        (completion(calls=[*LOOKUP, ("get_travel_policy", '{"a":')]), ["repaired_json"]),
        (completion(ASK), ["unclosed_tool_call"]),
        (completion(None), ["unclosed_tool_call"]),
        (completion(calls=FINISH), []),
    ]
    answer, tolerated = rounds[round_of(body)]
    answer["choices"][0]["stategym"] = {"format_errors": tolerated}
    return answer


@pytest.fixture
def tolerated(endpoint: Any) -> Trajectory:
    make = agent_factory("openai", "m", TRAVEL, client=endpoint(tolerant).client())
    (trajectory,) = asyncio.run(run_many("travel", make, [0]))
    return trajectory


def test_trajectories_with_tolerated_parse_errors_verify(tolerated: Trajectory) -> None:
    """F2: the tolerated errors count as format errors and are left out of the comparison."""
    kinds = [r.kind for r in tolerated.rounds]
    assert kinds == [RoundKind.CALLS, RoundKind.SAY, RoundKind.INVALID, RoundKind.CALLS]
    assert [r.format_errors for r in tolerated.rounds] == [
        ("malformed_json", "repaired_json"),
        ("unclosed_tool_call",),
        ("empty_action", "unclosed_tool_call"),
        (),
    ]
    assert [r.meta.get("format_errors") for r in tolerated.rounds] == [
        ["repaired_json"],
        ["unclosed_tool_call"],
        ["unclosed_tool_call"],
        None,
    ]
    assert verify(tolerated) == []
    assert verify(loads(dumps(tolerated))) == []


def edited(trajectory: Trajectory, index: int, errors: tuple[str, ...], meta: Any) -> Trajectory:
    rounds = list(trajectory.rounds)
    record = rounds[index]
    rounds[index] = replace(record, format_errors=errors, meta={**record.meta, **meta})
    return replace(trajectory, rounds=tuple(rounds))


def test_a_claim_of_tolerated_errors_hides_no_real_difference(tolerated: Trajectory) -> None:
    """Only a trailing run equal to ``meta.format_errors`` is left out, nothing else."""
    # the environment's error edited away, the tolerated tail kept
    gone = edited(tolerated, 0, ("repaired_json",), {})
    assert verify(gone)[0].startswith("round 0: format_errors")
    # the whole list claimed as tolerated: the environment's part is then empty, and differs
    claimed = {"format_errors": ["malformed_json", "repaired_json"]}
    assert verify(edited(tolerated, 0, ("malformed_json", "repaired_json"), claimed))
    # a claim that is not the list's tail is no claim: the list is compared whole
    assert verify(edited(tolerated, 1, ("unclosed_tool_call",), {"format_errors": ["x"]}))
    # an invalid round still logs exactly one kind of its own
    assert verify(
        edited(tolerated, 2, ("empty_action", "unclosed_tool_call"), {"format_errors": []})
    )


def test_real_hf_runs_verify(tiny_model: Path, tmp_path: Path) -> None:
    """F2 through the real pipeline: ``stategym run --agent hf:PATH`` (replies cut short, so
    calls are left unclosed and tolerated), then ``stategym score --verify``."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out, index = tmp_path / "run", tmp_path / "index.sqlite"
    command = ["run", "--agent", f"hf:{tiny_model}", "--episodes", "2", "--max-tokens", "24"]
    assert main([*command, "--out", str(out), "--index", str(index)]) == 0
    trajectories = read_jsonl(out / "trajectories.jsonl")
    tolerated = [r for t in trajectories for r in t.rounds if r.meta.get("format_errors")]
    assert tolerated, "the test needs rounds with tolerated parse errors"
    assert main(["score", str(out), "--verify"]) == 0


# F5: errors that stop a run, through the command line against a real loopback server

MODELS = text_of({"object": "list", "data": [{"id": "m", "object": "model"}]})
FINISHED = text_of(completion(calls=FINISH))


def run_command(url: str, tmp_path: Path, episodes: int = 2) -> int:
    """``stategym run --agent openai:m`` against ``url``, one episode at a time."""
    out, index = tmp_path / "run", tmp_path / "index.sqlite"
    argv = ["run", "--agent", "openai:m", "--base-url", url, "--episodes", str(episodes)]
    return main([*argv, "--concurrency", "1", "--out", str(out), "--index", str(index)])


STOPPING = {
    "html_400": ((400, "<html>bad</html>"), "400 Bad Request: <html>bad</html>"),
    "json_list_400": ((400, "[1,2,3]"), "400 Bad Request: [1,2,3]"),
    "413": ((413, "too large\nsecond line"), "413 Request Entity Too Large: too large"),
    "404": ((404, '{"error": {"message": "no model"}}'), "404 Not Found"),
    "html_200": ((200, "<html>oops</html>"), "no JSON, not a chat completion: <html>oops</html>"),
    "empty_200": ((200, ""), "no JSON, not a chat completion: (an empty body)"),
    "list_200": ((200, "[1, 2]"), "JSON that is no object, not a chat completion: [1, 2]"),
    "null_200": ((200, "null"), "JSON that is no object, not a chat completion: null"),
}


@pytest.mark.parametrize("case", sorted(STOPPING))
def test_an_endpoint_that_stops_the_run_says_so_in_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first episode finishes (one request), the second's request is refused: one line,
    status 2, and the finished episode on disk."""
    failure, said = STOPPING[case]

    def answer(request: str, _: bytes, number: int) -> tuple[int, str]:
        if request.startswith("GET"):
            return 200, MODELS
        return (200, FINISHED) if number == 0 else failure

    with loopback.answering(answer) as url:
        assert run_command(url, tmp_path) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stategym: error: ")
    assert said in err and "Traceback" not in err
    (finished,) = read_jsonl(tmp_path / "run" / "trajectories.jsonl")
    assert finished.terminated and verify(finished) == []


@pytest.mark.parametrize(
    "listing",
    [
        {"object": "list", "data": [{"object": "model"}]},  # entries without an id
        {"object": "list", "data": [{"id": 5}]},
        {"object": "list", "data": "m"},
        {"object": "list", "data": None},
        [1, 2],
        "not json",
    ],
)
def test_a_model_list_it_cannot_read_passes_as_not_implemented(
    listing: Any, tmp_path: Path
) -> None:
    models = listing if isinstance(listing, str) else text_of(listing)

    def answer(request: str, _: bytes, number: int) -> tuple[int, str]:
        return (200, models) if request.startswith("GET") else (200, FINISHED)

    with loopback.answering(answer) as url:
        assert run_command(url, tmp_path, episodes=1) == 0


def test_usage_totals_past_the_logs_range_are_dropped_not_a_crash(tmp_path: Path) -> None:
    """Audit 10b F4: each count (``2**63 - 1``) is valid, their sum over three rounds is past
    the log's 64 bits; the run died in the read-back check with a traceback, and the episode
    was never written. Now the total is ``None``, named in ``meta.dropped``."""
    big = 2**63 - 1

    def answer(request: str, body: bytes, number: int) -> tuple[int, str]:
        if request.startswith("GET"):
            return 200, MODELS
        calls = FINISH if round_of(json.loads(body)) >= 2 else LOOKUP
        answered = completion(calls=calls)
        answered["usage"] = {"prompt_tokens": big, "completion_tokens": 1}
        return 200, text_of(answered)

    with loopback.answering(answer) as url:
        assert run_command(url, tmp_path, episodes=1) == 0
    (trajectory,) = read_jsonl(tmp_path / "run" / "trajectories.jsonl")
    assert len(trajectory.rounds) == 3 and verify(trajectory) == []
    assert trajectory.meta["usage"] == {"prompt_tokens": None, "completion_tokens": 3}
    assert trajectory.meta["dropped"] == ["usage.prompt_tokens"]
    assert all(
        r.model is not None and r.model.usage.prompt_tokens == big for r in trajectory.rounds
    )


def test_a_plain_text_context_refusal_ends_the_episode_as_truncated(tmp_path: Path) -> None:
    def script(body: dict[str, Any], number: int) -> Any:
        if round_of(body) == 0:
            return text_of(completion(calls=LOOKUP))
        return 400, "prompt is too long: 70000 tokens > 65536 maximum"

    server = RawEndpoint(script)
    make = agent_factory("openai", "m", TRAVEL, client=server.client(), backoff=0.0)
    (trajectory,) = asyncio.run(run_many("travel", make, [0]))
    assert trajectory.truncated and len(trajectory.rounds) == 1
    assert trajectory.meta["stop_reason"].startswith("context_length")


def test_an_endpoint_failing_after_its_retries_is_one_line(endpoint: Any) -> None:
    from stategym.cli import endpoint_failure

    server = endpoint(lambda body, number: (503, {"error": {"message": "busy"}}))
    make = agent_factory("openai", "m", TRAVEL, client=server.client(), backoff=0.0, retries=2)
    with pytest.raises(Exception) as stopped:
        asyncio.run(run_many("travel", make, [0]))
    line = endpoint_failure(stopped.value)
    assert line is not None and "\n" not in line
    assert "503 Service Unavailable" in line and "gave up after 2 retries" in line
    assert endpoint_failure(ValueError("a bug")) is None  # any other error keeps its traceback


class Careless:
    """A backend that reports a round's metadata in types the log cannot read back."""

    def describe(self) -> dict[str, Any]:
        return {"backend": "careless", "model": "careless"}

    def complete_sync(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        finish = completion(calls=FINISH)["choices"][0]["message"]
        return Reply(finish, {"finish_reason": {"a": 1}, "completion_token_ids": ["a"]})

    async def complete(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        return self.complete_sync(messages, tools, turn)


def test_a_trajectory_that_would_not_read_back_is_never_written() -> None:
    """F1's guarantee beyond the ``openai:`` reader: ``annotate`` checks, once per episode,
    that the line reads back, and a backend that let a mistyped value through is a bug."""
    env = Env("travel")
    observation, _ = env.reset(seed=0)
    agent = ChatAgent("careless", Careless(), env.domain, env.task)
    env.step(agent.act(observation))
    with pytest.raises(RuntimeError, match="would not read back"):
        agent.annotate(env.trajectory)
