"""The OpenEnv adapter through the wire: OpenEnv's own server, run by uvicorn in a thread on a
free port of 127.0.0.1, driven by OpenEnv's WebSocket clients (:class:`StategymClient`, and
OpenEnv's ``GenericEnvClient`` for payloads the typed client cannot write).

Every episode played through the server is compared with the same episode played here, in
this process, without OpenEnv: the same trajectory line, state key and scorecard.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

pytest.importorskip("openenv", reason="the openenv extra is not installed")

from openenv.core.generic_client import GenericEnvClient

from stategym.adapters.openenv import (
    MAX_FRAME_DEPTH,
    NO_EPISODE,
    Call,
    Scores,
    StategymAction,
    StategymClient,
    build_app,
    main,
    served,
)
from stategym.agents import resolve
from stategym.kernel.env import Env
from stategym.kernel.errors import UnknownDomainError
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundKind, Trajectory, dumps, loads
from stategym.metrics import score
from stategym.registry import all_domains, cached_task, get_domain
from stategym.rollout.play import play

DOMAINS = [*sorted(all_domains()), "synth:chain2+fanout3"]
TWO = ("get_profile", "get_travel_policy")
"""Two travel reads of one tick each (the expert makes them in one round with a third)."""


@pytest.fixture(scope="module")
def travel() -> Iterator[str]:
    with served(build_app("travel", max_sessions=8)) as url:
        yield url


def client(url: str) -> Any:
    return StategymClient(base_url=url).sync()


def local_expert(domain: str, seed: int) -> Trajectory:
    env = Env(domain)
    observation, _ = env.reset(seed=seed)
    return play(env, resolve(get_domain(domain), "expert")(env.task), observation)


def wire_expert(env: Any, domain: str, seed: int) -> tuple[Any, list[float]]:
    """The expert's episode through ``env`` (a connected client): the last result, the rewards."""
    result = env.reset(seed=seed, agent="expert")
    assert result.observation.round == -1 and result.observation.tools
    agent = resolve(get_domain(domain), "expert")(task(domain, seed))
    rewards = []
    while not result.done:
        assert result.observation.scores is None  # filled only once the episode has ended
        result = env.step(StategymAction.of(agent.act(result.observation.to_stategym())))
        rewards.append(result.reward)
    return result, rewards


def task(domain: str, seed: int) -> Task:
    return cached_task(domain, seed, Knobs())


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_expert_scores_through_the_wire_what_it_scores_here(domain: str) -> None:
    seed = 2
    local = local_expert(domain, seed)
    card = score(local, task(domain, seed))
    with served(build_app(domain)) as url, client(url) as env:
        last, rewards = wire_expert(env, domain, seed)
        state = env.state()
    assert card.composite == 1.0
    assert last.observation.scores == Scores.of(card)
    assert state.trajectory == dumps(local).decode() and state.state_key == local.digest
    assert state.step_count == len(local.rounds) == len(rewards) and state.done
    assert sum(rewards) == pytest.approx(card.composite)  # the dense rewards sum to R


def test_a_parallel_round_is_one_round(travel: str) -> None:
    with client(travel) as env:
        env.reset(seed=3)
        action = StategymAction(calls=[Call(name=n, id=f"p{i}") for i, n in enumerate(TWO)])
        observation = env.step(action).observation
        trajectory = loads(env.state().trajectory)
    assert observation.round == 0 and [r.call_id for r in observation.results] == ["p0", "p1"]
    assert all(r.error is None for r in observation.results)
    (first,) = trajectory.rounds
    assert first.kind is RoundKind.CALLS and [c.name for c in first.calls] == list(TWO)
    assert first.latency == 1  # the batch costs its slowest call (1 tick), not the sum (2)


def test_a_message_goes_to_the_simulated_user(travel: str) -> None:
    with client(travel) as env:
        env.reset(seed=3)
        observation = env.step(StategymAction(message="What is your budget?")).observation
        (record,) = loads(env.state().trajectory).rounds
    assert record.kind is RoundKind.SAY and record.user is not None
    assert observation.user == record.user.reply and observation.user


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        (Call(name="book_everything"), "unknown_tool"),
        (Call(name="get_city_events", arguments={"airport": 7}), "wrong_type"),
        (Call(name="get_city_events", arguments="{not json"), "malformed_json"),
        (Call(name="get_city_events"), "missing_argument"),
    ],
)
def test_a_bad_call_is_stategyms_format_error(travel: str, call: Call, kind: str) -> None:
    with client(travel) as env:
        env.reset(seed=3)
        result = env.step(StategymAction(calls=[call]))
        after = env.step(StategymAction(calls=[Call(name="get_profile")])).observation
        trajectory = loads(env.state().trajectory)
    (bad,) = result.observation.results
    assert bad.error_kind == kind and bad.error and not result.done
    assert result.observation.format_errors == [kind]
    assert trajectory.rounds[0].format_errors == (kind,)
    assert after.results[0].error is None  # the session plays on


