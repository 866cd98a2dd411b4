"""TRL's ``environment_factory``: a domain's tools as methods, stategym's R as the reward.

Supported: ``trl>=1.16,<1.17`` with ``transformers>=5.13`` (tested: trl 1.16.0,
transformers 5.24.0). What this relies on in TRL's ``GRPOTrainer`` (1.16 source,
``_tool_call_loop``): the public methods of the environment class are the tools; the
calls of one assistant message are run one after another, async methods gathered together
(``asyncio.gather``) before the next generation; a reply without tool calls ends the rollout.

How stategym's protocol survives that:

- **One message is one round.** Every tool method is async: a call registers itself and
  yields once; the gather has then registered every call of the message, and the first to
  resume plays them all as one :class:`~stategym.kernel.protocol.CallBatch`. So parallel
  calls run together and none sees another's result, as in ``stategym run``.
- **Plain text goes to the simulated user.** :func:`route_text_to_user` wraps the
  tokenizer's ``parse_response`` so that a reply without tool calls becomes a call of the
  ``message_user`` tool (a :class:`~stategym.kernel.protocol.Say` round): a question gets
  its answer instead of ending the rollout. Once the episode is over (``finish``, or the
  user ended it) every result carries :data:`END_MARK` and plain text is no longer routed,
  so the next plain reply ends TRL's loop.
- **Bad calls reach stategym.** A method takes any keyword arguments (its signature is the
  schema the model sees); unknown, missing or ill-typed arguments are checked by the
  environment and logged as format errors. A call of a tool that does not exist is refused
  by TRL itself and never reaches stategym.
- **The reward** (``get_reward``) is the episode's composite R (a rollout that stops before
  the episode ends is scored as truncated).

What TRL cannot express: tools are listed in the prompt alphabetically (TRL sorts the
methods), not in the domain's order; the user's reply comes back as a tool result of
``message_user``, not as a user turn; a change-of-mind notice is appended to the round's
last tool result; the reward is one scalar per rollout (per-round credit:
:mod:`stategym.adapters.trl_rollout`).

The classes are picklable by reference (``environment_class(domain)`` is
``stategym.adapters.trl.<Domain>Environment``), which TRL's async trainer needs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

import orjson

from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import CallBatch, Observation, Say, ToolCall
from stategym.metrics import score
from stategym.registry import get_domain
from stategym.rendering import make_renderer
from stategym.rendering.messages import offered_tools

SUPPORTED_TRL = ">=1.16,<1.17"
"""The TRL versions this adapter is tested with (it reads TRL's tool loop, 1.16)."""
SAY_TOOL = "message_user"
"""The tool a plain-text reply is routed to (a message to the simulated user)."""
END_MARK = "[stategym: the episode is over]"
"""Appended to the last result of an episode; plain text after it is not routed."""
_TAIL = 256
"""Tokens of a rollout's history searched for :data:`END_MARK` (it ends the last result)."""
_PY_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}


class ToolEnvironment:
    """One rollout's stategym episode, for TRL's ``environment_factory``.

    Use :func:`environment_class` to get the subclass of a domain (its tool methods).
    TRL calls ``reset(**row)`` with the dataset row (its ``seed`` column picks the task).
    """

    domain_name: ClassVar[str] = ""
    knobs: ClassVar[Knobs] = Knobs()

    def __init__(self) -> None:
        self.env = Env(self.domain_name, knobs=self.knobs)
        self._pending: list[ToolCall] = []
        self._results: dict[str, str] = {}
        self._calls = 0

    def reset(self, seed: int | None = None, **row: Any) -> None:
        """Start the episode of task ``seed``; the prompt is the dataset row's own."""
        self.env.reset(seed=seed)
        self._pending, self._results = [], {}

    def get_reward(self) -> float:
        """The episode's composite R (truncated where it stopped before its end)."""
        return score(self.env.stopped_trajectory(), self.env.task).composite

    async def message_user(self, message: str) -> str:
        """Send a message to the user and get their reply.

        Args:
            message: what to tell or ask the user.
        """
        return await self._call(SAY_TOOL, {"message": message})

    async def _call(self, name: str, arguments: Mapping[str, Any]) -> str:
        self._calls += 1
        call = ToolCall(name, dict(arguments), f"t{self._calls}")
        batch = self._pending
        batch.append(call)
        await asyncio.sleep(0)  # every call of this message registers before any runs
        if self._pending is batch:
            self._pending = []
            self._play(batch)
        return self._results.pop(call.id)

    def _play(self, batch: Sequence[ToolCall]) -> None:
        if self.env.done:
            self._results.update((c.id, END_MARK) for c in batch)
            return
        arguments = batch[0].arguments
        if len(batch) == 1 and batch[0].name == SAY_TOOL and isinstance(arguments, Mapping):
            # a non-text message is the environment's bad_message round, not converted here
            observation = self.env.step(Say(arguments.get("message", ""))).observation
            texts = [_user_text(observation)]
        else:
            observation = self.env.step(CallBatch(tuple(batch))).observation
            texts = _result_texts(observation, len(batch))
        if self.env.done:
            texts[-1] = f"{texts[-1]}\n{END_MARK}"
        self._results.update(zip((c.id for c in batch), texts, strict=True))


def _user_text(observation: Observation) -> str:
    if observation.error is not None:
        return f"[environment] {observation.error}"
    return observation.user or ""


