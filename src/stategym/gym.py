"""The Gymnasium text interface: every registered domain as a ``gymnasium.Env`` over strings.

The observation is the JSON text of the round's new OpenAI-style messages (tool results, then
the user's words); the action is the JSON text of an OpenAI-style assistant message with
``content`` and/or ``tool_calls`` (a dict is accepted too). Text that is not such a message
becomes a format-error observation, never an exception. At reset the observation is the
user's request; ``info`` holds the tool schemas, the system prompt every other interface
gives the model (``"system_prompt"``) and the domain's instructions alone::

    import gymnasium
    import stategym  # registers stategym/Travel-v0 and every other domain's id

    env = gymnasium.make("stategym/Travel-v0", dynamics=False, reward="dense")
    observation, info = env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(
        '{"role": "assistant", "content": "What is your budget?"}'
    )

Spaces:

* ``observation_space``: ``Text(max_length=MAX_OBSERVATION, charset=CHARSET)`` (an
  :class:`ObservationText`, so that ``AsyncVectorEnv``'s shared memory works). An observation
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

Seeds follow Gymnasium's convention: ``reset(seed=s)`` plays task ``s``, and ``reset()``
plays a task whose seed is drawn from the environment's ``np_random`` (seeded by the last
``reset(seed=...)``, from the operating system's entropy if none came). So the environments
of a vector environment, which Gymnasium seeds ``s, s+1, ...`` and resets without a seed when
an episode ends, each play a stream of their own: with "the task after the last one", the
environment seeded ``s`` went on to play ``s+1, s+2, ...``, its neighbours' tasks.

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
import multiprocessing
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, overload

import gymnasium
import numpy as np
import orjson
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs, KnobsGiven, as_knobs, read_switch
from stategym.kernel.reset_options import check_max_rounds
from stategym.kernel.reward import RewardFn, outcome_reward
from stategym.kernel.task import SEED_LIMIT, check_seed
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


class ObservationText(spaces.Text):
    """Gymnasium's ``Text`` space, with shared memory that ``AsyncVectorEnv`` reads correctly.

    Gymnasium 1.4 decodes a ``Text`` space's shared memory once, when the vector environment
    is built, into a tuple that never changes: every observation of
    ``gymnasium.make_vec(..., vectorization_mode="async")`` (shared memory is its default)
    came back as ``max_length`` blanks. This space's buffer holds each environment's length
    and ASCII bytes (1 byte a character, not Gymnasium's 4), and the vector environment's
    observations are :class:`SharedTexts`, which read it when taken. Otherwise it is ``Text``
    (equal to a ``Text`` of the same bounds and characters).
    """


class SharedTexts(Sequence[str]):
    """The latest observation of each environment of an ``AsyncVectorEnv``, read from its
    shared memory when taken. ``AsyncVectorEnv`` returns a ``deepcopy`` (its default
    ``copy=True``): a tuple of strings, as ``SyncVectorEnv`` returns; with ``copy=False``,
    this view itself, which the next ``step`` overwrites (as Gymnasium's arrays are)."""

    def __init__(self, lengths: Any, characters: Any, max_length: int) -> None:
        self._lengths = np.frombuffer(lengths.get_obj(), dtype=np.int64)
        self._characters = np.frombuffer(characters.get_obj(), dtype=np.uint8)
        self._max_length = max_length

    def __len__(self) -> int:
        return len(self._lengths)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        position = range(len(self))[index]  # an IndexError as a tuple's
        start = position * self._max_length
        stop = start + int(self._lengths[position])
        return self._characters[start:stop].tobytes().decode("ascii")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


# Gymnasium's vector utilities dispatch on the space's type (functools.singledispatch):
# registering the subclass is its documented way to give a space its own shared memory.
@create_shared_memory.register(ObservationText)
def _create_shared_texts(
    space: ObservationText, n: int = 1, ctx: ModuleType = multiprocessing
) -> tuple[Any, Any]:
    return ctx.Array("q", n), ctx.Array("B", n * space.max_length)


@read_from_shared_memory.register(ObservationText)
def _read_shared_texts(
    space: ObservationText, shared_memory: tuple[Any, Any], n: int = 1
) -> SharedTexts:
    return SharedTexts(*shared_memory, space.max_length)


@write_to_shared_memory.register(ObservationText)
def _write_shared_text(
    space: ObservationText, index: int, values: str, shared_memory: tuple[Any, Any]
) -> None:
    data = values.encode("ascii")  # an observation always is (CHARSET)
    if len(data) > space.max_length:
        raise ValueError(f"an observation of {len(data)} characters is outside {space}")
    lengths, characters = shared_memory
    start = index * space.max_length
    buffer = np.frombuffer(characters.get_obj(), dtype=np.uint8)
    buffer[start : start + len(data)] = np.frombuffer(data, dtype=np.uint8)
    lengths[index] = len(data)


REWARDS = ("outcome", "dense")
"""Reward names ``gymnasium.make(..., reward=NAME)`` accepts."""


def reward_function(reward: RewardFn | str) -> RewardFn:
    """A reward function, or the one a name in :data:`REWARDS` stands for.

    Raises:
        ValueError: an unknown name.
        TypeError: neither a name nor callable.
    """
    if not isinstance(reward, str):
        if not callable(reward):
            raise TypeError(
                f"reward must be a function or one of {', '.join(REWARDS)}; "
                f"got {type(reward).__name__} {reward!r}"
            )
        return reward
    if reward == "outcome":
        return outcome_reward
    if reward == "dense":
        from stategym.metrics import dense_reward  # the metrics are not needed otherwise

        return dense_reward
    raise ValueError(f"reward must be a function or one of {', '.join(REWARDS)}; got {reward!r}")


def _knobs(knobs: KnobsGiven, switches: Mapping[str, bool | str | None]) -> Knobs:
    """``knobs`` with the switches that are not ``None`` overriding theirs.

    Raises:
        TypeError: ``knobs`` is neither :class:`Knobs`, text nor ``None``
            (:func:`~stategym.kernel.knobs.as_knobs`); a switch is neither a bool nor text.
        ValueError: bad knob text, or a switch that is text other than ``on``/``off``.
    """
    base = as_knobs(knobs)
    values = {name: getattr(base, name) for name in switches}
    values.update({name: read_switch(name, v) for name, v in switches.items() if v is not None})
    return Knobs(**values)


class StateGymEnv(gymnasium.Env[str, str | Message]):
    """One stategym domain behind Gymnasium's ``reset``/``step`` contract, over text.

    Args:
        domain: the domain's registered name.
        knobs: knobs as an object, as text (``"dynamics=off,hidden_info=off"``) or as a
            mapping (``{"dynamics": False}``).
        stateful: override one knob (likewise the four after it): a bool, or ``"on"`` or
            ``"off"``; ``None`` keeps ``knobs``. Anything else is a ``TypeError`` (a
            ``ValueError`` for other text): ``dynamics="off"`` never turns dynamics on.
        irreversible: see :class:`~stategym.kernel.knobs.Knobs`.
        hidden_info: see :class:`~stategym.kernel.knobs.Knobs`.
        priorities: see :class:`~stategym.kernel.knobs.Knobs`.
        dynamics: see :class:`~stategym.kernel.knobs.Knobs`.
        render_mode: ``None`` or ``"ansi"`` (``render()`` returns the last round as text).
        reward: a reward function or its name (:data:`REWARDS`); default ``"outcome"``.
        reader: what reads the agent's messages for the simulated user (default: the
            rule-based intent model; an LLM: :class:`stategym.llm.reading.LLMReading`).
        max_rounds: stop every episode after this many steps (the core's ``max_rounds``
            reset option): the last is truncated by the environment itself, so the reward
            settles there. Give a step limit here rather than as ``gymnasium.make``'s
            ``max_episode_steps``: Gymnasium's ``TimeLimit`` stops the episode outside the
            environment, which never learns of it, so the stopped episode's settlement is
            never paid (the dense rewards do not sum to R, the outcome reward pays nothing).
            ``None``: the task's own round budget.

    Raises:
        TypeError, ValueError: a knob, ``knobs``, ``reward`` or ``max_rounds`` of the wrong
            type or value.

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
        knobs: KnobsGiven = None,
        stateful: bool | str | None = None,
        irreversible: bool | str | None = None,
        hidden_info: bool | str | None = None,
        priorities: bool | str | None = None,
        dynamics: bool | str | None = None,
        render_mode: str | None = None,
        reward: RewardFn | str = "outcome",
        reader: ReaderSource | None = None,
        max_rounds: int | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.max_rounds = None if max_rounds is None else check_max_rounds(max_rounds)
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
        self.observation_space = ObservationText(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.action_space = spaces.Text(MAX_ACTION, min_length=0, charset=CHARSET)
        self._last = ""
        self._prompts: dict[Knobs, str] = {}
        """The system prompt per knobs: made once, not at every reset."""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode: ``seed`` picks the task (``None``: a seed drawn from
        ``np_random``, see the module docstring).

        ``options`` are :meth:`stategym.kernel.env.Env.reset`'s (``{"task": Task}`` plays a
        given task; ``{"max_rounds": N}`` stops it after N steps, as the ``max_rounds``
        argument does for every episode). ``info``: ``task_id``, ``tools`` (the schemas offered),
        ``system_prompt`` (the ``messages`` rendering's, what every other interface gives
        the model: the domain's instructions, then the protocol's rules for these knobs)
        and ``instructions`` (the domain's alone).

        Raises:
            TypeError, ValueError: ``seed`` is no seed (:func:`~stategym.kernel.task.check_seed`:
                an integer in ``[0, 2**64)``), checked before Gymnasium reseeds ``np_random``.
        """
        seed = None if seed is None else check_seed(seed)
        super().reset(seed=seed)
        given = isinstance(options, Mapping) and options.get("task") is not None
        played = self._drawn_seed() if seed is None and not given else seed
        if self.max_rounds is not None and (options is None or isinstance(options, Mapping)):
            options = {"max_rounds": self.max_rounds, **(options or {})}
        observation, core_info = self.core.reset(seed=played, options=options)
        text = self._observe(observation.to_messages())
        knobs = self.core.task.knobs
        info = {
            "task_id": core_info["task_id"],
            "tools": orjson.loads(orjson.dumps(core_info["tools"])),  # the caller's own copy
            "system_prompt": self._system_prompt(knobs),
            "instructions": self.core.domain.instructions_for(knobs),
        }
        return text, info

    def _system_prompt(self, knobs: Knobs) -> str:
        """The system prompt of the ``messages`` rendering, what the other interfaces give."""
        prompt = self._prompts.get(knobs)
        if prompt is None:
            # imported here: ``import stategym`` imports this module and must load the kernel
            from stategym.rendering import make_renderer

            prompt = make_renderer(self.core.domain, knobs, "messages").system_prompt()
            self._prompts[knobs] = prompt
        return prompt

    def _drawn_seed(self) -> int:
        """The next task's seed, drawn from ``np_random`` over every seed (``[0, 2**64)``):
        Gymnasium's ``reset()`` goes on with the environment's random stream."""
        return int(self.np_random.integers(SEED_LIMIT, dtype=np.uint64))

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
