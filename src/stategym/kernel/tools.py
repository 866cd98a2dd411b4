"""Tools: plain typed functions whose docstring is what the model sees.

A tool takes the domain's world as its first argument and JSON-typed keyword arguments after
it. The :func:`tool` decorator declares its effect and latency and turns the signature into
an OpenAI function schema once, at import time::

    @tool(effect=Effect.READ, latency=2)
    def search_flights(world: TravelWorld, origin: str, destination: str, day: int) -> JSON:
        \"\"\"Search direct flights on one day.

        Args:
            origin: IATA code of the departure airport.
            destination: IATA code of the arrival airport.
            day: day number, as in the request.
        \"\"\"

Argument checking happens in :meth:`Tool.bind`, which raises
:class:`~stategym.kernel.errors.AgentFormatError` so that a wrong call becomes a structured error
observation, never a crash.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
import re
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, get_args, get_origin

from stategym.kernel.errors import AgentFormatError
from stategym.kernel.knob_text import KnobSentences, knob_sentences, text_for
from stategym.kernel.knobs import Knobs


class Effect(StrEnum):
    """What a tool does to the world."""

    READ = "read"
    WRITE = "write"
    COMMIT = "commit"


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


@dataclass(frozen=True, slots=True)
class Param:
    """One argument of a tool."""

    name: str
    annotation: Any
    required: bool
    default: Any
    description: str
    choices: tuple[Any, ...] = ()

    def check(self, value: Any, tool: str) -> Any:
        """Return the value (ints widened to float where a float is wanted) or raise."""
        expected = self.annotation
        if type(value) is expected:
            # The common case, checked first: a Literal or list[...] annotation is never a
            # value's type, so this returns exactly what the checks below would.
            return value
        if self.choices:
            if value in self.choices and type(value) is type(self.choices[0]):
                return value
            raise AgentFormatError(
                "wrong_type", f"{tool}: {self.name} must be one of {list(self.choices)}"
            )
        if expected is float and type(value) is int:
            return float(value)
        if expected is int and type(value) is float and value.is_integer() and abs(value) < 2**63:
            return int(value)  # only into the 64-bit range every logged integer keeps
        if expected in _JSON_TYPES:
            if type(value) is expected:
                return value
        elif get_origin(expected) is list:
            (item,) = get_args(expected)
            if isinstance(value, list) and all(type(v) is item for v in value):
                return value
        raise AgentFormatError(
            "wrong_type",
            f"{tool}: {self.name} must be {_type_name(expected)}, got {type(value).__name__}",
        )

    def schema(self) -> dict[str, Any]:
        if self.choices:
            body: dict[str, Any] = {"type": _JSON_TYPES[type(self.choices[0])]}
            body["enum"] = list(self.choices)
        elif get_origin(self.annotation) is list:
            (item,) = get_args(self.annotation)
            body = {"type": "array", "items": {"type": _JSON_TYPES[item]}}
        else:
            body = {"type": _JSON_TYPES[self.annotation]}
        if self.description:
            body["description"] = self.description
        return body


def _type_name(annotation: Any) -> str:
    if get_origin(annotation) is list:
        (item,) = get_args(annotation)
        return f"a list of {_JSON_TYPES[item]}"
    name = _JSON_TYPES.get(annotation, str(annotation))
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool, its declared effect and latency, and its model-facing schema."""

    name: str
    fn: Callable[..., Any]
    effect: Effect
    latency: int
    description: str
    params: tuple[Param, ...]
    schema: dict[str, Any]
    when_off: KnobSentences = ()
    reads_own_writes: bool = False
    """A READ tool over what the episode's own writes made (orders, bookings, a cart): not
    offered where ``stateful`` is off, where nothing can be written
    (:meth:`~stategym.kernel.domain.Domain.available_tools`)."""

    def __post_init__(self) -> None:
        if self.reads_own_writes and self.effect is not Effect.READ:
            raise ValueError(f"tool {self.name}: only a READ tool reads what writes made")

    def schema_for(self, knobs: Knobs) -> dict[str, Any]:
        """The schema the model sees in a world with ``knobs``: each sentence of
        :attr:`when_off` whose knob is off replaced, in the description and the arguments'
        texts (a payment that can be undone is not described as final, a price that cannot
        move as one that can; :mod:`~stategym.kernel.knob_text`)."""
        if all(getattr(knobs, knob) for knob, _, _ in self.when_off):
            return self.schema
        function = self.schema["function"]
        parameters = function["parameters"]
        properties = {
            name: {**body, "description": text_for(body["description"], self.when_off, knobs)}
            if "description" in body
            else body
            for name, body in parameters["properties"].items()
        }
        return {
            **self.schema,
            "function": {
                **function,
                "description": text_for(self.description, self.when_off, knobs),
                "parameters": {**parameters, "properties": properties},
            },
        }

    def bind(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Check decoded arguments against the signature and fill defaults.

        Raises:
            AgentFormatError: unknown, missing or wrongly typed arguments.
        """
        known = self.schema["function"]["parameters"]["properties"]
        for name in arguments:
            if name not in known:
                raise AgentFormatError(
                    "unexpected_argument", f"{self.name}: unexpected argument {name!r}"
                )
        bound: dict[str, Any] = {}
        for param in self.params:
            if param.name in arguments:
                bound[param.name] = param.check(arguments[param.name], self.name)
            elif param.required:
                raise AgentFormatError(
                    "missing_argument", f"{self.name}: missing argument {param.name!r}"
                )
            else:
                bound[param.name] = param.default
        return bound

    def __call__(self, world: Any, **arguments: Any) -> Any:
        return self.fn(world, **arguments)

    def __reduce__(self) -> tuple[Callable[[str, str], Tool], tuple[str, str]]:
        # @tool rebinds the function's module-level name to the Tool, so the function itself
        # cannot pickle by reference: the Tool does instead. Tools built at run time (the
        # synthetic domains' closures) have no such name; they travel with their domain.
        module, name = self.fn.__module__, self.fn.__qualname__
        if getattr(sys.modules.get(module), name, None) is not self:
            raise pickle.PicklingError(
                f"tool {self.name!r} has no module-level name; pickle its domain"
            )
        return (_tool_named, (module, name))

    def __deepcopy__(self, memo: dict[int, Any]) -> Tool:
        return self  # immutable; its function is shared anyway


def _tool_named(module: str, name: str) -> Tool:
    """The tool bound to ``module.name`` (how a module-level tool unpickles)."""
    found = getattr(importlib.import_module(module), name)
    if not isinstance(found, Tool):
        raise pickle.UnpicklingError(f"{module}.{name} is not a tool")
    return found


def tool(
    *,
    effect: Effect,
    latency: int = 1,
    when_off: Mapping[str, Mapping[str, str]] | None = None,
    reads_own_writes: bool = False,
) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool with an effect and a latency (clock ticks).

    Args:
        effect: what the tool does to the world.
        latency: clock ticks a call takes.
        when_off: for a knob, the sentences of the docstring (its description or an
            argument's text) true only while it is on, each
            mapped to the sentence that replaces it with the knob off
            (:meth:`Tool.schema_for`, checked by :func:`~stategym.kernel.knob_text.knob_sentences`).
        reads_own_writes: a READ tool that lists only what the episode's writes made
            (:attr:`Tool.reads_own_writes`): offered only where ``stateful`` is on.
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        description, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        read = "\n".join((description, *arg_docs.values()))  # all the model reads of it
        sentences = knob_sentences(f"tool {fn.__name__}", read, when_off)
        hints = typing.get_type_hints(fn)
        params = []
        for index, (name, parameter) in enumerate(inspect.signature(fn).parameters.items()):
            if index == 0:
                continue  # the world
            annotation = hints[name]
            choices: tuple[Any, ...] = ()
            if get_origin(annotation) is Literal:
                choices = get_args(annotation)
            required = parameter.default is inspect.Parameter.empty
            default = None if required else parameter.default
            params.append(
                Param(name, annotation, required, default, arg_docs.get(name, ""), choices)
            )
        schema = {
            "type": "function",
            "function": {
                "name": fn.__name__,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in params},
                    "required": [p.name for p in params if p.required],
                    "additionalProperties": False,
                },
            },
        }
        return Tool(
            fn.__name__,
            fn,
            effect,
            latency,
            description,
            tuple(params),
            schema,
            sentences,
            reads_own_writes,
        )

    return wrap


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into its description and per-argument texts."""
    head, _, rest = doc.partition("\nArgs:\n")
    args: dict[str, str] = {}
    current = ""
    for line in rest.splitlines():
        if line and not line.startswith(" "):
            break  # next section (Returns:, Raises:)
        match = _ARG_LINE.match(line)
        if match and line.startswith("    ") and not line.startswith("     "):
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current and line.strip():
            args[current] += " " + line.strip()
    return " ".join(head.split()), args


OPTION_ANSWER = "the id of the option you recommend, or 'none' if no option fits"
"""What ``finish(answer=...)`` names in a domain judged on its answer, unless the domain says
otherwise (:attr:`~stategym.kernel.domain.Domain.answer_form`)."""


def finish_tool_schema(stateful: bool, answer_form: str = OPTION_ANSWER) -> dict[str, Any]:
    """Schema of the built-in ``finish`` tool; ``answer_form`` says what the answer names
    where the episode is judged on it (``stateful`` false)."""
    description = (
        "End the episode. Call it once the user's request is done, or when it cannot be done."
        if stateful
        else f"End the episode with your answer: {answer_form}."
    )
    return {
        "type": "function",
        "function": {
            "name": "finish",
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "answer": {
                        "type": "string",
                        "description": "Your final answer or a short summary for the user.",
                    }
                },
                "required": [] if stateful else ["answer"],
                "additionalProperties": False,
            },
        },
    }
