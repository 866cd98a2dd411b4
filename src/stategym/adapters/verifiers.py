"""verifiers' ``MultiTurnEnv`` over a stategym domain: one rollout is one episode.

Supported: ``verifiers>=0.3.1,<0.4`` (tested: 0.3.1), whose v0 API ``import verifiers as vf``
answers (it lives in ``verifiers.legacy``). verifiers 0.4 ships only the v1 API (tasksets and
harnesses composed into an ``Env``), with no ``MultiTurnEnv``, ``Rubric`` or ``env_response``.

What this relies on in ``MultiTurnEnv.rollout`` (0.3.1): a dataset row is a rollout's input
(``prompt``, the first messages; ``info``, here the task seed, in ``state["info"]``);
``setup_state`` runs before the first model call; before every later one
``env_response(messages, state)`` answers the last assistant message; setting
``state["final_env_response"]`` ends the rollout, those messages closing the completion; the
environment's ``@vf.cleanup`` handlers run when the rollout ends, before the rubric scores.

How stategym's protocol survives that:

- **One assistant message is one round**, played through the core's message interface
  (:meth:`~stategym.kernel.env.Env.step_message`): all its tool calls are one
  :class:`~stategym.kernel.protocol.CallBatch`, plain text is a
  :class:`~stategym.kernel.protocol.Say` whose reply comes back as a user message. A bad
  message or call is a format error logged exactly as the core logs it (its kind, its text
  and, for a message the core cannot read, such as more than 64 tool calls, the raw
  message), never an exception. Every tool call gets its tool message, under the model's
  own id (a batch refused whole: the round's real error), so the conversation stays valid
  for an endpoint.
- **A row's task is ``info.seed``**, as :func:`task_rows` writes it, handed to
  :meth:`~stategym.kernel.env.Env.reset` as it is: the core refuses what is not a seed
  (``True``, ``3.9``, ``"3"``), and a row without one is a clear ``ValueError``.
- **The rollout ends with the episode** (``finish``, the user ending it, stategym's round
  limit). Every reply is a round, the last one verifiers never answers (``max_turns``)
  included; a rollout verifiers stops before the episode's end (``max_turns``, an error, a
  timeout) is scored as truncated, its stop condition the trajectory's ``stop_reason``.
- **The rubric** is R (weight 1) and each dimension's Q_d as a zero-weight metric, read off
  the scorecard the cleanup handler computes: verifiers turns an exception in a reward
  function into a reward of 0, so scoring happens where a bug still raises.
- **The log comes back**: ``state_columns=[TRAJECTORY_KEY]`` returns each rollout's
  trajectory (one JSON line, :func:`stategym.kernel.trajectory.loads` reads it), re-scorable
  offline like any stategym run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson
import verifiers as vf

from stategym.adapters.trl import dataset_rows
from stategym.kernel.env import EPISODE_OVER, Env
from stategym.kernel.knobs import KnobsGiven, as_knobs
from stategym.kernel.trajectory import Trajectory, dumps
from stategym.metrics import DIMENSIONS, Dimension, Scorecard, score
from stategym.registry import get_domain
from stategym.rendering import PROMPT_VERSION, Message, Renderer, make_renderer, offered_tools

SUPPORTED_VERIFIERS = ">=0.3.1,<0.4"
"""The verifiers versions this adapter is tested with (it reads ``MultiTurnEnv``, 0.3.1)."""
EPISODE_KEY = "stategym"
"""The rollout state's key for its :class:`RolloutEpisode`."""
TRAJECTORY_KEY = "stategym_trajectory"
"""The rollout state's key for its trajectory as one JSON line (pass it in ``state_columns``)."""
TRAIN_SEEDS = range(100)
"""The task seeds of the training dataset unless ``seeds`` says otherwise."""


@dataclass(slots=True)
class RolloutEpisode:
    """One rollout's stategym episode, kept in ``state[EPISODE_KEY]``.

    Attributes:
        env: the environment, reset to the row's task.
        renderer: the episode's renderer, the ``messages`` rendering: the message form
            :meth:`Env.step_message` reads and writes, which the log names.
        scorecard: the episode's scorecard, once the rollout has ended.
    """

    env: Env
    renderer: Renderer
    scorecard: Scorecard | None = None


