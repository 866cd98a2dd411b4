"""The Gymnasium text interface: every registered domain as a ``gymnasium.Env`` over strings.

The observation is the JSON text of the round's new OpenAI-style messages (tool results, then
the user's words); the action is the JSON text of an OpenAI-style assistant message with
``content`` and/or ``tool_calls`` (a dict is accepted too). Text that is not such a message
becomes a format-error observation, never an exception. At reset the observation is the
user's request; the tool schemas and the domain's instructions are in ``info``::

    import gymnasium
    import stategym  # registers stategym/Travel-v0 and every other domain's id

    env = gymnasium.make("stategym/Travel-v0", dynamics=False, reward="dense")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(
        '{"role": "assistant", "content": "What is your budget?"}'
    )

Spaces:

* ``observation_space``: ``Text(max_length=MAX_OBSERVATION, charset=CHARSET)``. An observation
  is a JSON array of messages, ``{"role": "tool", "tool_call_id", "content"}`` per call (the
  content is the JSON text of the result or of ``{"error": ...}``), then ``{"role": "user",
  "content"}`` for an environment error and for the user's words. It is escaped to ASCII, so
  it always lies in the space; one longer than :data:`MAX_OBSERVATION` characters is replaced
  by a short error message.
* ``action_space``: ``Text(max_length=MAX_ACTION, charset=CHARSET)``, the JSON text of an
  assistant message (what ``sample()`` draws is almost never a usable one). ``step`` also
  takes longer text, any Unicode and a dict; the caps that apply are the environment's
  (:data:`stategym.kernel.protocol.MAX_MESSAGE` characters,
  :data:`~stategym.kernel.protocol.MAX_CALLS`
  calls...).

``reward`` is a :data:`stategym.kernel.reward.RewardFn` or a name in :data:`REWARDS`
(``"outcome"``, the default, or ``"dense"`` for :func:`stategym.metrics.dense_reward`).
``reader`` replaces how the simulated user reads messages (an LLM:
``gymnasium.make("stategym/Travel-v0", reader=LLMReading(...))``, see
:mod:`stategym.llm.reading`).
:func:`register_envs`, run by ``import stategym``, registers every domain's ``env_id`` with a
string entry point, so no environment is built until ``gymnasium.make`` asks for one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import gymnasium
import orjson
from gymnasium import spaces

from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.reward import RewardFn, outcome_reward
from stategym.kernel.task import check_seed
from stategym.kernel.understanding import ReaderSource

CHARSET = "".join(chr(code) for code in range(32, 128))
"""Printable ASCII and DEL: JSON text escaped to ASCII never needs any other character."""
MAX_OBSERVATION = 1 << 20
"""Characters in one observation; a longer one is replaced by a short error message."""
MAX_ACTION = 1 << 16
"""Characters in a text action the action space samples (longer actions are played too)."""
ENTRY_POINT = "stategym.gym:StateGymEnv"

Message = dict[str, Any]


def encode_messages(messages: list[dict[str, str]]) -> str:
    """Messages as compact JSON text escaped to ASCII.

    orjson is ~10x faster than the standard library but cannot escape to ASCII (nor write a
    lone surrogate), so the standard library handles the (rare) observations it cannot.
    """
    try:
        text = orjson.dumps(messages).decode()
    except orjson.JSONEncodeError:
        text = ""
    if text and text.isascii():
        return text
    return json.dumps(messages, ensure_ascii=True, separators=(",", ":"))


REWARDS = ("outcome", "dense")
"""Reward names ``gymnasium.make(..., reward=NAME)`` accepts."""


def reward_function(reward: RewardFn | str) -> RewardFn:
    """A reward function, or the one a name in :data:`REWARDS` stands for.

    Raises:
        ValueError: an unknown name.
    """
    if not isinstance(reward, str):
        return reward
    if reward == "outcome":
        return outcome_reward
    if reward == "dense":
        from stategym.metrics import dense_reward  # the metrics are not needed otherwise

        return dense_reward
    raise ValueError(f"reward must be a function or one of {', '.join(REWARDS)}; got {reward!r}")


def _knobs(knobs: Knobs | str | None, switches: Mapping[str, bool | None]) -> Knobs:
    base = Knobs.parse(knobs) if isinstance(knobs, str) else knobs or Knobs()
    values = {name: getattr(base, name) for name in switches}
    values.update({name: bool(value) for name, value in switches.items() if value is not None})
    return Knobs(**values)


class StateGymEnv(gymnasium.Env[str, str | Message]):
    """One stategym domain behind Gymnasium's ``reset``/``step`` contract, over text.

    Args:
        domain: the domain's registered name.
        knobs: knobs as an object or as text (``"dynamics=off,hidden_info=off"``).
        stateful: override one knob (likewise the four after it); ``None`` keeps ``knobs``.
        irreversible: see :class:`~stategym.kernel.knobs.Knobs`.
        hidden_info: see :class:`~stategym.kernel.knobs.Knobs`.
        priorities: see :class:`~stategym.kernel.knobs.Knobs`.
        dynamics: see :class:`~stategym.kernel.knobs.Knobs`.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the last round as text).
        reward: a reward function or its name (:data:`REWARDS`); default ``"outcome"``.
        reader: what reads the agent's messages for the simulated user (default: the
            rule-based intent model; an LLM: :class:`stategym.llm.reading.LLMReading`).

    Attributes:
        core: the wrapped :class:`stategym.kernel.env.Env` (trajectory, outcome, state key).
    """

    # Gymnasium declares ``metadata`` as a plain class attribute; render_fps is required by its
    # checker even for text (its own text environments use 4).
    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        domain: str = "travel",
        *,
        knobs: Knobs | str | None = None,
        stateful: bool | None = None,
        irreversible: bool | None = None,
        hidden_info: bool | None = None,
        priorities: bool | None = None,
        dynamics: bool | None = None,
        render_mode: str | None = None,
        reward: RewardFn | str = "outcome",
        reader: ReaderSource | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        switches = {
            "stateful": stateful,
            "irreversible": irreversible,
            "hidden_info": hidden_info,
            "priorities": priorities,
            "dynamics": dynamics,
        }
        self.core = Env(
            domain,
            knobs=_knobs(knobs, switches),
            reward=reward_function(reward),
            agent="gymnasium",
            reader=reader,
        )
        self.render_mode = render_mode
        self.observation_space = spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_ACTION, min_length=0, charset=CHARSET)
        self._last = ""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode: ``seed`` picks the task (``None``: the task after the last one).

        ``options`` are :meth:`stategym.kernel.env.Env.reset`'s (``{"task": Task}`` plays a
        given task).

        Raises:
            TypeError, ValueError: ``seed`` is no seed (:func:`~stategym.kernel.task.check_seed`:
                an integer in ``[0, 2**64)``), checked before Gymnasium reseeds ``np_random``.
        """
        seed = None if seed is None else check_seed(seed)
        super().reset(seed=seed)
        observation, core_info = self.core.reset(seed=seed, options=options)
        text = self._observe(observation.to_messages())
        info = {
            "task_id": core_info["task_id"],
            "tools": list(core_info["tools"]),
            "instructions": self.core.domain.instructions,
        }
        return text, info

    def step(self, action: str | Message) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Play one round from an assistant message (JSON text or dict); never raises on it."""
        messages, reward, terminated, truncated, info = self.core.step_message(action)
        return self._observe(messages), float(reward), terminated, truncated, dict(info)

    def _observe(self, messages: list[dict[str, str]]) -> str:
        text = encode_messages(messages)
        if len(text) > MAX_OBSERVATION:
            note = f"[environment] the observation was {len(text)} characters long and was dropped"
            text = encode_messages([{"role": "user", "content": note}])
        self._last = text
        return text

    def render(self) -> str | None:
        """The last observation, one message per line (``render_mode="ansi"`` only)."""
        if self.render_mode != "ansi":
            return None
        lines = [f"{m.get('role')}: {m.get('content')}" for m in orjson.loads(self._last)]
        return "\n".join(lines) + "\n"


def register_envs() -> None:
    """Register every domain's Gymnasium id (idempotent; no domain is imported, nothing is
    built until ``gymnasium.make``)."""
    from gymnasium.envs.registration import register, registry

    from stategym.registry import DOMAINS

    for name, env_id in DOMAINS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, kwargs={"domain": name})