def test_an_empty_action_is_an_invalid_round(travel: str) -> None:
    with client(travel) as env:
        env.reset(seed=3)
        observation = env.step(StategymAction()).observation
        (record,) = loads(env.state().trajectory).rounds
    assert observation.format_errors == ["empty_action"] and observation.error
    assert record.kind is RoundKind.INVALID


@pytest.mark.parametrize(
    "payload",
    [
        {"calls": 5},
        {"calls": [{"name": 3}]},
        {"calls": [{"name": "get_profile"}], "message": "hi"},
        {"say": "hello"},
    ],
)
def test_a_payload_outside_the_schema_is_refused_and_the_session_goes_on(
    travel: str, payload: dict[str, Any]
) -> None:
    with GenericEnvClient(base_url=travel).sync() as env:
        env.reset(seed=3)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            env.step(payload)
        after = env.step({"calls": [{"name": "get_profile"}]})
        state = env.state()
    assert after.observation["results"][0]["error"] is None
    assert state["step_count"] == 1  # the refused payload played no round


def test_a_bad_reset_is_refused_and_the_session_goes_on(travel: str) -> None:
    with client(travel) as env:
        with pytest.raises(RuntimeError, match="unknown reset options: sede"):
            env.reset(sede=3)
        with pytest.raises(RuntimeError, match="seed must be an integer"):
            env.reset(seed="3")
        observation = env.step(StategymAction(calls=[Call(name="get_profile")])).observation
        assert observation.error == NO_EPISODE and observation.done
        assert env.reset(seed=3).observation.task_id.startswith("travel/3/")


@pytest.mark.parametrize(
    "options",
    [{"agent": 5}, {"agent": None}, {"agent": {"name": "x"}}, {"episode_id": {"a": 1}}],
    ids=["agent-int", "agent-null", "agent-object", "episode_id-object"],
)
def test_a_reset_option_of_the_wrong_type_is_refused_and_the_log_reads_back(
    travel: str, options: dict[str, Any]
) -> None:
    """Accepted, such a reset made a trajectory ``loads`` refused, or a ``state`` that
    failed validation for the rest of the session."""
    (name,) = options
    with client(travel) as env:
        env.reset(seed=3, agent="expert", episode_id="e3")
        env.step(StategymAction(message="What is your budget?"))
        with pytest.raises(RuntimeError, match=f"{name} must be a string"):
            env.reset(seed=4, **options)
        state = env.state()  # the episode in play is untouched
    assert state.episode_id == "e3" and state.step_count == 1
    trajectory = loads(str(state.trajectory))
    assert trajectory.agent == "expert" and trajectory.seed == 3


def test_after_the_end_a_step_says_so_and_keeps_the_scores(travel: str) -> None:
    with client(travel) as env:
        last, _ = wire_expert(env, "travel", 3)
        again = env.step(StategymAction(message="hello?")).observation
        rounds = env.state().step_count
    assert again.error == "the episode is over" and again.done
    assert again.scores == last.observation.scores and rounds == len(
        local_expert("travel", 3).rounds
    )


def test_each_session_has_its_own_episode(travel: str) -> None:
    def episode(seed: int) -> str:
        with client(travel) as env:
            wire_expert(env, "travel", seed)
            return str(env.state().trajectory)

    seeds = [0, 1, 0, 4]  # two sessions on one task share its read-only world base
    with ThreadPoolExecutor(len(seeds)) as pool:  # played at the same time, one thread each
        lines = list(pool.map(episode, seeds))
    assert lines == [dumps(local_expert("travel", seed)).decode() for seed in seeds]


def test_sessions_beyond_the_limit_are_refused() -> None:
    from websockets.sync.client import connect

    with served(build_app("bank", max_sessions=1)) as url, client(url) as first:
        first.reset(seed=0)
        # the refusal is sent as the socket opens (the typed client may find it closed)
        with connect(url.replace("http", "ws", 1) + "/ws") as second:
            refusal = json.loads(second.recv(timeout=30))
        assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED"
        assert first.step(StategymAction(message="hello")).observation.round == 0


def test_an_http_step_has_no_episode(travel: str) -> None:
    import httpx

    response = httpx.post(f"{travel}/step", json={"action": {"message": "hello"}})
    assert response.status_code == 200
    assert response.json()["observation"]["error"] == NO_EPISODE
    schema = httpx.get(f"{travel}/schema").json()
    assert {"calls", "message"} <= set(schema["action"]["properties"])
    assert "scores" in schema["observation"]["properties"]


def test_the_entry_point_refuses_an_unknown_domain() -> None:
    with pytest.raises(UnknownDomainError):
        main(["--domain", "atlantis", "--port", "0"])