def _result_texts(observation: Observation, size: int) -> list[str]:
    """One text per call: its result or error; the round's error or notice on the last."""
    if observation.error is not None:  # the batch was rejected whole
        return [f"[environment] {observation.error}"] * size
    texts = [orjson.dumps(_body(r)).decode() for r in observation.results]
    if observation.user is not None:
        texts[-1] = f"{texts[-1]}\n[user] {observation.user}"
    return texts


def _body(result: Any) -> Any:
    return result.content if result.error is None else {"error": result.error}


def _annotation(body: Mapping[str, Any]) -> Any:
    """The Python type of a JSON-schema property (what TRL turns back into the schema)."""
    if "enum" in body:
        return Literal[tuple(body["enum"])]
    if body.get("type") == "array":
        item = _PY_TYPES[body["items"]["type"]]
        return list[item]  # type: ignore[valid-type]
    return _PY_TYPES[body["type"]]


def _method(schema: Mapping[str, Any]) -> Callable[..., Any]:
    """An async method whose signature and docstring are the tool's schema."""
    function = schema["function"]
    name = function["name"]
    properties: Mapping[str, Any] = function["parameters"]["properties"]
    required = set(function["parameters"].get("required", ()))

    async def method(self: ToolEnvironment, **arguments: Any) -> str:
        # any keywords: a wrong argument is the environment's format error, not TRL's
        return await self._call(name, arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [function.get("description") or name]
    if properties:
        lines += ["", "Args:"]
    for arg, body in properties.items():
        annotations[arg] = _annotation(body)
        default = inspect.Parameter.empty if arg in required else None
        params.append(
            inspect.Parameter(
                arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotations[arg]
            )
        )
        lines.append(f"    {arg}: {body.get('description') or arg}")
    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join(lines)
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return method


_CLASSES: dict[tuple[str, Knobs], type[ToolEnvironment]] = {}


def environment_class(domain: str, knobs: Knobs | None = None) -> type[ToolEnvironment]:
    """The ``environment_factory`` of ``domain``: a :class:`ToolEnvironment` subclass whose
    methods are the domain's tools (``finish`` included) and ``message_user``.

    Example:
        >>> Travel = environment_class("travel")
        >>> Travel.__name__, callable(Travel.search_flights)
        ('TravelEnvironment', True)
    """
    knobs = knobs or Knobs()
    found = _CLASSES.get((domain, knobs))
    if found is not None:
        return found
    methods: dict[str, Any] = {
        s["function"]["name"]: _method(s) for s in offered_tools(get_domain(domain), knobs)
    }
    if SAY_TOOL in methods:
        raise ValueError(f"domain {domain!r} has a tool named {SAY_TOOL!r}")
    name = _class_name(domain) if knobs == Knobs() else f"{_class_name(domain)}_{knobs.describe()}"
    made = type(
        name,
        (ToolEnvironment,),
        {"domain_name": domain, "knobs": knobs, "__module__": __name__, **methods},
    )
    _CLASSES[(domain, knobs)] = made
    return made


def _class_name(domain: str) -> str:
    return "".join(part.capitalize() for part in domain.split("_")) + "Environment"


def __getattr__(name: str) -> type[ToolEnvironment]:
    """``<Domain>Environment`` (default knobs), so standard pickle finds the classes."""
    from stategym.registry import all_domains

    for domain in all_domains():
        if _class_name(domain) == name:
            return environment_class(domain)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dataset_rows(domain: str, seeds: Sequence[int], knobs: Knobs | None = None) -> list[dict]:
    """Dataset rows for ``GRPOTrainer``: the renderer's first messages and the seed.

    ``datasets.Dataset.from_list(dataset_rows(...))`` is a ``train_dataset``; TRL hands
    each row to ``reset``, whose ``seed`` picks the task the prompt describes.
    """
    from stategym.registry import cached_task

    knobs = knobs or Knobs()
    renderer = make_renderer(get_domain(domain), knobs)
    rows = []
    for seed in seeds:
        prompt = renderer.first_messages(cached_task(domain, seed, knobs))
        rows.append({"prompt": prompt, "seed": seed})
    return rows


def route_text_to_user(tokenizer: Any) -> Any:
    """Make ``tokenizer.parse_response`` turn a plain reply into a ``message_user`` call.

    Only where the rollout offers :data:`SAY_TOOL` and its history does not end with
    :data:`END_MARK` (the episode is over): then the plain reply ends TRL's loop.
    The sampled ids are untouched; only TRL's reading of them changes.

    Returns:
        the same tokenizer.
    """
    parse = tokenizer.parse_response

    def routed(ids: Any, *args: Any, **kwargs: Any) -> Any:
        parsed = parse(ids, *args, **kwargs)
        if not isinstance(parsed, dict) or parsed.get("tool_calls"):
            return parsed
        tools = kwargs.get("tools") or ()
        if not any(getattr(t, "__name__", None) == SAY_TOOL for t in tools):
            return parsed
        prefix = kwargs.get("prefix")
        if prefix is not None and END_MARK in tokenizer.decode(list(prefix)[-_TAIL:]):
            return parsed
        text = str(parsed.get("content") or "")
        call = {"type": "function", "function": {"name": SAY_TOOL, "arguments": {"message": text}}}
        return {**parsed, "tool_calls": [call]}

    tokenizer.parse_response = routed
    return tokenizer


__all__ = [
    "END_MARK",
    "SAY_TOOL",
    "SUPPORTED_TRL",
    "ToolEnvironment",
    "dataset_rows",
    "environment_class",
    "route_text_to_user",
]
