"""TRL's ``environment_factory``: a domain's tools as methods, stategym's R as the reward.

Supported: ``trl>=1.16,<1.17`` with ``transformers>=5.15`` (the first with which TRL hands
the offered tools to the parser: :func:`route_text_to_user` knows a stategym rollout by
them); tested: trl 1.16.0, transformers 5.24.0.

What this relies on in TRL's ``GRPOTrainer`` (1.16 source, ``_tool_call_loop``): the
public methods of the environment class are the tools; a call is dispatched by name with
``**arguments``; the calls of one assistant message are run one after another, async
methods gathered together (``asyncio.gather``) before the next generation; a reply without
tool calls ends the rollout.

How stategym's protocol survives that:

- **One message is one round.** Every tool method is async: a call registers itself and
  yields once; the gather has then registered every call of the message, and the first to
  resume plays them all as one :class:`~stategym.kernel.protocol.CallBatch`. So parallel
  calls run together and none sees another's result, as in ``stategym run``.
- **Every call reaches the batch as the model wrote it.** A method takes any keyword
  arguments (its signature is only the schema the model sees), so wrong arguments are the
  environment's format errors. :func:`route_text_to_user` (:mod:`.trl_parsing`, which
  states its reading rules) keeps TRL from changing a call on the way: arguments a chat
  template writes as JSON are read without transformers' schema cast (``"9"`` stays a
  string, the core's ``wrong_type``), and a call TRL would refuse or rewrite itself (a tool
  that does not exist, arguments that are not a mapping, ``"arguments": null``, which TRL
  makes ``{}``) goes to ``message_user`` inside a marker the parser cannot produce; the
  environment takes the original call back out. The core then judges the batch as
  ``stategym run`` does: one malformed call and nothing runs. Only where the template writes
  arguments as untyped text (Qwen3.5, GLM-4-MoE, Nemotron 3, LFM2.5) is the schema cast
  kept: it is the only reading there is, and the log records the cast value.
- **Text TRL cannot parse is read by stategym.** Where the tokenizer's parser fails (a
  truncated or malformed ``<tool_call>``, JSON nested deeper than Python's stack), the
  wrapper reads the text with :func:`stategym.llm.parse.parse`, as ``stategym run``'s model
  agents do: the round is the same format error, the model gets it as a tool result, and
  the rollout goes on.
- **Plain text goes to the simulated user.** A reply without tool calls becomes a call of
  ``message_user`` (a :class:`~stategym.kernel.protocol.Say` round): a question gets its
  answer instead of ending the rollout. ``message_user`` must be the only call of its
  message, with its one argument ``message``; any other use is a format error whose text
  says so (the round logs the raw calls). Once the episode is over (``finish``, or the user
  ended it) every result carries :data:`END_MARK` and plain text is no longer routed, so the
  next plain reply ends TRL's loop.
- **A row names its task.** ``reset`` needs the row's ``seed``; a row that carries its
  ``prompt`` (as :func:`dataset_rows` makes them) must carry that task's first messages.
  Each reset numbers the calls from one again, so a pooled instance writes the same bytes
  as a fresh one.
- **The reward** (``get_reward``) is the episode's composite R (a rollout that stops before
  the episode ends is scored as truncated).

What TRL cannot express: tools are listed in the prompt alphabetically (TRL sorts the
methods), not in the domain's order; the user's reply comes back as a tool result of
``message_user``, not as a user turn, and so does the result of a call carried past TRL's
dispatch (TRL names a tool message after the method it called); a change-of-mind notice is
appended to the round's last tool result; the reward is one scalar per rollout (per-round
credit: :mod:`stategym.adapters.trl_rollout`). Whether the episode is over is read from the
token history (the wrapper sees the tokens, not the environment), so a model that writes
:data:`END_MARK` itself stops its next plain reply from being routed: that reply ends the
rollout, scored truncated. Telling the mark in a tool result from the same text in an
assistant turn would need the chat template's layout, which the adapter does not assume.

The classes and their instances pickle, whatever the domain and knobs (TRL's async trainer
pickles its ``environment_factory``): a class by reference, under a name that says how to
make it again (``stategym.adapters.trl.TravelEnvironment`` for a registered domain's
default knobs, ``TravelEnvironment[travel|stateful=off,...]`` otherwise, which the module
makes on first lookup); an instance as its class and its state (the episode in play).
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Literal

import orjson

from stategym.adapters.trl_parsing import (
    _CARRIER,
    END_MARK,
    SAY_TOOL,
    _AsWritten,
    reads_arguments_as_text,
    route_text_to_user,
)
from stategym.kernel.env import Env
from stategym.kernel.errors import StateGymError
from stategym.kernel.knobs import Knobs, KnobsGiven, as_knobs
from stategym.kernel.protocol import CallBatch, Observation, Say, ToolCall
from stategym.kernel.task import check_seed
from stategym.kernel.validation import NOT_RUN
from stategym.metrics import score
from stategym.registry import DOMAINS, get_domain
from stategym.rendering import make_renderer
from stategym.rendering.base import roles_and_texts
from stategym.rendering.messages import offered_tools

SUPPORTED_TRL = ">=1.16,<1.17"
"""The TRL versions this adapter is tested with (it reads TRL's tool loop, 1.16)."""
SAY_RULE = (
    f"{SAY_TOOL} takes one argument, message (the text for the user), and must be the only "
    "call of its message; nothing in this message ran"
)
"""What the model is told when it uses ``message_user`` any other way."""
_PY_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool}
_SAY_SCHEMA = {
    "function": {
        "name": SAY_TOOL,
        "description": "Send a message to the user and get their reply.",
        "parameters": {
            "properties": {
                "message": {"type": "string", "description": "what to tell or ask the user."}
            },
            "required": ["message"],
        },
    }
}


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

    async def method(self: ToolEnvironment, /, **arguments: Any) -> str:
        # any keywords: a wrong argument is the environment's format error, not TRL's
        return await self._call(name, arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
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


class ToolEnvironment:
    """One rollout's stategym episode, for TRL's ``environment_factory``.

    Use :func:`environment_class` to get the subclass of a domain (its tool methods).
    TRL calls ``reset(**row)`` with the dataset row (its ``seed`` column picks the task).
    """

    domain_name: ClassVar[str] = ""
    knobs: ClassVar[Knobs] = Knobs()
    message_user = _method(_SAY_SCHEMA)
    """Send a message to the user and get their reply (alone in its message)."""

    def __init__(self) -> None:
        self.env = Env(self.domain_name, knobs=self.knobs)
        self._pending: list[tuple[ToolCall, tuple[str, ...]]] = []
        self._results: dict[str, str] = {}
        self._calls = 0
        self._started = False

    def reset(self, seed: int | None = None, prompt: Any = None, **row: Any) -> None:
        """Start the episode of task ``seed``; the prompt is the dataset row's own.

        Raises:
            ValueError: the row has no ``seed``, or its ``prompt`` is not that task's first
                messages for this domain and knobs (a row of another dataset).
            TypeError: the seed is not an integer (:func:`~stategym.kernel.task.check_seed`).
        """
        if seed is None:
            raise ValueError(
                f"the row has no 'seed' column: it names the task the episode plays; make "
                f"the rows with dataset_rows({self.domain_name!r}, seeds)"
            )
        seed = check_seed(seed)
        if prompt is not None and roles_and_texts(prompt) != roles_and_texts(
            _first_messages(self.domain_name, seed, self.knobs)
        ):
            raise ValueError(
                f"the row's prompt is not task {seed}'s first messages for {self.domain_name!r} "
                f"with knobs {self.knobs.describe()!r}: make the rows with dataset_rows() for "
                "this environment's domain and knobs"
            )
        self.env.reset(seed=seed)
        self._pending, self._results, self._calls = [], {}, 0
        self._started = True

    def get_reward(self) -> float:
        """The episode's composite R (truncated where it stopped before its end)."""
        self._check_started()
        return score(self.env.stopped_trajectory(), self.env.task).composite

    def _check_started(self) -> None:
        if not self._started:
            raise RuntimeError(
                f"{type(self).__name__}: call reset(**row) first (TRL does, with the row's seed)"
            )

    async def _call(self, name: str, arguments: Mapping[str, Any]) -> str:
        self._check_started()
        self._calls += 1
        call, errors = _as_written(name, arguments, f"t{self._calls}")
        batch = self._pending
        batch.append((call, errors))
        await asyncio.sleep(0)  # every call of this message registers before any runs
        if self._pending is batch:
            self._pending = []
            self._play([c for c, _ in batch], tuple(e for _, errors in batch for e in errors))
        return self._results.pop(call.id)

    def _play(self, batch: Sequence[ToolCall], errors: tuple[str, ...]) -> None:
        if self.env.done:
            self._results.update((c.id, END_MARK) for c in batch)
            return
        action = _action(batch)
        observation = self.env.step(action).observation
        if errors:  # what the parser tolerated counts, logged as the runner logs it
            record = self.env.rounds[-1]
            meta = {**record.meta, "format_errors": list(errors)}  # the tail verify leaves out
            self.env.rounds[-1] = replace(
                record, format_errors=record.format_errors + errors, meta=meta
            )
        if isinstance(action, Say):
            texts = [_user_text(observation)]
        else:
            texts = _result_texts(observation, len(batch))
        if self.env.done:
            texts[-1] = f"{texts[-1]}\n{END_MARK}"
        self._results.update(zip((c.id for c in batch), texts, strict=True))


def _as_written(
    name: str, arguments: Mapping[str, Any], call_id: str
) -> tuple[ToolCall, tuple[str, ...]]:
    """The call the model wrote (a carried one taken back out) and the text's errors."""
    carried = arguments.get(_CARRIER)
    if type(carried) is _AsWritten and len(arguments) == 1:
        return ToolCall(carried.name, carried.arguments, call_id), carried.errors
    return ToolCall(name, dict(arguments), call_id), ()


def _action(batch: Sequence[ToolCall]) -> Say | CallBatch:
    """A message to the user where ``message_user`` is used as offered, else the batch
    (where the environment, which has no such tool, rejects it whole and logs the calls)."""
    arguments = batch[0].arguments
    if len(batch) == 1 and batch[0].name == SAY_TOOL and isinstance(arguments, Mapping):
        message = arguments.get("message")
        if set(arguments) == {"message"} and isinstance(message, str):
            return Say(message)
    return CallBatch(tuple(batch))


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
    if result.error is None:
        return result.content
    if result.name == SAY_TOOL and result.error_kind != NOT_RUN:
        return {"error": SAY_RULE}  # the environment knows no such tool; the model was offered it
    if result.error_kind == "unknown_tool":
        return {"error": f"{result.error}, and {SAY_TOOL} (alone in its message)"}
    return {"error": result.error}


_CLASSES: dict[tuple[str, Knobs], type[ToolEnvironment]] = {}
_RECIPE = re.compile(r"[^\[]*\[(?P<domain>[^|\]]*)\|(?P<knobs>[^|\]]*)\]")
"""A class name's recipe part, ``[<domain>|<knobs text>]`` (see :func:`environment_class`)."""


def environment_class(domain: str, knobs: KnobsGiven = None) -> type[ToolEnvironment]:
    """The ``environment_factory`` of ``domain``: a :class:`ToolEnvironment` subclass whose
    methods are the domain's tools (``finish`` included) and ``message_user``.

    ``knobs`` as :func:`~stategym.kernel.knobs.as_knobs` reads them (an object, their text,
    a mapping or ``None``). The class is made once per domain and knobs, and named so that pickle
    finds it in any process: ``TravelEnvironment`` for a registered domain's default knobs,
    ``TravelEnvironment[travel|stateful=off,...]`` (the domain and the knobs' text) for
    anything else, a ``synth:`` domain included; this module makes that class when the name
    is looked up (:func:`__getattr__`).

    Example:
        >>> Travel = environment_class("travel")
        >>> Travel.__name__, callable(Travel.search_flights)
        ('TravelEnvironment', True)

    Raises:
        TypeError, ValueError: ``knobs`` in no form :func:`as_knobs` takes.
        UnknownDomainError: no such domain.
    """
    knobs = as_knobs(knobs)
    found = _CLASSES.get((domain, knobs))
    if found is not None:
        return found
    methods: dict[str, Any] = {
        s["function"]["name"]: _method(s) for s in offered_tools(get_domain(domain), knobs)
    }
    if SAY_TOOL in methods:
        raise ValueError(f"domain {domain!r} has a tool named {SAY_TOOL!r}")
    name = _class_name(domain)
    if domain not in DOMAINS or knobs != Knobs():
        name = f"{name}[{domain}|{knobs.describe()}]"
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
    """The class :func:`environment_class` names ``name`` (made now if it was not), so that
    standard pickle finds every class, in any process.

    Raises:
        AttributeError: no class :func:`environment_class` makes has that name.
    """
    recipe = _RECIPE.fullmatch(name)
    if recipe is not None:
        try:
            made = environment_class(recipe["domain"], recipe["knobs"])
        except (StateGymError, ValueError):
            made = None
        if made is not None and made.__name__ == name:
            return made
    for domain in DOMAINS:
        if _class_name(domain) == name:
            return environment_class(domain)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dataset_rows(domain: str, seeds: Sequence[int], knobs: KnobsGiven = None) -> list[dict]:
    """Dataset rows for ``GRPOTrainer``: the renderer's first messages and the seed.

    ``datasets.Dataset.from_list(dataset_rows(...))`` is a ``train_dataset``; TRL hands
    each row to ``reset``, whose ``seed`` picks the task the prompt describes. ``knobs`` as
    :func:`~stategym.kernel.knobs.as_knobs` reads them.
    """
    knobs = as_knobs(knobs)
    return [{"prompt": _first_messages(domain, seed, knobs), "seed": seed} for seed in seeds]


def _first_messages(domain: str, seed: int, knobs: Knobs) -> list[dict[str, Any]]:
    from stategym.registry import cached_task

    renderer = make_renderer(get_domain(domain), knobs)
    return renderer.first_messages(cached_task(domain, seed, knobs))


__all__ = [
    "END_MARK",
    "SAY_RULE",
    "SAY_TOOL",
    "SUPPORTED_TRL",
    "ToolEnvironment",
    "dataset_rows",
    "environment_class",
    "reads_arguments_as_text",
    "route_text_to_user",
]
