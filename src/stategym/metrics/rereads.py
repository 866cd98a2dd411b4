"""Which reads re-read what a change changed: the excuse D3's economy gives one read per
fired event (``docs/metrics.md``, D3 Economy).

A read re-reads a change of the world when its result shows the change against the agent's
last look at it (:func:`rereads`), and is excused only while that look predates the change
(:func:`known_by`, :func:`stale`); a change of mind is re-read by a call of a node the changed
slot gates, or that passes its new value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stategym.kernel.task import Event as TaskEvent

from .gold import Gold
from .trace import CallView, Trace


def rereads(tr: Trace, gold: Gold, call: CallView, event: int) -> bool:
    """Whether ``call`` re-reads what the fired ``event`` changed: a change in the world
    (``table[key].field``) its result can show (:func:`_shows`); a change of mind about a slot
    that gates a node the call stands for, or whose new value the call passes."""
    change = gold.events[event]
    if change.slot:
        gated = gold.gates.get(change.slot, frozenset())
        return not gated.isdisjoint(call.candidates) or _holds(call.arguments, change.value)
    return bool(change.key) and _shows(tr, call, change)


def _shows(tr: Trace, call: CallView, change: TaskEvent) -> bool:
    """Whether ``call``'s result shows the agent the change of the world, against its last
    look at what changed (:func:`_last_look`; none: a first look re-reads nothing): the same
    read again, when what it holds of the changed entity differs from what that look held (a
    fare gone from the day's search once it sold out); another read, when it holds the
    entity's record with the changed field at its new value and the look did not. A call
    that failed shows nothing.

    *Why*: a read that merely named the changed entity was a re-read of it, so a
    byte-identical copy of an earlier read that mentions the key (bank ``list_accounts()``,
    which holds the currency code but no rate, after a rate moved) was excused: R = 1.000,
    the expert's, on 8-9 of 20 seeds of shop, bank and cloud (audit 7b F1).
    """
    if not call.ok:
        return False
    key, field, value = change.key, change.field, change.value
    now = _records(call, key)
    if not now and not _records(_last_copy(tr, call), key):
        return False  # no entity here, nor in the read it repeats: nothing to compare
    look = _last_look(tr, call, change)
    if look is None:
        return False
    before = _records(look, key)
    if _same_read(look, call):
        return now != before
    return _holding(now, field, value) and not _holding(before, field, value)


def _last_look(tr: Trace, call: CallView, change: TaskEvent) -> CallView | None:
    """The agent's last look before ``call`` at what the change of the world changed: the
    latest call earlier in the log (an earlier place in its own round counts) that ran and
    is the same read as ``call`` (same tool and arguments: it showed the entity, or that it
    was not there), or whose result holds the changed entity's record with the changed
    field (at any value)."""
    at, key, field = (call.round, call.position), change.key, change.field
    for look in reversed(tr.calls):
        if (look.round, look.position) >= at or not look.ok:
            continue
        if _same_read(look, call) or any(field in r for r in _records(look, key)):
            return look
    return None


def _last_copy(tr: Trace, call: CallView) -> CallView | None:
    """The latest call before ``call`` that ran and is the same read (no result walked)."""
    at = (call.round, call.position)
    for copy in reversed(tr.calls):
        if (copy.round, copy.position) < at and copy.ok and _same_read(copy, call):
            return copy
    return None


def _same_read(one: CallView, other: CallView) -> bool:
    return one.name == other.name and one.arguments == other.arguments


def _records(call: CallView | None, key: str) -> list[Mapping[str, Any]]:
    """What ``call``'s result holds of the entity ``key``, in order: every mapping in it with
    ``key`` among its own values (``{"flight_id": key, "price": 530}``), and the whole result
    when it is a mapping and the call's arguments name ``key`` (``get_volume_activity(key)``).
    Empty for a call that failed, or none."""
    if call is None:
        return []
    content, found = call.content, []
    named = _holds(call.arguments, key)
    stack: list[Any] = [content]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            values = list(item.values())
            if (named and item is content) or any(isinstance(v, str) and v == key for v in values):
                found.append(item)
            stack.extend(reversed(values))
        elif isinstance(item, _SEQUENCES):
            stack.extend(reversed(item))
    return found


def _holding(records: list[Mapping[str, Any]], field: str, value: object) -> bool:
    return any(field in record and record[field] == value for record in records)


def known_by(tr: Trace, gold: Gold, fired_at: int, event: int) -> int:
    """The last round whose calls were made before the agent could see ``event``'s change: a
    change of the world, the round it fired at the end of (a read after it shows it); a change
    of mind, the round whose observation announced it (:attr:`Trace.updates`), as every
    dimension counts one, or the firing round while it is not announced yet."""
    if not gold.events[event].slot:
        return fired_at
    return next((u for u in tr.updates if u >= fired_at), fired_at)


def stale(tr: Trace, gold: Gold, call: CallView, known: int, event: int) -> bool:
    """Whether the agent's last look before ``call`` at what ``event`` changed was made before
    the change could show (in round ``known`` or earlier: :func:`known_by`): for a change of
    the world, :func:`_last_look`; for a change of mind, a call earlier in the log than
    ``call`` (an earlier place in its own round counts) that was well-formed and that
    :func:`rereads` the change. No look at all: the call reads it for the first time, which
    re-reads nothing.

    *Why*: the excuse is for a read the change made out of date. Asked only whether the event
    fired before the call, a plain duplicate of the first read after an event (the same call
    twice in that round, or again in the next round) was excused: R = 1.000, the expert's, on
    7-21 of 21 seeds of travel, shop, bank, cloud and a synthetic domain (audit 6a §1).
    """
    change = gold.events[event]
    if not change.slot:
        look = _last_look(tr, call, change)
        return look is not None and look.round <= known
    at = (call.round, call.position)
    for look in reversed(tr.calls):  # the latest look first
        earlier = (look.round, look.position) < at
        if earlier and not look.malformed and rereads(tr, gold, look, event):
            return look.round <= known
    return False


def _holds(value: object, target: object) -> bool:
    """Whether ``target`` is one of the strings and numbers (not booleans) inside a JSON
    value (what a call passed or observed): ``target in`` the set of them, found without
    building the set, stopping at the first hit."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        kind = type(item)  # the exact JSON types first: isinstance is the slow path
        if kind is str or kind is int or kind is float:
            found = item is target or item == target
        elif kind is dict:
            stack.extend(item.values())
            continue
        elif kind is list or kind is tuple:
            stack.extend(item)
            continue
        else:
            found = _holds_other(item, stack, target)
        if found:
            return True
    return False


def _holds_other(item: object, stack: list[object], target: object) -> bool:
    """:func:`_holds` on a value of any other type (a subclass of a JSON type, ``None``)."""
    if isinstance(item, dict):
        stack.extend(item.values())
    elif isinstance(item, _SEQUENCES):
        stack.extend(item)
    elif isinstance(item, _SCALARS) and not isinstance(item, bool):
        return item is target or item == target
    return False


# tuples, not ``list | tuple``: that expression builds a new union object at every test
_SEQUENCES = (list, tuple)
_SCALARS = (str, int, float)

__all__ = ["known_by", "rereads", "stale"]
