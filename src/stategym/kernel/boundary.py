"""The boundary rule: every value an agent sends becomes JSON data before anything acts on it.

Every interface (typed objects, message dicts, JSON text) passes an agent's values through
:func:`to_json`: what the rule cannot carry exactly (NaN, integers outside 64 bits, sets,
non-string keys...) is a ``bad_value`` format error, and what is larger than the caps
(:data:`MAX_CALLS`, :data:`MAX_ARGUMENT_BYTES`, :data:`MAX_DEPTH`, :data:`MAX_TEXT`,
:data:`MAX_MESSAGE`) is ``too_large``. So every logged value is JSON that reads back equal;
what was rejected is kept in the log as bounded text (:func:`kept_text`, :func:`describe`).
:mod:`stategym.kernel.protocol` re-exports these names beside the protocol's objects.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from typing import Any

import orjson

from stategym.kernel.errors import AgentFormatError

JSON = Any
"""JSON data: dicts with str keys, lists, str, int, float, bool, None (see :func:`to_json`)."""

MAX_CALLS = 64
"""Calls in one round; a larger batch is a ``too_large`` invalid round."""
MAX_ARGUMENT_BYTES = 16_384
"""Bytes of one call's arguments as compact JSON (arguments sent as text: characters)."""
MAX_DEPTH = 32
"""Levels of nesting in any value an agent sends (each object or array is one level)."""
MAX_TEXT = 16_384
"""Characters of one message to the user."""
MAX_MESSAGE = 1 << 20
"""Characters of one assistant message sent as JSON text."""
MAX_ID = 256
"""Characters of a call id; a longer one is replaced like a missing one."""
INT_RANGE = (-(2**63), 2**63 - 1)
"""Integers an agent may send: the signed 64-bit range (wider ones are ``bad_value``)."""
RAW_LIMIT = 4096
"""Characters of an unusable value kept in the log (enough to see what went wrong)."""
CUT = "\u2026"
"""Appended to kept text that was cut; it also makes the text invalid JSON, so a cut
argument text can never replay as a readable one."""

_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a surrogate pair
    r"|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})"  # a lone surrogate
    r"|\\.",  # any other escape (``\\\\`` among them), read whole so none is split
    re.DOTALL,
)
_REPLACEMENT_ESCAPE = "\\ufffd"
_LONG_RUN = b"0" * 19
_SMALL = 1 << 62


