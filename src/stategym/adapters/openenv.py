"""OpenEnv: a stategym domain served over OpenEnv's HTTP/WebSocket protocol, and its client.

Supported: ``openenv-core>=0.3,<0.4`` (tested: 0.3.0). The app is OpenEnv's own
(``create_fastapi_app``); :class:`StategymClient` is an ``EnvClient`` (WebSocket).

How stategym's protocol maps onto OpenEnv's:

- **One action is one round.** :class:`StategymAction` holds either ``calls`` (played as one
  :class:`~stategym.kernel.protocol.CallBatch`, so parallel calls run together) or a
  ``message`` to the simulated user (a :class:`~stategym.kernel.protocol.Say`); neither is
  stategym's ``empty_action``, both is refused by the schema.
- **The observation is stategym's, structured**: the round, the clock, each call's result
  or error, the user's words and the round's error, exactly what
  :class:`~stategym.kernel.protocol.Observation` holds. :meth:`StategymObservation.to_stategym`
  rebuilds it on the client, where a renderer (:func:`stategym.rendering.make_renderer`)
  turns it into a model's messages. OpenEnv drops ``metadata`` on the wire, so the format
  errors, ``truncated`` and the :class:`Scores` (filled once the episode ends) are fields.
- **The reward** is the dense reward (:func:`stategym.metrics.dense_reward`) by default:
  each round's credit, summing to the episode's R.
- **One environment per WebSocket session.** OpenEnv's HTTP ``/reset`` and ``/step`` make a
  fresh environment per request, so an HTTP ``/step`` has no episode: it is answered with an
  error observation. Play over the WebSocket (:class:`StategymClient`).

A malformed action never raises: an unknown tool, wrong arguments or unreadable argument
JSON are stategym's format errors; a payload the schema cannot read is OpenEnv's
``VALIDATION_ERROR`` reply, and the session goes on. That holds for every WebSocket frame
the server reads (up to :data:`MAX_FRAME_BYTES`, below):
openenv-core 0.3.0's ``/ws`` handler ends the session (``SESSION_ERROR``, socket closed) on
a frame that is not a JSON object (``[1,2]``, ``7``), one nested too deep for Python's
``json`` (about 1,000 levels), one Python cannot decode (an integer of more than 4,300
digits), a binary frame, and a refused message whose error reply it cannot write (a lone
surrogate or a deep value in it). So :func:`build_app` puts :class:`FrameGuard` in front of
the route: such a frame is answered there, in OpenEnv's own error reply, and the route
never sees it (:mod:`stategym.adapters.openenv_wire` holds the guard and the HTTP handlers).
A bad reset (an unknown option, ``self``, a seed that is not one) is
:class:`ResetRefused`: OpenEnv's ``EXECUTION_ERROR`` over the WebSocket, a 422 with the
one-line reason over HTTP.

Over HTTP, every body is answered by status and reason, never a 500: FastAPI's validation
errors and OpenEnv's refused ``/step`` action are 422s whose errors name the field and what
is wrong without echoing the input (a lone surrogate or ``NaN`` in it made FastAPI's own
handler fail), written as ASCII JSON.

What no layer of the app can answer: a WebSocket frame over :data:`MAX_FRAME_BYTES` is
refused by uvicorn's protocol before any ASGI code sees it, so the socket is closed (code
1009, "message too big") and the session's episode is lost. A client keeps its frames
under it: stategym refuses more anyway (64 calls a round, 16 KiB of arguments a call,
:mod:`stategym.kernel.boundary`), so no frame that large holds a round it would play as sent.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import (
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import contextmanager
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import (
    Action,
    Observation,
    State,
)
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from stategym.adapters.openenv_wire import MAX_FRAME_DEPTH, FrameGuard, ResetRefused, guard
from stategym.kernel import protocol
from stategym.kernel.env import Env
from stategym.kernel.knobs import KnobsGiven, as_knobs
from stategym.kernel.reward import RewardFn
from stategym.kernel.task import check_seed
from stategym.kernel.trajectory import dumps
from stategym.llm.serve import ThreadedServer
from stategym.metrics import Dimension, Scorecard, dense_reward, score
from stategym.registry import get_domain

SUPPORTED_OPENENV = ">=0.3,<0.4"
"""The openenv-core versions this adapter is tested with."""
NO_EPISODE = "no episode: reset first (an HTTP /step has none: play over the WebSocket)"
MAX_FRAME_BYTES = 16 * 2**20
"""The largest WebSocket frame the server reads: uvicorn's ``ws_max_size``, its default
(:func:`served` runs uvicorn with it, :func:`main` passes it). A larger one closes the socket
(1009) before the app sees it, ending the session."""


class Call(BaseModel):
    """One tool call; ``arguments`` may be the raw JSON text a model wrote."""

    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str = ""


class StategymAction(Action):
    """One round: ``calls`` run together, or one ``message`` to the user."""

    calls: list[Call] = Field(default_factory=list)
    message: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> StategymAction:
        if self.calls and self.message is not None:
            # not a ValueError: OpenEnv 0.3.0 cannot serialise its error context, and the
            # failed reply would end the session
            raise PydanticCustomError("one_kind", "tool calls or a message to the user, not both")
        return self

    @classmethod
    def of(cls, action: protocol.Action) -> StategymAction:
        """The wire form of a stategym action."""
        if isinstance(action, protocol.Say):
            return cls(message=action.text)
        calls = [
            Call(name=c.name, arguments=_arguments(c.arguments), id=c.id) for c in action.calls
        ]
        return cls(calls=calls)

    def to_stategym(self) -> protocol.Action:
        if self.message is not None:
            return protocol.Say(self.message)
        return protocol.CallBatch(
            tuple(protocol.ToolCall(c.name, c.arguments, c.id) for c in self.calls)
        )


def _arguments(arguments: Mapping[str, Any] | str) -> dict[str, Any] | str:
    return arguments if isinstance(arguments, str) else dict(arguments)


class Result(BaseModel):
    """One call's result (:class:`~stategym.kernel.protocol.ToolResult`)."""

    call_id: str
    name: str
    content: Any = None
    error: str | None = None
    error_kind: str | None = None