def test_the_entry_point_serves_its_domain(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    ran: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **where: ran.update(app=app, **where))
    main(["--domain", "bank", "--knobs", "dynamics=off", "--port", "8123", "--max-sessions", "2"])
    assert (ran["host"], ran["port"]) == ("127.0.0.1", 8123)
    with served(ran["app"]) as url, client(url) as env:
        task_id = env.reset(seed=1).observation.task_id
    assert task_id.startswith("bank/1/") and "dynamics=off" in task_id


def test_an_episode_cut_by_the_round_limit_is_truncated_and_scored(travel: str) -> None:
    with client(travel) as env:
        result = env.reset(seed=3)
        while not result.done:
            result = env.step(StategymAction(calls=[Call(name="get_profile")]))
        state = env.state()
    trajectory = loads(state.trajectory)
    assert result.observation.truncated and trajectory.truncated and not trajectory.terminated
    assert state.step_count == task("travel", 3).max_rounds
    assert result.observation.scores == Scores.of(score(trajectory, task("travel", 3)))
    assert result.observation.scores.composite < 1.0


def _deep(levels: int) -> str:
    """An empty JSON array nested ``levels`` deep."""
    return "[" * levels + "]" * levels


def _step(data: str) -> str:
    """A step frame whose ``data`` is the JSON text ``data``."""
    return '{"type":"step","data":' + data + "}"


def _profile_with(value: str) -> str:
    """A step frame calling ``get_profile`` with ``{"a": value}`` (``value``: JSON text)."""
    return _step('{"calls":[{"name":"get_profile","arguments":{"a":' + value + "}}]}")


FRAMES: dict[str, str | bytes] = {
    "array": "[1,2]",
    "number": "7",
    "null": "null",
    "string": '"step"',
    "arguments-5000-deep": _profile_with(_deep(5000)),
    "frame-5000-deep": _deep(5000),
    "integer-of-5000-digits": _profile_with("9" * 5000),
    "refused-with-a-surrogate": _step('{"message":["\\ud800"]}'),
    "refused-with-a-surrogate-key": '{"type":"state","\\ud800":1}',
    "refused-with-a-deep-input": _step('{"message":' + _deep(300) + "}"),
    "binary": b'{"type":"state"}',
}


@pytest.mark.parametrize("frame", FRAMES.values(), ids=FRAMES.keys())
def test_no_frame_ends_a_session(travel: str, frame: str | bytes) -> None:
    """Each of these ended the session (``SESSION_ERROR``, socket closed, episode lost) in
    openenv-core 0.3.0's route: now OpenEnv's error reply, and the episode plays on."""
    from websockets.sync.client import connect

    def send(ws: Any, message: str | bytes) -> dict[str, Any]:
        ws.send(message)
        reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
        return reply

    with connect(travel.replace("http", "ws", 1) + "/ws", max_size=None) as ws:
        send(ws, json.dumps({"type": "reset", "data": {"seed": 3}}))
        refused = send(ws, frame)
        after = send(ws, json.dumps({"type": "step", "data": {"calls": [{"name": "get_profile"}]}}))
        state = send(ws, json.dumps({"type": "state"}))
    assert refused["type"] == "error"
    assert refused["data"]["code"] in ("VALIDATION_ERROR", "INVALID_JSON")
    assert after["data"]["observation"]["results"][0]["error"] is None
    assert state["data"]["step_count"] == 1  # the refused frame played no round


def test_arguments_nested_within_the_frame_bound_are_stategyms_format_error(travel: str) -> None:
    """A guard: the frame bound refuses only what OpenEnv could not decode; deep arguments
    below it still reach stategym, whose own limit logs a ``too_large`` round."""
    from websockets.sync.client import connect

    assert MAX_FRAME_DEPTH > 500 + 5  # the frame holds the arguments 5 levels down
    with connect(travel.replace("http", "ws", 1) + "/ws", max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 3}}))
        ws.recv(timeout=30)
        ws.send(_profile_with(_deep(500)))
        observation = json.loads(ws.recv(timeout=30))["data"]["observation"]
    assert observation["format_errors"] == ["too_large"]


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"seed": 3, "foo": 1}, "unknown reset options: foo"),
        ({"seed": 3, "agent": 5}, "agent must be a string, got int"),
        ({"seed": 2**64}, "a seed must be in [0, 2**64), got 18446744073709551616"),
    ],
    ids=["unknown-option", "agent-int", "seed-2**64"],
)
def test_a_bad_http_reset_is_a_422_with_its_reason(
    travel: str, body: dict[str, Any], reason: str
) -> None:
    """It was a 500, with the whole traceback in the server's log."""
    import httpx

    response = httpx.post(f"{travel}/reset", json=body)
    assert (response.status_code, response.json()) == (422, {"detail": reason})


