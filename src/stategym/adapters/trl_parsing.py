"""How TRL's reading of a reply is made to give stategym every call as the model wrote it.

:func:`route_text_to_user` wraps ``tokenizer.parse_response`` (which TRL 1.16's
``GRPOTrainer`` calls on each sampled reply) for the environments of
:mod:`stategym.adapters.trl`. The rules it keeps:

- **Typed arguments are read as written.** Where the chat template writes tool-call
  arguments as JSON (Qwen2.5/Qwen3, Llama 3, gpt-oss, Gemma 4, LFM's Python calls), the
  tokenizer's parser is called without ``tools``: transformers would otherwise cast each
  string to its parameter's schema type with ``int()``/``float()`` (``"9"``, ``"1_0"``,
  ``"٩"``, ``" 9.0 "`` all become ``9``), so a call the core refuses as ``wrong_type`` (and a
  payment beside it) would run, and the log would hold a value the model never wrote.
- **Untyped arguments keep transformers' cast.** Where the template writes each argument as
  raw text (``xml-inline`` or ``kv-lines`` content: Qwen3.5, GLM-4-MoE, Nemotron 3, LFM2.5),
  ``"75001"`` and ``75001`` render the same and only the schema can tell them apart, so the
  cast is the only reading there is. It is transformers' (lenient: ``int()`` takes ``"1_0"``
  and other digits), and the log records the cast value.
- **What the template is** is read from the tokenizer's ``response_template`` on each call
  (TRL sets it when the trainer is built, after the wrapper): :func:`reads_arguments_as_text`.
  A template it does not know is read as written (a wrong type refused, never cast).
- **A call TRL would refuse or change is carried.** TRL dispatches a call by name with
  ``**arguments`` and turns missing or ``null`` arguments into ``{}``; a call it would refuse
  (a tool not offered, arguments not a mapping of names) or change (explicit ``null``,
  ``parameters`` instead of ``arguments``) goes to the environment inside
  :class:`_AsWritten`, and the core judges it as ``stategym run`` does.
- **Text the parser cannot read is read by stategym.** Whatever the parser raises on model
  text (``ValueError``, ``TypeError``, ``RecursionError`` from JSON nested deeper than
  Python's stack) falls back to :func:`stategym.llm.parse.parse`, which gives the same
  format errors (``malformed_json``, ``too_large``) as ``stategym run``.

Still read differently from ``stategym run``, each on the safe side (nothing runs here that
``stategym run`` refuses): a bare JSON call without ``<tool_call>`` tags is text for the user
here, a call there; a lone surrogate escape in arguments is cleaned by transformers' JSON
reading without the ``repaired_json`` that ``stategym run`` logs; ``NaN`` in arguments is
``bad_value`` here, ``malformed_json`` there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stategym.llm.parse import parse

SAY_TOOL = "message_user"
"""The tool a plain-text reply is routed to (a message to the simulated user)."""
END_MARK = "[stategym: the episode is over]"
"""Appended to the last result of an episode; plain text after it is not routed."""
_CARRIER = "stategym_call_as_written"
"""The ``message_user`` argument that carries a call TRL would refuse (:class:`_AsWritten`)."""
_TAIL = 256
"""Tokens of a rollout's history searched for :data:`END_MARK` (it ends the last result)."""
_TEXT_ARGUMENTS = frozenset({"xml-inline", "kv-lines"})
"""transformers' content parsers that read each tool-call argument as raw text."""
_UNREADABLE = (ValueError, TypeError, RecursionError)
"""What the tokenizer's parser raises on model text it cannot read (JSON errors included;
``RecursionError`` from nesting deeper than the stack). Anything else is a bug and propagates."""


class _AsWritten(str):
    """A tool call as the model wrote it, carried past TRL's dispatch.

    TRL looks a call up by name and calls it with ``**arguments``: it answers an unknown
    name, or arguments that are not a mapping, itself, and the rest of the message runs
    without that call. :func:`route_text_to_user` puts such a call (or every call of a text
    TRL could not parse) in one of these, as the only argument of a ``message_user`` call;
    the environment takes it back out before the batch plays. A ``str``, so TRL's logs of
    the completion can write it; a type of its own, so no value a parser returns (JSON) can
    pass for one: a model that writes the marker argument just sends that call.

    Attributes:
        name: the tool name the model wrote.
        arguments: its arguments, as parsed (a mapping, ``None``, or raw JSON text).
        errors: tolerated malformations of the text (the message's first call holds them).
    """

    name: str
    arguments: Any
    errors: tuple[str, ...]

    def __new__(cls, name: str, arguments: Any, errors: tuple[str, ...] = ()) -> _AsWritten:
        carried = super().__new__(cls, f"{name} {_shown(arguments)}")
        carried.name, carried.arguments, carried.errors = name, arguments, errors
        return carried

    def __reduce__(self) -> tuple[Any, ...]:
        return (_AsWritten, (self.name, self.arguments, self.errors))


def _shown(arguments: Any) -> str:
    """The arguments as TRL's logs show the carried call (nesting too deep to print is cut)."""
    try:
        return repr(arguments)
    except RecursionError:
        return f"<{type(arguments).__name__} nested too deep to show>"


