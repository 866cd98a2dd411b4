"""Judging calendars: their feasible options, the shape those options have, and the best ones.

Generation judges many trial calendars (each shaping attempt, each trial event), so the
options of a day are listed once per distinct day (:func:`listed_day`) and the options of a
calendars object once (:class:`Judge`).
"""

from __future__ import annotations

import operator

from stategym.generation import order_matters
from stategym.kernel.task import best_options

from .shape import Calendars
from .timegrid import Option, Scene, day_options, option_id

_hits = operator.attrgetter("hits")
DayKey = tuple[object, ...]
"""What one day's options depend on within one task (see :func:`listed_day`)."""


def realised(usable: list[Option], prefs: tuple[str, ...]) -> str:
    """The shape the feasible options of some calendars have: ``fits``, ``conflict``,
    ``nothing`` or ``plain`` (no option meets every preference, but one trade-off is best in
    any order)."""
    if not usable:
        return "nothing"
    every_pref = frozenset(prefs)
    distinct = set(map(_hits, usable))  # options share a handful of hit sets
    if any(hits >= every_pref for hits in distinct):
        return "fits"
    return "conflict" if order_matters(distinct, prefs) else "plain"


def listed_day(
    cal: Calendars, scene: Scene, day: int, memo: dict[DayKey, list[Option]]
) -> list[Option]:
    """The feasible options of one day of ``cal``, reused from ``memo`` when that day is
    unchanged: an event trial changes one day, so judging it need not list the other days
    again. ``scene`` is ``cal``'s (read only for its duration, rooms and wishes, which are one
    task's throughout, as is ``memo``)."""
    view = cal.day_view(day)
    taken = tuple(cal.room_busy.get((room, day), 0) for room, _ in cal.rooms)
    # the options read the day only through its merged masks and the rooms' bookings
    key = (
        day,
        view.required_work,
        view.required_busy,
        view.optional_work,
        view.optional_busy,
        taken,
    )
    found = memo.get(key)
    if found is None:
        found = memo[key] = day_options(scene, view, taken, only_feasible=True)
    return found


def usable_options(cal: Calendars, by_day: dict[DayKey, list[Option]]) -> list[Option]:
    """The feasible options of ``cal``, in :func:`~.timegrid.options` order."""
    scene = cal.wishes()
    return [o for day in cal.days for o in listed_day(cal, scene, day, by_day)]


def every_option(cal: Calendars) -> list[Option]:
    """Every option of ``cal``, feasible or not: ``list(options(cal.scene()))``."""
    scene = cal.wishes()
    found: list[Option] = []
    for day in cal.days:
        taken = tuple(cal.room_busy.get((room, day), 0) for room, _ in cal.rooms)
        found += day_options(scene, cal.day_view(day), taken)
    return found


def option_table(found: list[Option], ids: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """The constraint ids among ``ids`` each option satisfies."""
    keep = frozenset(ids)
    # options share a handful of ``hits`` sets: intersecting each once keeps tasks small
    kept = {hits: hits & keep for hits in set(map(_hits, found))}
    table: dict[str, frozenset[str]] = {}
    # an id is its time's id with the room appended, and options come grouped by time
    time: tuple[int, ...] = ()
    prefix = ""
    for day, start, duration, room, hits in found:
        if time != (day, start, duration):
            time, prefix = (day, start, duration), option_id(day, start, duration, "")
        table[prefix + room] = kept[hits]
    return table


class Judge:
    """Judges calendars against one task's constraints, remembering what it has listed.

    Args:
        by_day: the per-day memo of :func:`listed_day`, shared with the shaping.
        ids: the task's constraint ids; ``nothing`` those sending nothing satisfies.
        weights: their priority weights.
        prefs: the active preferences, most important first.
    """

    def __init__(
        self,
        by_day: dict[DayKey, list[Option]],
        ids: tuple[str, ...],
        nothing: frozenset[str],
        weights: dict[str, int],
        prefs: tuple[str, ...],
    ) -> None:
        self.by_day = by_day
        self.keep = frozenset(ids)
        self.nothing = nothing
        self.weights = weights
        self.prefs = prefs
        # feasible options of every calendars judged; holding the calendars keeps their
        # ids from being reused by a later trial
        self.seen: dict[int, tuple[Calendars, list[Option]]] = {}
        self.verdicts: dict[int, tuple[tuple[str, ...], bool]] = {}

    def remember(self, cal: Calendars, usable: list[Option]) -> None:
        """Record the feasible options of ``cal``, already listed."""
        self.seen[id(cal)] = (cal, usable)

    def options_of(self, cal: Calendars) -> list[Option]:
        """The feasible options of ``cal``."""
        if id(cal) not in self.seen:
            self.seen[id(cal)] = (cal, usable_options(cal, self.by_day))
        return self.seen[id(cal)][1]

    def best_of(self, usable: list[Option]) -> tuple[str, ...]:
        """The ids of the best options among ``usable``, sorted."""
        # only feasible options can beat sending nothing, and options meeting the same
        # constraints score the same, so each distinct set of hits is scored once
        distinct = list(dict.fromkeys(map(_hits, usable)))
        table = {str(i): hits & self.keep for i, hits in enumerate(distinct)}
        top = {distinct[int(i)] for i in best_options(table, self.nothing, self.weights)}
        return tuple(sorted(o.id for o in usable if o.hits in top))

    def judge(self, cal: Calendars) -> tuple[tuple[str, ...], bool]:
        """The best options of ``cal``, and whether the priority order decides between them."""
        # the task's final calendars were judged while planning its events (when it has any)
        verdict = self.verdicts.get(id(cal))
        if verdict is None:
            usable = self.options_of(cal)  # also keeps ``cal``, so its id stays its own
            verdict = self.best_of(usable), realised(usable, self.prefs) == "conflict"
            self.verdicts[id(cal)] = verdict
        return verdict