@pytest.mark.parametrize("option", ["agent", "episode_id"])
def test_a_reset_name_with_a_lone_surrogate_is_refused_and_state_reads_back(
    travel: str, option: str
) -> None:
    """Accepted, it made every later ``state`` of the session fail to be written."""
    with GenericEnvClient(base_url=travel).sync() as env:
        env.reset(seed=3)
        with pytest.raises(RuntimeError, match=f"{option} must be valid Unicode text"):
            env.reset(seed=4, **{option: "a\ud800"})
        state = env.state()
    assert loads(state["trajectory"]).seed == 3


# Audit 10b F5: hostile HTTP bodies were a 500 and a traceback (the server kept serving)
HOSTILE_BODIES = {
    # a "self" key: OpenEnv passes every key to a ``**options`` signature
    "reset-self": ("/reset", '{"self": 1}'),
    "reset-seed-and-self": ("/reset", '{"seed": 3, "self": 1}'),
    # FastAPI's validation error echoed what JSON cannot write
    "reset-seed-surrogate": ("/reset", '{"seed": "\\ud800"}'),
    "reset-surrogate-key": ("/reset", '{"seed": 3, "\\ud800": 1}'),
    "reset-seed-nan": ("/reset", '{"seed": NaN}'),
    # OpenEnv's refused /step action: HTTPException(422, errors with their inputs)
    "step-message-surrogate": ("/step", '{"action": {"message": ["\\ud800"]}}'),
}


@pytest.mark.parametrize("case", HOSTILE_BODIES.values(), ids=HOSTILE_BODIES.keys())
def test_a_hostile_http_body_is_a_422_with_a_readable_reason(
    travel: str, case: tuple[str, str]
) -> None:
    import httpx

    path, body = case
    headers = {"content-type": "application/json"}
    response = httpx.post(f"{travel}{path}", content=body.encode(), headers=headers)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    if isinstance(detail, str):
        assert detail == "unknown reset options: self"
    else:
        assert detail and all(set(e) == {"type", "loc", "msg"} for e in detail)
    assert response.content.isascii()


def test_a_self_key_in_an_http_step_is_an_option_like_any_other(travel: str) -> None:
    """It was a 500 (``step_async() got multiple values for argument 'self'``)."""
    import httpx

    body = {"action": {"calls": [{"name": "get_profile"}]}, "self": 1}
    response = httpx.post(f"{travel}/step", json=body)
    assert response.status_code == 200
    assert response.json()["observation"]["error"] == NO_EPISODE


def test_a_self_reset_option_over_the_websocket_is_refused_with_its_reason(travel: str) -> None:
    """It was ``EXECUTION_ERROR`` with Python's internal ``TypeError`` message."""
    from websockets.sync.client import connect

    def send(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
        ws.send(json.dumps(message))
        reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
        return reply

    with connect(travel.replace("http", "ws", 1) + "/ws") as ws:
        refused = send(ws, {"type": "reset", "data": {"seed": 3, "self": 1}})
        after = send(ws, {"type": "reset", "data": {"seed": 3}})
    assert refused["data"]["message"] == "unknown reset options: self"
    assert after["data"]["observation"]["task_id"].startswith("travel/3/")


def test_other_http_refusals_keep_their_status_and_headers(travel: str) -> None:
    """Guard (held before the fix too): the app's ``HTTPException`` handler keeps FastAPI's
    answers to an unknown path, a wrong method and a body it cannot parse."""
    import httpx

    missing = httpx.get(f"{travel}/nowhere")
    wrong = httpx.get(f"{travel}/reset")
    deep = httpx.post(
        f"{travel}/reset",
        content='{"x": ' + _deep(5000) + "}",
        headers={"content-type": "application/json"},
    )
    assert (missing.status_code, missing.json()) == (404, {"detail": "Not Found"})
    assert (wrong.status_code, wrong.headers["allow"]) == (405, "POST")
    assert deep.status_code == 400 and deep.json()["detail"]


def test_the_frame_size_limit_is_the_documented_one(
    travel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Audit 10b F6: a frame over uvicorn's ``ws_max_size`` closes the socket (1009) before
    any ASGI layer sees it, and the module said no frame ends a session. The limit is now
    stated (``MAX_FRAME_BYTES``), passed by the entry point, and the default ``served`` runs."""
    import uvicorn
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    from stategym.adapters import openenv

    assert uvicorn.Config(build_app("travel")).ws_max_size == openenv.MAX_FRAME_BYTES
    ran: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **where: ran.update(where))
    main(["--domain", "travel"])
    assert ran["ws_max_size"] == openenv.MAX_FRAME_BYTES
    with connect(travel.replace("http", "ws", 1) + "/ws", max_size=None) as ws:
        ws.send(_step('{"message":"' + "a" * openenv.MAX_FRAME_BYTES + '"}'))
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