def reads_arguments_as_text(tokenizer: Any) -> bool:
    """Whether the tokenizer's response template reads tool-call arguments as untyped text.

    True where the ``tool_calls`` field of ``tokenizer.response_template`` (a dict, or
    transformers' loaded template) has ``xml-inline`` or ``kv-lines`` content: each value is
    raw text, and only the tool schema types it. False for ``json`` (and ``python-call-list``)
    content, where the model writes the types itself, and for anything this does not know.
    A legacy ``response_schema`` never gets ``tools`` from TRL, so it has nothing to cast.

    Example:
        >>> from types import SimpleNamespace as Tok
        >>> field = {"open": "<tool_call>", "content": "xml-inline"}
        >>> reads_arguments_as_text(Tok(response_template={"fields": {"tool_calls": field}}))
        True
        >>> reads_arguments_as_text(Tok(response_template=None))
        False
    """
    fields = _part(getattr(tokenizer, "response_template", None), "fields")
    calls = fields.get("tool_calls") if isinstance(fields, Mapping) else None
    return _part(calls, "content") in _TEXT_ARGUMENTS


def _part(spec: Any, key: str) -> Any:
    """A key of a template dict, or the attribute of transformers' loaded template."""
    return spec.get(key) if isinstance(spec, Mapping) else getattr(spec, key, None)


def route_text_to_user(tokenizer: Any) -> Any:
    """Make ``tokenizer.parse_response`` give stategym every call and every plain reply.

    Where the rollout offers :data:`SAY_TOOL` (an environment of :mod:`stategym.adapters.trl`),
    the reading of a reply changes so that:

    - arguments the template writes as JSON are read as written (no schema cast; see
      :func:`reads_arguments_as_text`);
    - each call TRL would refuse or change (a tool not offered, arguments that are not
      keywords, ``null``, ``parameters``) is carried to the environment in a
      ``message_user`` call, which plays it as written;
    - a reply the tokenizer cannot parse is read by :func:`stategym.llm.parse.parse`, and its
      calls are carried likewise (the same format errors as ``stategym run``);
    - a reply without tool calls becomes a ``message_user`` call, unless the history ends
      with :data:`END_MARK` (the episode is over): then the plain reply ends TRL's loop.

    The sampled ids are untouched; only TRL's reading of them changes.

    Returns:
        the same tokenizer.
    """
    parse_ids = tokenizer.parse_response

    def routed(ids: Any, *args: Any, **kwargs: Any) -> Any:
        offered = {getattr(t, "__name__", None) for t in kwargs.get("tools") or ()}
        if SAY_TOOL not in offered:
            return parse_ids(ids, *args, **kwargs)
        if not reads_arguments_as_text(tokenizer):
            # typed JSON: read as written (no schema cast); the offered names are read above
            kwargs = {k: v for k, v in kwargs.items() if k != "tools"}
        try:
            parsed = parse_ids(ids, *args, **kwargs)
        except _UNREADABLE:
            parsed = None
        if not _readable(parsed):
            parsed = _read_text(_decoded(tokenizer, ids))
        if parsed.get("tool_calls"):
            return {
                **parsed,
                "tool_calls": [_dispatchable(c, offered) for c in parsed["tool_calls"]],
            }
        prefix = kwargs.get("prefix")
        if prefix is not None and END_MARK in tokenizer.decode(list(prefix)[-_TAIL:]):
            return parsed
        return {**parsed, "tool_calls": [_say_call({"message": str(parsed.get("content") or "")})]}

    tokenizer.parse_response = routed
    return tokenizer


def _readable(parsed: Any) -> bool:
    """A reading whose every call has a name (TRL's own check; else TRL drops the calls)."""
    if not isinstance(parsed, dict):
        return False
    calls = parsed.get("tool_calls")
    if calls is None:
        return True
    return isinstance(calls, list) and all(_name_of(c) is not None for c in calls)


def _name_of(call: Any) -> str | None:
    function = call.get("function", call) if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None


def _dispatchable(call: dict[str, Any], offered: set[Any]) -> dict[str, Any]:
    """The call itself if TRL dispatches exactly what the model wrote, else the call carried
    with its arguments as ``stategym run`` reads them (``arguments``, else ``parameters``)."""
    function = call.get("function", call)
    name = function["name"]
    if call.get("type") == "function" and name in offered and _keywords(function):
        return call
    arguments = function["arguments"] if "arguments" in function else function.get("parameters")
    return _say_call({_CARRIER: _AsWritten(name, arguments)})


def _keywords(function: Mapping[str, Any]) -> bool:
    """TRL passes these arguments as written: a mapping of names, or none at all (TRL and
    ``stategym run`` both read a call without arguments as ``{}``). An explicit ``null`` is
    not a mapping (TRL would make it ``{}``), nor is ``parameters`` (TRL would drop it)."""
    if "arguments" not in function:
        return "parameters" not in function
    arguments = function["arguments"]
    return isinstance(arguments, Mapping) and all(type(k) is str for k in arguments)


def _say_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": SAY_TOOL, "arguments": arguments}}


def _decoded(tokenizer: Any, ids: Iterable[int]) -> str:
    """The reply's text with the template's tokens, as ``stategym run``'s agents read it."""
    text = str(tokenizer.decode(list(ids), skip_special_tokens=False))
    eos = getattr(tokenizer, "eos_token", None)
    return text.removesuffix(eos) if isinstance(eos, str) and eos else text


def _read_text(text: str) -> dict[str, Any]:
    """The reply read by stategym's parser, every call carried as written."""
    parsed = parse(text)
    message: dict[str, Any] = {"role": "assistant", "content": parsed.content or ""}
    if parsed.calls:
        message["tool_calls"] = [
            _say_call({_CARRIER: _AsWritten(c.name, c.arguments, parsed.errors if i == 0 else ())})
            for i, c in enumerate(parsed.calls)
        ]
    return message