class DomainEnv(vf.MultiTurnEnv):
    """A stategym domain as a verifiers ``MultiTurnEnv`` (made by :func:`load_environment`).

    Args:
        domain: the domain's registered name (``synth:...`` included).
        knobs: the knobs of every task, as :func:`~stategym.kernel.knobs.as_knobs` reads
            them (an object, their text, a mapping or ``None``).
        **kwargs: ``MultiTurnEnv``'s (``dataset``, ``eval_dataset``, ``max_turns``...).
    """

    def __init__(self, domain: str, knobs: KnobsGiven = None, **kwargs: Any) -> None:
        knobs = as_knobs(knobs)
        tools = [dict(s["function"]) for s in offered_tools(get_domain(domain), knobs)]
        super().__init__(tool_defs=tools, rubric=stategym_rubric(), **kwargs)
        self.domain_name = domain
        self.knobs = knobs

    async def setup_state(self, state: vf.State) -> vf.State:
        """Reset a fresh environment to the row's task (the core checks the seed).

        Raises:
            ValueError: the row has no ``info.seed``.
            TypeError, ValueError: the seed is not one (:meth:`Env.reset`).
        """
        env = Env(self.domain_name, knobs=self.knobs, agent=f"verifiers:{state['model']}")
        env.reset(seed=_row_seed(state))
        state[EPISODE_KEY] = RolloutEpisode(env, make_renderer(env.domain, env.task.knobs))
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> Any:
        """Play the last assistant message as one round; the observation as messages."""
        episode: RolloutEpisode = state[EPISODE_KEY]
        reply = _openai_message(messages[-1])
        answer = _answer(_play_reply(episode.env, reply), reply)
        if episode.env.done:
            state["final_env_response"] = answer
        return answer

    @vf.cleanup
    async def close_episode(self, state: vf.State) -> None:
        """Score the episode and keep its trajectory in ``state[TRAJECTORY_KEY]``.

        A reply verifiers stopped before answering (``max_turns``) is played first: the
        model made that decision, and a ``finish`` in its last allowed turn ends the episode.
        """
        episode: RolloutEpisode | None = state.get(EPISODE_KEY)
        if episode is None:  # setup_state raised: let that error show, not a missing key
            return
        env, steps = episode.env, state["trajectory"]
        if not env.done and len(steps) > len(env.rounds):
            _play_reply(env, _openai_message(steps[-1]["completion"][-1]))
        trajectory = _played(env, state.get("stop_condition"), episode.renderer.kind)
        episode.scorecard = score(trajectory, episode.env.task)
        state[TRAJECTORY_KEY] = dumps(trajectory).decode()


def _row_seed(state: Mapping[str, Any]) -> Any:
    """The row's ``info.seed``, as it is: :meth:`Env.reset` checks it, as it checks any seed.

    Raises:
        ValueError: the row has no seed (``None`` would make the core play the next task).
    """
    info = state.get("info")
    seed = info.get("seed") if isinstance(info, Mapping) else None
    if seed is None:
        raise ValueError(
            "the dataset row has no task seed in info.seed; build the dataset with "
            "stategym.adapters.verifiers.task_rows (load_environment does), whose rows are "
            '{"prompt": [...], "info": {"seed": <int>}}'
        )
    return seed


def _play_reply(env: Env, reply: Message) -> _PlayedReply:
    """Play ``reply`` as one round through the core's message interface.

    :meth:`Env.step_message` keeps every format error as the core logs it, kind, text and
    raw message; a renderer's ``parse`` would turn a message it cannot read into an empty
    batch (``empty_action``), losing all three.
    """
    rounds = len(env.rounds)
    messages, *_ = env.step_message(reply)
    # No round after the episode's end: each call is told so (verifiers' own loop stops
    # at the final response, but a caller of env_response may not).
    refused = env.rounds[-1].error if len(env.rounds) > rounds else EPISODE_OVER
    return _PlayedReply(messages, refused)


@dataclass(frozen=True, slots=True)
class _PlayedReply:
    """One played reply: the observation's messages, and the round's error if the core
    refused the reply whole (an invalid round, none of its calls run), or
    :data:`~stategym.kernel.env.EPISODE_OVER` if the episode had ended (no round played)."""

    messages: Sequence[Message]
    refused: str | None


def _played(env: Env, stop_condition: str | None, rendering: str) -> Trajectory:
    """The episode's trajectory; truncated, with ``stop_reason``, if it had not ended."""
    meta: dict[str, Any] = {"prompt_version": PROMPT_VERSION, "rendering": rendering}
    if not env.done:
        meta["stop_reason"] = stop_condition
    trajectory = env.stopped_trajectory()
    return replace(trajectory, meta={**trajectory.meta, **meta})


