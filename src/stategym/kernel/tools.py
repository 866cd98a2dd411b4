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
    undoable: tuple[tuple[str, str], ...] = ()

    def schema_for(self, *, irreversible: bool) -> dict[str, Any]:
        """The schema the model sees in a world whose ``irreversible`` knob is as given: with
        it off, each ``(said, undone)`` pair of :attr:`undoable` replaces the sentence
        ``said`` by ``undone`` in the description (a payment that can be undone is not
        described as final, nor a refund in full as a fee).

        *Why*: the description is all the model knows of the tool's terms, and the knob
        changes those terms; a text true under one setting only would mislead the agent in
        exactly the setting that tests whether it uses reversibility (audit 14d F1).
        """
        if irreversible or not self.undoable:
            return self.schema
        description = _undone(self.description, self.undoable)
        function = {**self.schema["function"], "description": description}
        return {**self.schema, "function": function}

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
    *, effect: Effect, latency: int = 1, undoable: Mapping[str, str] | None = None
) -> Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool with an effect and a latency (clock ticks).

    Args:
        effect: what the tool does to the world.
        latency: clock ticks a call takes.
        undoable: sentences of the docstring that hold only while the ``irreversible`` knob
            is on, each mapped to the sentence that replaces it with the knob off
            (:meth:`Tool.schema_for`); each must occur in the description.
    """

    def wrap(fn: Callable[..., Any]) -> Tool:
        description, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        pairs = undoable_pairs(fn.__name__, description, undoable)
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
        return Tool(fn.__name__, fn, effect, latency, description, tuple(params), schema, pairs)

    return wrap


def undoable_pairs(
    name: str, description: str, undoable: Mapping[str, str] | None
) -> tuple[tuple[str, str], ...]:
    """``undoable`` as pairs, once each sentence is seen in ``description`` (so a reworded
    docstring fails at import, not by silently keeping the final-sounding text).

    Raises:
        ValueError: a sentence the description does not hold.
    """
    pairs = tuple((undoable or {}).items())
    for said, _ in pairs:
        if said not in description:
            raise ValueError(f"tool {name}: {said!r} is not in its description")
    return pairs


def _undone(description: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for said, undone in pairs:
        description = description.replace(said, undone)
    return description


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


def finish_tool_schema(stateful: bool) -> dict[str, Any]:
    """Schema of the built-in ``finish`` tool."""
    description = (
        "End the episode. Call it once the user's request is done, or when it cannot be done."
        if stateful
        else "End the episode with your answer: the id of the option you recommend, "
        "or 'none' if no option fits."
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