class _ShortRepr(reprlib.Repr):
    """``reprlib`` with integers too long for ``repr`` (over 4,300 digits) told by size."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 4096:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_REPR = _ShortRepr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 4, 200, 200, 200


def to_json(value: Any, limit: int = MAX_ARGUMENT_BYTES) -> JSON:
    """An agent's value as JSON data, by the boundary rule every interface applies.

    * ``str``, ``bool``, ``None``, finite floats and integers in :data:`INT_RANGE` are kept;
      a subclass of ``str``, ``int`` or ``float`` (an enum member) becomes the plain value.
    * A string's surrogate code points are decoded as UTF-16 would: a pair becomes the
      character it encodes, a lone one U+FFFD (UTF-8, hence JSON, cannot carry them).
    * Lists and tuples become lists; mappings become dicts, whose keys must be strings. A
      subclass of ``list``, ``tuple`` or ``dict`` is read as the plain container: none of its
      own methods runs.
    * Anything else (sets, bytes, other objects), NaN, infinities, integers outside
      :data:`INT_RANGE` and non-string keys are ``bad_value`` format errors, and so is a
      value whose own code (a mapping's ``__getitem__``) raises while it is read.
    * Types are read with ``type()``, which an object cannot fake (``__class__`` can be).
    * More than :data:`MAX_DEPTH` levels of nesting, or compact JSON longer than ``limit``
      bytes, is ``too_large``; a huge value is rejected without being walked whole.

    The result is a fresh copy, which orjson writes and reads back equal.

    Examples:
        >>> to_json({"ids": ("A1", "B2"), "day": 3})
        {'ids': ['A1', 'B2'], 'day': 3}
        >>> to_json({"day": 2**64})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        stategym.kernel.errors.AgentFormatError: an integer of 65 bits is outside the ... range

    Raises:
        AgentFormatError: ``bad_value`` or ``too_large``.
    """
    budget = [limit, limit]
    try:
        result = _container(value, 0, budget) if type(value) is dict else _normal(value, 0, budget)
    except AgentFormatError:
        raise
    except Exception as error:  # raised by the agent's own code, never by the rule's
        raise AgentFormatError(
            "bad_value", f"the value could not be read ({raised(error)})"
        ) from None
    # ``budget`` now holds the limit minus a lower bound of the compact size; the size is at
    # most 25 times that bound (a number written as up to 25 bytes counts 1), so most values
    # need no encoding to be checked.
    if (limit - budget[0]) * 25 > limit and len(orjson.dumps(result)) > limit:
        raise AgentFormatError("too_large", f"more than {limit} bytes of JSON")
    return result


def read_json(text: str, what: str) -> Any:
    """Decode JSON text exactly; the values are not yet judged by :func:`to_json`.

    Text must be I-JSON (RFC 7493) as orjson reads it: a number beyond a double's range (an
    infinity, or an integer of some 310 digits), nesting past 1,024 levels or an object that
    names a member twice (:class:`RepeatedNameError`) is ``malformed_json``. One exception:
    a surrogate, raw or escaped, is read by the rule :func:`to_json` applies to a string (a
    pair is its character, a lone one U+FFFD), so the JSON text ``json.dumps`` writes for a
    lone surrogate (``"\\ud800"``, which I-JSON has no room for) reads as the value it was
    written from would. orjson reads an integer wider than 64 bits as a float, so text with
    such a long number is read again by the standard library, which keeps every integer
    exact (for :func:`to_json` to reject).

    Raises:
        AgentFormatError: ``malformed_json`` or ``too_large``; ``what`` (such as
            ``"the message"``) starts the message.
    """
    value, text = _orjson(text, what)
    return _exact(text, what) if _long_number(text) else value


def decode_json(text: str, what: str, limit: int = MAX_ARGUMENT_BYTES) -> JSON:
    """:func:`read_json` on text of at most ``limit`` characters, then :func:`to_json`.

    Raises:
        AgentFormatError: as :func:`read_json`, or ``too_large``/``bad_value`` from the rule.
    """
    if len(text) > limit:
        raise AgentFormatError("too_large", f"{what} is longer than {limit} characters")
    value, text = _orjson(text, what)
    if _long_number(text):
        value = _exact(text, what)
    elif 5 * len(text) <= limit and text.count("[") + text.count("{") <= MAX_DEPTH:
        # What orjson read already obeys the rule: its strings are UTF-8, its keys strings,
        # its floats finite, its integers (none of 19 digits) within 64 bits, its nesting
        # within MAX_DEPTH (it has fewer brackets), and its compact JSON is within the limit
        # (at most 4.5 bytes per character of text: "1e15" is "1000000000000000.0").
        return value
    try:
        return to_json(value, limit)
    except AgentFormatError as error:
        raise AgentFormatError(error.kind, f"{what}: {error}") from None


def _long_number(text: str) -> bool:
    """Whether ``text`` has a run of 19 ASCII digits, the shortest integer literal that can
    fall outside 64 bits (JSON numbers are ASCII digits only). Every digit byte is read as
    ``0`` and the run searched for as a substring, both in C: the regular expression
    ``\\d{19}`` this replaces took longer than orjson's whole parse of the text."""
    return _LONG_RUN in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZEROS)