def _openai_message(message: Any) -> Message:
    """A verifiers assistant message as the OpenAI-style message stategym reads."""
    out: Message = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls") or ()
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return out


def _answer(played: _PlayedReply, reply: Message) -> list[Any]:
    """The observation as verifiers messages, one tool message per call of the reply."""
    rendered = played.messages
    ids = [c["id"] for c in reply.get("tool_calls") or ()]
    tool = [m["content"] for m in rendered if m["role"] == "tool"]
    if ids and not tool:  # refused whole (too many calls): each call still gets its error
        tool = [orjson.dumps({"error": played.refused}).decode()] * len(ids)
    # The model's ids, in call order: the environment renames an id it cannot keep (too long).
    answer: list[Any] = [
        vf.ToolMessage(tool_call_id=i, content=c) for i, c in zip(ids, tool, strict=True)
    ]
    answer += [vf.UserMessage(content=m["content"]) for m in rendered if m["role"] != "tool"]
    return answer


def _scorecard(state: Mapping[str, Any]) -> Scorecard:
    card = state[EPISODE_KEY].scorecard
    if card is None:
        raise RuntimeError("the rollout was scored before its episode was closed")
    return card


def composite(state: vf.State) -> float:
    """The episode's R in [-1, 1] (the reward)."""
    return _scorecard(state).composite


def _quality(dimension: Dimension) -> Callable[[vf.State], float]:
    def quality(state: vf.State) -> float:
        return _scorecard(state).quality(dimension)

    quality.__name__ = quality.__qualname__ = str(dimension)
    quality.__doc__ = f"Q_{dimension} in [0, 1] (1.0 where the task gives nothing to get wrong)."
    return quality


def stategym_rubric() -> Any:
    """R as the reward (weight 1); the four dimensions' Q_d as metrics (weight 0), named
    ``clarification``, ``priority``, ``parallelism`` and ``risk``."""
    qualities = [_quality(d) for d in DIMENSIONS]
    return vf.Rubric(funcs=[composite, *qualities], weights=[1.0] + [0.0] * len(qualities))


def task_rows(domain: str, seeds: Sequence[int], knobs: KnobsGiven = None) -> list[dict[str, Any]]:
    """The dataset rows: the renderer's first messages as ``prompt``, the seed in ``info``.

    In ``info`` because verifiers' env server (what ``vf-eval`` runs) sends a row's
    ``prompt``, ``example_id``, ``answer`` and ``info`` only.
    """
    rows = dataset_rows(domain, seeds, knobs)
    return [{"prompt": r["prompt"], "info": {"seed": r["seed"]}} for r in rows]


def load_environment(
    domain: str = "travel",
    seeds: Iterable[int] = TRAIN_SEEDS,
    eval_seeds: Iterable[int] | None = None,
    knobs: KnobsGiven = None,
    **kwargs: Any,
) -> DomainEnv:
    """A verifiers environment over ``domain``: one row per task seed.

    Args:
        domain: a registered domain, or ``synth:<spec>``.
        seeds: the training dataset's task seeds.
        eval_seeds: the evaluation dataset's; ``None``: verifiers evaluates on ``seeds``.
        knobs: the tasks' knobs, as an object, as text (``"dynamics=off"``), as a mapping
            (``{"dynamics": False}``) or ``None`` (:func:`~stategym.kernel.knobs.as_knobs`;
            ``vf-eval -a '{"knobs": {"dynamics": false}}'`` passes a mapping).
        **kwargs: passed to ``MultiTurnEnv`` (``max_turns``, ``sampling_args``...).

    Example:
        >>> env = load_environment("bank", seeds=[0, 1])
        >>> len(env.get_dataset()), env.tool_defs[-1].name
        (2, 'finish')
    """
    from datasets import Dataset

    chosen = as_knobs(knobs)
    train = tuple(seeds)

    def rows(picked: Sequence[int]) -> Callable[[], Any]:
        return lambda: Dataset.from_list(task_rows(domain, picked, chosen))

    if eval_seeds is not None:
        kwargs["eval_dataset"] = rows(tuple(eval_seeds))
    return DomainEnv(domain, chosen, dataset=rows(train), **kwargs)


__all__ = [
    "EPISODE_KEY",
    "SUPPORTED_VERIFIERS",
    "TRAIN_SEEDS",
    "TRAJECTORY_KEY",
    "DomainEnv",
    "RolloutEpisode",
    "composite",
    "load_environment",
    "stategym_rubric",
    "task_rows",
]
