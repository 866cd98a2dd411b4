"""Switches that turn each hard property of the environments off independently.

With every knob off a task becomes the stateless lookup special case that most multi-turn
tool-use RL work trains on (Search-R1-like): read-only tools, everything stated up front, no
conflicts, nothing moves, and the episode ends with an answer rather than an action.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class Knobs:
    """Which of the paper's five properties a task has."""

    stateful: bool = True
    """Write and commit tools exist and change the world; off: read-only tools, the episode
    ends with ``finish(answer=...)`` naming the chosen option."""
    irreversible: bool = True
    """Commits cost money that cannot be recovered; off: cancelling refunds in full."""
    hidden_info: bool = True
    """Some facts only the user knows and must be asked for; off: the request states them."""
    priorities: bool = True
    """Constraints can conflict so that the priority order decides, and the order itself may
    be hidden; off: generated tasks have a choice that satisfies every constraint."""
    dynamics: bool = True
    """Prices and availability move on a clock, holds expire, the user may change a
    constraint; off: nothing changes unless the agent changes it."""

    def __post_init__(self) -> None:
        # A knob is True or False: "off" is truthy and would play with the knob on, and a 0
        # was written as 0, a log no reader takes (audit 16C F2). NumPy's bools (a sweep's
        # values) are read as the bools they are.
        for knob in fields(self):
            value = getattr(self, knob.name)
            read = _as_bool(value)
            if read is not None:
                if type(value) is not bool:
                    object.__setattr__(self, knob.name, read)
                continue
            raise TypeError(
                f"Knobs.{knob.name} must be True or False, got {type(value).__name__} "
                f"{reprlib.repr(value)} (knob text: Knobs.parse('{knob.name}=off'))"
            )

    @classmethod
    def all_off(cls) -> Knobs:
        """The stateless lookup special case."""
        return cls(False, False, False, False, False)

    @classmethod
    def parse(cls, text: str) -> Knobs:
        """Parse ``"dynamics=off,hidden_info=off"`` or ``"all_off"`` into knobs.

        Each knob is named once: ``dynamics=on,dynamics=off`` is refused, not read as its
        last value (the setting says two things; which one was meant cannot be told).

        Raises:
            ValueError: an item that is not ``NAME=on|off`` with a known name, or a knob
                named twice.
        """
        text = text.strip()
        if text in ("", "default", "all_on"):
            return cls()
        if text == "all_off":
            return cls.all_off()
        names = {f.name for f in fields(cls)}
        values: dict[str, bool] = {}
        for item in text.split(","):
            name, _, raw = item.partition("=")
            name = name.strip()
            value = switch_value(raw)
            if name not in names or value is None:
                raise ValueError(f"bad knob {item!r}: use NAME=on|off with NAME in {sorted(names)}")
            if name in values:
                raise ValueError(f"knob {name!r} is given twice in {text!r}; give it once")
            values[name] = value
        return cls(**values)

    def describe(self) -> str:
        """``"stateful=on,irreversible=off,..."``: the inverse of :meth:`parse`."""
        return ",".join(
            f"{f.name}={'on' if getattr(self, f.name) else 'off'}" for f in fields(self)
        )


def _as_bool(value: object) -> bool | None:
    """``value`` as a plain bool if it is one, Python's or NumPy's; else ``None``."""
    if type(value) is bool:
        return value
    kind = type(value)
    if kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_"):
        return bool(value)
    return None


def switch_value(text: str) -> bool | None:
    """One knob's value as text reads it: ``"on"`` is ``True``, ``"off"`` ``False`` (spaces
    around aside), anything else ``None``."""
    return {"on": True, "off": False}.get(text.strip())


KnobsGiven = Knobs | str | Mapping[str, object] | None
"""The forms a ``knobs`` argument takes (:func:`as_knobs`)."""


def read_switch(name: str, value: object) -> bool:
    """One knob's value given on its own: a bool (NumPy's too), or ``on``/``off`` as
    :meth:`Knobs.parse` reads them (not ``bool(value)``: ``bool("off")`` is ``True``).

    Raises:
        TypeError: ``value`` is neither a bool nor text.
        ValueError: text other than ``on``/``off``.
    """
    read = _as_bool(value)
    if read is not None:
        return read
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a bool, 'on' or 'off'; got {type(value).__name__} {value!r}"
        )
    read = switch_value(value)
    if read is None:
        raise ValueError(f"{name} must be a bool, 'on' or 'off'; got {value!r}")
    return read


def as_knobs(value: KnobsGiven, name: str = "knobs") -> Knobs:
    """Knobs given in any of the forms every entry point takes: a :class:`Knobs`, their text
    (:meth:`Knobs.parse`: ``"dynamics=off"``, ``"all_off"``), a mapping of knobs to their
    values (``{"dynamics": False}`` or ``{"dynamics": "off"}``, the others on: the form
    JSON arguments take, such as ``vf-eval -a``'s) or ``None`` (the defaults).

    The one reading of a ``knobs`` argument, so that the Gymnasium, TRL, OpenEnv, verifiers
    and verl entry points take the same forms and refuse any other in the same words.

    >>> as_knobs("dynamics=off").dynamics, as_knobs({"dynamics": False}) == as_knobs(
    ...     "dynamics=off"
    ... ), as_knobs(None) == Knobs()
    (False, True, True)

    Raises:
        TypeError: ``value`` is none of those (its type and a short repr are named), or a
            mapping's value is neither a bool nor text.
        ValueError: knob text :meth:`Knobs.parse` refuses, or a mapping that names no knob
            or whose text value is not ``on``/``off`` (the reason, prefixed by ``name``).
    """
    if value is None:
        return Knobs()
    if isinstance(value, Knobs):
        return value
    if isinstance(value, Mapping):
        names = sorted(f.name for f in fields(Knobs))
        for key in value:
            if key not in names:
                raise ValueError(f"{name}: no knob {key!r}; the knobs are {names}")
        return Knobs(**{key: read_switch(f"{name}.{key}", v) for key, v in value.items()})
    if not isinstance(value, str):
        shown = reprlib.repr(value)
        raise TypeError(
            f"{name} must be Knobs, their text (such as 'dynamics=off'), a mapping (such as "
            f"{{'dynamics': False}}) or None; got {type(value).__name__} {shown}"
        )
    try:
        return Knobs.parse(value)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