def _orjson(text: str, what: str) -> tuple[Any, str]:
    """What orjson reads in ``text``, and the text it read: ``text`` itself, or, where
    orjson refused it, ``text`` with its surrogates read by the boundary rule
    (:func:`_surrogates_read`) if that changed it, tried once more.

    Raises:
        AgentFormatError: ``malformed_json``, the last reading's error.
    """
    try:
        return _once_each(orjson.loads(text), text, what), text
    except orjson.JSONDecodeError as error:
        failure = error
    read = _surrogates_read(text)
    if read != text:
        try:
            return _once_each(orjson.loads(read), read, what), read
        except orjson.JSONDecodeError as error:
            failure = error
    raise AgentFormatError("malformed_json", f"{what} is not valid JSON ({failure})") from None


def _once_each(value: Any, text: str, what: str) -> Any:
    """``value``, read from ``text``, if no object of ``text`` names a member twice (I-JSON
    forbids it, and orjson keeps the last silently: ``{"day": 8, "day": 9}`` ran as day 9,
    audit 17A F6). Every colon of the text ends a member's name or lies inside a string, as
    in the compact JSON of ``value`` (orjson writes a colon as itself); so, where the text
    writes no colon as an escape, it has more colons than that JSON only if a member was
    dropped. Other text (and text nested past the 254 levels orjson writes) is read name by
    name (:func:`_repeated_name`).

    Raises:
        AgentFormatError: ``malformed_json``, naming the repeated member.
    """
    colons = text.count(":")
    if colons < 2:  # two members of one object take two colons
        return value
    try:
        if colons <= orjson.dumps(value).count(b":") and not _ESCAPED_COLON.search(text):
            return value
    except orjson.JSONEncodeError:  # nested past what orjson writes: read name by name
        pass
    repeated = _repeated_name(text)
    if repeated is not None:
        raise RepeatedNameError("malformed_json", f"{what} names {repeated!r} twice in one object")
    return value


def _repeated_name(text: str) -> str | None:
    """The first name an object of ``text`` (JSON orjson read) gives twice, or ``None``: its
    strings and brackets read in one pass, with a stack of each open object's names, so at
    any depth orjson reads (the standard library's reader gave up near 1,000 levels, and a
    name repeated there passed: audit 17C F3)."""
    names: list[set[str] | None] = []  # per open bracket: an object's names, or None
    last = ""  # the last string read
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            last = token
        elif token == ":":  # the last string was a name: a colon follows only a name
            seen = names[-1]
            name = json.loads(last)
            if seen is not None:  # always so in JSON orjson read: a colon is in an object
                if name in seen:
                    return str(name)
                seen.add(name)
        elif token == "{":
            names.append(set())
        elif token == "[":
            names.append(None)
        else:  # a closing bracket
            names.pop()
    return None


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:]')
"""A string of JSON text, or one of the marks that shape it."""
_ESCAPED_COLON = re.compile(r"\\u003[aA]")
"""A colon written as an escape, which the colon count of the text does not see."""


class RepeatedNameError(AgentFormatError):
    """``malformed_json``: an object names a member twice, which no repair can settle."""


def _surrogates_read(text: str) -> str:
    """``text`` with its surrogates as :func:`to_json` reads a string's: raw ones cleaned
    (:func:`clean_text`), and each lone surrogate escape (``\\ud800``, not half of a pair)
    written as the escape of U+FFFD (``\\ufffd``, as long). The escapes are read left to
    right, each whole, so an escaped backslash before ``ud800`` is not taken for one; a
    backslash outside a string stays as invalid as it was."""
    text = clean_text(text)
    if "\\u" not in text:
        return text
    return _ESCAPE.sub(lambda m: _REPLACEMENT_ESCAPE if m.group(1) else m.group(), text)


def _exact(text: str, what: str) -> Any:
    """Text orjson has read, read again with every integer exact."""
    try:
        return json.loads(text)
    except RecursionError:  # orjson reads 1,024 levels, the standard library fewer
        raise AgentFormatError("too_large", f"{what} is nested too deeply") from None