class Scores(BaseModel):
    """The episode's scorecard: R, each dimension's Q_d, harm and the goal."""

    composite: float
    clarification: float
    priority: float
    parallelism: float
    risk: float
    harm: float
    goal_reached: bool

    @classmethod
    def of(cls, card: Scorecard) -> Scores:
        qualities = {str(d): card.quality(d) for d in Dimension}
        return cls(
            composite=card.composite,
            harm=card.harm,
            goal_reached=card.outcome.goal_reached,
            **qualities,
        )


class StategymObservation(Observation):
    """What the agent sees after a round (``round == -1``: the reset's, with the tools)."""

    round: int = -1
    clock: int = 0
    results: list[Result] = Field(default_factory=list)
    user: str | None = None
    error: str | None = None
    format_errors: list[str] = Field(default_factory=list)
    truncated: bool = False
    scores: Scores | None = None
    """Filled once the episode has ended."""
    task_id: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The tools offered (OpenAI function format, ``finish`` last); sent at reset only."""

    def to_stategym(self) -> protocol.Observation:
        results = tuple(
            protocol.ToolResult(r.call_id, r.name, r.content, r.error, r.error_kind)
            for r in self.results
        )
        return protocol.Observation(self.round, self.clock, results, self.user, self.error)


class StategymState(State):
    """The session's episode: ``step_count`` is its rounds; ``trajectory`` its log line."""

    domain: str = ""
    task_id: str | None = None
    state_key: str | None = None
    done: bool = False
    trajectory: str | None = None
    """The versioned trajectory JSON (:func:`stategym.kernel.trajectory.loads` reads it)."""