def clean_text(text: str) -> str:
    """Text UTF-8 can encode: surrogates decoded as UTF-16 would (see :func:`to_json`)."""
    if text.isascii():
        return text
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def clean_strings(value: Any, levels: int | None = None) -> Any:
    """A decoded JSON value (a chat message) with every string in it, keys too, cleaned
    (:func:`clean_text`), in fresh lists and dicts. Only ``str``, ``list`` and ``dict``
    themselves are walked (by ``type()``, as :func:`to_json` reads); any other value or key
    is kept as it is.

    Args:
        levels: how many levels of lists and dicts to walk into; deeper ones are kept as
            they are. ``None``: all of them, and a value nested past Python's stack raises
            ``RecursionError``.
    """
    kind = type(value)
    if kind is str:
        return clean_text(value)
    if levels == 0 or (kind is not list and kind is not dict):
        return value
    below = None if levels is None else levels - 1
    if kind is list:
        return [clean_strings(item, below) for item in value]
    return {
        clean_text(key) if type(key) is str else key: clean_strings(item, below)
        for key, item in value.items()
    }


def capped_text(text: str, limit: int) -> str | None:
    """``text`` cleaned (:func:`clean_text`), or ``None`` if it is then longer than ``limit``
    characters: every text cap counts the characters the log keeps, so a surrogate pair is
    one character through every interface. A text over twice the limit is refused uncleaned
    (cleaning at most halves it), so a huge one is never copied."""
    if len(text) > 2 * limit:
        return None
    text = clean_text(text)
    return text if len(text) <= limit else None


def kept_text(text: str) -> str:
    """Agent text as the log keeps it: cleaned, cut to :data:`RAW_LIMIT` (marked by :data:`CUT`)."""
    if len(text) > RAW_LIMIT:
        text = text[:RAW_LIMIT] + CUT
    return clean_text(text)


def describe(value: Any) -> str:
    """A value that is not JSON data as short text for the log; never raises.

    It is wrapped in ``<...>``, so it is never valid JSON and never a tool name.
    """
    try:
        text = str.__str__(_REPR.repr(value))
    except Exception:  # the value's own __repr__ (or __iter__, for a list) raised
        text = f"a {class_name(type(value))}"
    return kept_text(f"<{text}>")


def class_name(kind: type) -> str:
    """A class's name, read so that no code of the agent's runs (a metaclass can make
    ``__name__`` a property that raises)."""
    return str.__str__(type.__dict__["__name__"].__get__(kind))


def raised(error: Exception) -> str:
    """``"it raised RuntimeError"``: what an agent's object did while the boundary read it."""
    return f"it raised {class_name(type(error))}"


def unreadable(error: Exception, what: str) -> AgentFormatError:
    """The ``bad_message`` error for an action whose own code (a property, ``__iter__``, a
    mapping's ``get``) raised ``error`` while the boundary read it into plain values."""
    return AgentFormatError("bad_message", f"{what} could not be read ({raised(error)})")


def json_text(value: Any, limit: int = MAX_MESSAGE) -> str:
    """Compact JSON text of a value if the rule accepts it (within ``limit`` bytes), else
    :func:`describe`'s text."""
    try:
        return orjson.dumps(to_json(value, limit)).decode()
    except AgentFormatError:
        return describe(value)


def too_many_calls(count: int) -> str:
    return f"the round has {count} tool calls; at most {MAX_CALLS} are allowed"


def _too_large(budget: list[int]) -> AgentFormatError:
    return AgentFormatError("too_large", f"more than {budget[1]} bytes of JSON")


def _normal(value: Any, depth: int, budget: list[int]) -> JSON:
    """:func:`to_json` on one value.

    ``budget`` is ``[left, limit]``: ``left`` counts down a lower bound of the compact size.
    """
    kind = type(value)
    if kind is str:
        budget[0] -= len(value) + 2
        if budget[0] < 0:
            raise _too_large(budget)
        return value if value.isascii() else clean_text(value)
    if kind is int:
        budget[0] -= 1
        if INT_RANGE[0] <= value <= INT_RANGE[1]:
            return value
        message = f"an integer of {value.bit_length()} bits is outside the signed 64-bit range"
        raise AgentFormatError("bad_value", message)
    if value is None or kind is bool:
        budget[0] -= 4
        return value
    if kind is float:
        budget[0] -= 3
        if value - value == 0.0:  # false for NaN and the infinities
            return value
        raise AgentFormatError("bad_value", f"{value} is not a JSON number")
    if kind is dict or kind is list or kind is tuple:
        return _container(value, depth, budget)
    if issubclass(kind, str):
        return _normal(str.__str__(value), depth, budget)
    if issubclass(kind, int):
        return _normal(int.__int__(value), depth, budget)
    if issubclass(kind, float):
        return _normal(float.__float__(value), depth, budget)
    if issubclass(kind, (Mapping, list, tuple)):
        return _container(value, depth, budget)
    raise AgentFormatError("bad_value", f"a {class_name(kind)} is not a JSON value")


def _container(value: Any, depth: int, budget: list[int]) -> JSON:
    """A list or a dict by the rule. Short ASCII strings and small integers, by far the
    commonest items, are checked inline: this runs on every call an agent makes."""
    if depth >= MAX_DEPTH:
        raise AgentFormatError("too_large", f"the value is nested more than {MAX_DEPTH} levels")
    depth += 1
    left = budget[0] - 2
    kind = type(value)
    if kind is dict or not issubclass(kind, (list, tuple)):  # a mapping
        # A dict subclass is read as the plain dict; any other mapping by its own methods.
        pairs = dict.items(value) if kind is not dict and issubclass(kind, dict) else value.items()
        result: dict[str, JSON] = {}
        for key, item in pairs:
            if type(key) is not str:
                if not issubclass(type(key), str):
                    raise AgentFormatError(
                        "bad_value", f"object keys must be strings, not {class_name(type(key))}"
                    )
                key = str.__str__(key)
            kind = type(item)
            if kind is str and item.isascii():
                left -= len(key) + len(item) + 5
            elif kind is int and -_SMALL < item < _SMALL:
                left -= len(key) + 4
            else:
                budget[0] = left - len(key) - 3
                item = _normal(item, depth, budget)
                left = budget[0]
            if left < 0:
                raise _too_large(budget)
            result[key if key.isascii() else clean_text(key)] = item
        budget[0] = left
        return result
    items: list[JSON] = []
    if kind is not list and kind is not tuple:  # a subclass, read as the plain container
        value = list.__iter__(value) if issubclass(kind, list) else tuple.__iter__(value)
    for item in value:
        kind = type(item)
        if kind is str and item.isascii():
            left -= len(item) + 2
        elif kind is int and -_SMALL < item < _SMALL:
            left -= 1
        else:
            budget[0] = left
            item = _normal(item, depth, budget)
            left = budget[0]
        if left < 0:
            raise _too_large(budget)
        items.append(item)
    budget[0] = left
    return items


def decode_message(message: Any) -> Any:
    """An assistant message itself, or the value its JSON text encodes (text at most
    :data:`MAX_MESSAGE` characters, surrogates cleaned first).

    Raises:
        AgentFormatError: ``too_large``, or as :func:`read_json`.
    """
    if not issubclass(type(message), str):
        return message
    text = capped_text(str.__str__(message), MAX_MESSAGE)
    if text is None:
        reason = f"the message is longer than {MAX_MESSAGE} characters"
        raise AgentFormatError("too_large", reason)
    return read_json(text, "the message")


def raw_text(message: Any) -> str:
    """An unusable message as bounded text for the log (:func:`kept_text`)."""
    if issubclass(type(message), str):
        return kept_text(str.__str__(message))
    # a bound on the walk too: a message far longer than the log keeps is described instead
    return kept_text(json_text(message, 4 * RAW_LIMIT))