class StategymEnvironment(Environment):
    """One session's stategym episode (OpenEnv makes one per WebSocket)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session has its own Env; tasks are immutable

    def __init__(self, domain: str, knobs: KnobsGiven = None, reward: RewardFn = dense_reward):
        super().__init__()
        self.env = Env(domain, knobs=as_knobs(knobs), reward=reward)
        self._episode_id: str | None = None
        self._started = False
        self._scores: Scores | None = None

    # ``self`` is positional-only here and below: OpenEnv passes every key of a request's
    # body to a ``**kwargs`` signature, so a ``"self"`` key is an option like any other.
    def reset(
        self,
        /,
        seed: int | None = None,
        episode_id: str | None = None,
        agent: str = "",
        **kwargs: Any,
    ) -> StategymObservation:
        """Start the episode of task ``seed`` (``None``: the next one).

        Args:
            episode_id: the client's name for the episode, returned by ``state``.
            agent: the agent's name, stamped on the trajectory.

        Raises:
            ResetRefused: an unknown option, one of the wrong type, or a seed that is not
                one (checked before anything changes, so ``state`` and the trajectory
                always read back).
        """
        _check_reset(seed, episode_id, agent, kwargs)
        observation, info = self.env.reset(seed=seed)
        self.env.agent = agent
        self._episode_id, self._started, self._scores = episode_id, True, None
        return _wire(observation, task_id=info["task_id"], tools=info["tools"])

    def step(
        self, /, action: StategymAction, timeout_s: float | None = None, **kwargs: Any
    ) -> StategymObservation:
        """Play one round; never raises on the action."""
        if not self._started:
            return StategymObservation(error=NO_EPISODE, done=True, reward=0.0)
        played = self.env.step(action.to_stategym())
        if self.env.done and self._scores is None:
            # the dense reward made the card at the last round; another reward did not
            card = played.info.get("scorecard") or score(self.env.trajectory, self.env.task)
            self._scores = Scores.of(card)
        return _wire(
            played.observation,
            reward=played.reward,
            done=played.terminated or played.truncated,
            truncated=played.truncated,
            format_errors=list(played.info.get("format_errors", ())),
            scores=self._scores,
            task_id=self.env.task.id,
        )

    # Played on the server's event loop, not OpenEnv's per-session thread: a round is a
    # fraction of a millisecond of CPU that a thread would hold the GIL for anyway, and the
    # hop cost more than the round (median step 3.4 ms against 6.7 ms, five runs each).
    async def reset_async(self, /, **options: Any) -> StategymObservation:
        return self.reset(**options)

    async def step_async(self, /, action: StategymAction, **options: Any) -> StategymObservation:
        return self.step(action, **options)

    @property
    def state(self) -> StategymState:
        domain = self.env.domain.name
        if not self._started:
            return StategymState(domain=domain)
        trajectory = self.env.trajectory
        return StategymState(
            episode_id=self._episode_id,
            step_count=len(trajectory.rounds),
            domain=domain,
            task_id=self.env.task.id,
            state_key=trajectory.digest,
            done=self.env.done,
            trajectory=dumps(trajectory).decode(),
        )


def _check_reset(seed: Any, episode_id: Any, agent: Any, unknown: Mapping[str, Any]) -> None:
    """Refuse a reset the environment will not make, before anything changes.

    Raises:
        ResetRefused: why (the core's own seed check included).
    """
    if unknown:
        raise ResetRefused(f"unknown reset options: {', '.join(sorted(unknown))}")
    if seed is not None:
        try:
            check_seed(seed)
        except (TypeError, ValueError) as error:
            raise ResetRefused(str(error)) from None
    if episode_id is not None:
        _check_name("episode_id", episode_id)
    _check_name("agent", agent)


def _check_name(option: str, value: Any) -> None:
    """A name ``state`` returns must be a string that UTF-8 can write: one with a lone
    surrogate would make every later ``state`` of the session fail.

    Raises:
        ResetRefused: it is not.
    """
    if not isinstance(value, str):
        raise ResetRefused(f"{option} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        reason = f"{option} must be valid Unicode text (it has a lone surrogate)"
        raise ResetRefused(reason) from None


def _wire(observation: protocol.Observation, **fields: Any) -> StategymObservation:
    results = [Result.model_validate(r, from_attributes=True) for r in observation.results]
    return StategymObservation(
        round=observation.round,
        clock=observation.clock,
        results=results,
        user=observation.user,
        error=observation.error,
        **fields,
    )


class StategymClient(EnvClient):
    """OpenEnv's WebSocket client, typed: ``StepResult[StategymObservation]``.

    Example:
        >>> with StategymClient(base_url="http://127.0.0.1:8000").sync() as env:  # doctest: +SKIP
        ...     first = env.reset(seed=3).observation
        ...     result = env.step(StategymAction(message="What is your budget?"))
    """

    def _step_payload(self, action: StategymAction) -> dict[str, Any]:
        return action.model_dump(mode="json")

    def _parse_result(self, payload: dict[str, Any]) -> StepResult:
        done, reward = payload.get("done", False), payload.get("reward")
        fields = {**payload.get("observation", {}), "done": done, "reward": reward}
        return StepResult(StategymObservation.model_validate(fields), reward, done)

    def _parse_state(self, payload: dict[str, Any]) -> StategymState:
        return StategymState.model_validate(payload)


def build_app(
    domain: str,
    knobs: KnobsGiven = None,
    *,
    max_sessions: int = 64,
    reward: RewardFn = dense_reward,
) -> Any:
    """OpenEnv's FastAPI app serving ``domain``: one environment per session, at most
    ``max_sessions`` at once (one more is refused with ``CAPACITY_REACHED``).

    Additions to OpenEnv's app keep its promises: :class:`FrameGuard` in front of ``/ws``
    (no frame it reads ends a session), and handlers that answer over HTTP, where there was
    a 500 and a traceback: :class:`ResetRefused` with a 422 and its reason, a body FastAPI's
    validation or OpenEnv's ``/step`` refuses with a 422 and its errors without their
    inputs, any other ``HTTPException`` with its status, all as ASCII JSON.

    ``knobs`` as :func:`~stategym.kernel.knobs.as_knobs` reads them (an object, their text, a
    mapping or ``None``), read here: knobs no session could play are refused before any
    session starts.

    Raises:
        UnknownDomainError: no such domain.
        TypeError, ValueError: ``knobs`` in no form :func:`as_knobs` takes.
    """
    get_domain(domain)
    factory = functools.partial(StategymEnvironment, domain, as_knobs(knobs), reward)
    app = create_fastapi_app(
        factory, StategymAction, StategymObservation, max_concurrent_envs=max_sessions
    )
    guard(app, StategymAction)
    return app


@contextmanager
def served(app: Any, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread of this process; yields its base URL."""
    with ThreadedServer(app, host=host, port=port, name="stategym-openenv") as server:
        yield server.origin


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m stategym.adapters.openenv --domain travel --port 8000``."""
    import uvicorn

    parser = argparse.ArgumentParser(
        prog="python -m stategym.adapters.openenv", description="Serve a domain over OpenEnv."
    )
    parser.add_argument("--domain", required=True, help="a domain name or a synth: spec")
    parser.add_argument("--knobs", default=None, help="task knobs, as Knobs.describe() writes them")
    parser.add_argument("--host", default="127.0.0.1", help="address (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: %(default)s)")
    parser.add_argument(
        "--max-sessions", type=int, default=64, help="concurrent sessions (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    app = build_app(args.domain, args.knobs, max_sessions=args.max_sessions)
    uvicorn.run(app, host=args.host, port=args.port, ws_max_size=MAX_FRAME_BYTES)


__all__ = [
    "MAX_FRAME_BYTES",
    "MAX_FRAME_DEPTH",
    "NO_EPISODE",
    "SUPPORTED_OPENENV",
    "Call",
    "FrameGuard",
    "ResetRefused",
    "Result",
    "Scores",
    "StategymAction",
    "StategymClient",
    "StategymEnvironment",
    "StategymObservation",
    "StategymState",
    "build_app",
    "main",
    "served",
]

if __name__ == "__main__":
    main()
