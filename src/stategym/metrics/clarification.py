"""D1 clarification: ask every must-ask slot before using it, and nothing else.

Formula (``docs/metrics.md``)::

    Q_clar = TP / (TP + FN + FP)            (1 when all three are 0)

TP: must-ask slots asked before their first use. A slot is *used* by the first call that may
stand for a gold node its answer gates (whatever the call's arguments), or by the first
proposal of an option (a choice every must-ask slot bears on), or, when neither comes, by
the episode's final decision; a slot the user volunteered (a change of mind
announced) before its use, unasked, drops out of M*. FN = |M*| - TP. FP: the weight of
needless questions: 1 for a slot that is given, irrelevant or already known (asked or
volunteered before), 1 for a repeated proposal (the same option again with no change of mind
announced in between) or a repeated open question (one no single fact answers, "Which option
should I book?": the first is free, and so is one after a change of mind; asked again with
nothing changed, its answer cannot differ), 1 for an open question or a proposal once the
choice is made (a commit ran, or the user accepted a proposal with no change of mind since:
:func:`_decided`), 1 for a proposal the user rejects (unless its reply announces a change of
mind and the user would have accepted it on its wishes of before the change: the user is not
an oracle to query for the answer, and every reason to reject an option is a fact the agent
could ask or look up), 1 for a message the user could not use (nothing asked, nothing
proposed, no open question) and for a report of the act done other than the first after a
commit, and ``ALPHA`` = 0.5 for a slot a tool could have told. A
must-ask slot asked after its use is neither TP nor FP.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from stategym.kernel.claims import reported_options
from stategym.kernel.denials import denied_options, denies_act, takes_back
from stategym.kernel.proposals import names_option, option_keys, part_of_done
from stategym.kernel.task import SlotKind, Task
from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import Outcome, Trajectory

from .declaration import DimensionSpec, EventCounts
from .events import Dimension, Event, Kind
from .gold import PRIORITIES, Gold
from .trace import CallView, SayView, Trace

DIM = Dimension.CLARIFICATION

# Read once: on CPython 3.11 an Enum member read as a class attribute goes through the
# metaclass's attribute hook (EnumType defines __getattr__), several times the cost of a
# module global, and these are read for every call of every round.
_NEEDED, _MISSED, _NEEDLESS = Kind.ASK_NEEDED, Kind.ASK_MISSED, Kind.ASK_NEEDLESS
_COMMIT = Effect.COMMIT

ALPHA = 0.5
"""Weight of a question about a slot a tool could have answered."""

OPEN = "open question"
"""The subject of an open question asked again with no change of mind since the last."""

DECIDED = "open question after the choice"
"""The subject of an open question asked once the choice was made (:func:`_decided`)."""

SETTLED = "proposal after the choice"
"""The subject of a proposal made once the choice was made (:func:`_decided`)."""

REPORT = "report"
"""The subject of a report of the act done that is not the first after a commit
(:func:`_free_report`)."""
FALSE_REPORT = "false report"
"""The subject of a report of the act done, or a ``finish`` answer of a task judged on the
world, that names as done options none of which a commit ran for
(:meth:`ClarificationScorer._misreports`)."""


@dataclass(frozen=True, slots=True)
class Clarification:
    """Clarification counts of one trajectory.

    Attributes:
        quality: Q_clar in [0, 1].
        tp: must-ask slots asked before their first use.
        fn: must-ask slots not asked before their first use.
        fp: weighted needless questions.
        applicable: the task has must-ask slots or the agent asked needlessly.
    """

    quality: float
    tp: int
    fn: int
    fp: float
    applicable: bool


def clarification_quality(tp: int, fn: int, fp: float) -> float:
    """``TP / (TP + FN + FP)``, 1 when nothing was to be asked and nothing was.

    Example: three must-ask slots; the agent asks two before booking, never asks the third,
    and also asks about the seat (irrelevant) and the home airport (derivable):

    >>> clarification_quality(tp=2, fn=1, fp=1 + ALPHA)
    0.4444444444444444
    >>> clarification_quality(0, 0, 0)
    1.0
    """
    total = tp + fn + fp
    return tp / total if total else 1.0


def clarification(trajectory: Trajectory, task: Task) -> float:
    """Q_clar of a finished trajectory, in [0, 1] (see the module docstring)."""
    from .score import score

    return score(trajectory, task).clarification.quality


def ask_rate(trajectory: Trajectory, task: Task) -> float | None:
    """The share of must-ask slots asked before their first use: ``TP / (TP + FN)``.

    ``None`` when the task leaves nothing to ask (the rate is undefined there, not 1);
    pool over episodes as ``sum(TP) / sum(TP + FN)`` so each slot weighs the same. A slot
    asked after its use counts as not asked. Example: the expert asks its must-ask slots
    (1.0); ``ask-nothing`` asks none (0.0); a task whose request states everything: ``None``.
    """
    from .score import score

    counts = score(trajectory, task).clarification
    slots = counts.tp + counts.fn
    return counts.tp / slots if slots else None


class ClarificationScorer:
    """Clarification over the rounds of one episode (see :class:`DimensionScorer`)."""

    def __init__(self, task: Task, gold: Gold, scale: float) -> None:
        self.gold = gold
        self.norm = scale / max(1, len(gold.must_ask))
        self.uses: dict[str, int] = {}
        """For each must-ask slot, the round of the first call that may stand for a node its
        answer gates."""
        self.asked_in_time: set[str] = set()
        self.put: dict[str, int] = {}
        """The round each question that must not be repeated was last put, by subject: an
        option proposed (``propose:X``), the open question (:data:`OPEN`) or the priority
        order (:data:`PRIORITIES`)."""
        self.ranked = frozenset(
            c.topic
            for c in task.constraints
            if c.kind != "policy" and gold.kinds.get(c.topic) in _UNTOLD
        )
        """The hidden slots with a wish on them: the user ranks such a wish only once its
        slot was told (its existence can give the value away), so the order grows with them."""
        self.before = frozenset(task.truth.best_before_change or ())
        """The options the user accepts while it holds the wishes of before its change of mind
        (none: the task has no change of mind)."""
        self.commits: list[int] = []
        """The round of each commit that ran, in order."""
        self.points = max(1, len(task.truth.decisions))
        """The choices to make: once as many commits ran, every choice is made."""
        self.reported: int | None = None
        """The round of the last commit a free report followed (:func:`_free_report`)."""
        self.committed: set[str] = set()
        """The options a commit that ran named (what a report may say was done)."""
        self.options = task.truth.options
        """Every option of the task (what a report may name: :func:`option_keys`)."""
        self.option_keys = dict(option_keys(self.options))  # a plain dict pickles
        self.judged_by_answer = task.judged_by_answer
        self.fp = 0.0
        self.said: list[Event] = []
        self.missed: dict[str, Event] = {}

    def add(self, tr: Trace, calls: Sequence[CallView], say: SayView | None) -> list[Event]:
        if say is not None:
            return self._say(tr, say)
        new: list[Event] = []
        for call in calls:
            if call.ok and call.effect is _COMMIT:
                self.commits.append(call.round)
                if call.option is not None:
                    self.committed.add(call.option)
            new += self._use(tr, self.gold.gated_by(call.candidates), call.round, call.position)
        return new

    def _use(self, tr: Trace, slots: Sequence[str], at: int, position: int | None) -> list[Event]:
        """Record round ``at`` as the first use of each of ``slots`` not used before; the
        events of those that were neither asked in time nor volunteered (``position``: the
        using call's, ``None`` for a proposal)."""
        new: list[Event] = []
        for slot in slots:
            if slot in self.uses:
                continue
            self.uses[slot] = at
            # a slot revealed before its use but not asked in time was volunteered
            if slot in self.asked_in_time or tr.revealed.get(slot, at) < at:
                continue
            event = Event(at, DIM, _MISSED, -1.0, -self.norm, slot, call=position)
            self.missed[slot] = event
            new.append(event)
        return new

    def _say(self, tr: Trace, say: SayView) -> list[Event]:
        # A proposal names the choice, which every must-ask slot bears on: it uses each slot
        # no call used before it, so a question put with it or after it is late. (Audit 16B
        # F1: proposing a guess and asking after the user's yes scored the expert's 1.0
        # whenever the guess was accepted, and a rejected guess cost only the rejection.)
        used = self._use(tr, self.gold.must_ask, say.round, None) if say.proposed else []
        # the last round of an episode that is over is the use of every slot not used yet
        end = tr.end if tr.done else None
        found = _read_say(
            say, tr, self.gold, self.uses, end, self.asked_in_time, self.put, self.ranked
        )
        if _reports(say):
            false = self._misreports(say.text, self.committed)
            if not false and _free_report(say, self.commits, self.reported):
                self.reported = self.commits[-1]
            else:
                found.append((Kind.ASK_NEEDLESS, -1.0, FALSE_REPORT if false else REPORT))
        elif self._misreports(say.text, self.committed, strict=True):
            # a false report costs beside what else the message asked (audit 20A F1: with a
            # question joined to it, "Done! AQ348 is booked." cost nothing); only a plain
            # claim, since a proposal tells of the act to come ("Once you confirm, AQ449 is
            # booked.": 20B F1)
            found.append((Kind.ASK_NEEDLESS, -1.0, FALSE_REPORT))
        decided = _decided(tr, say.round, self.commits, self.points)
        found += _read_choice(say, tr, self.put, self.before, decided)
        new = [
            Event(say.round, DIM, kind, weight, weight * self.norm, subject)
            for kind, weight, subject in found
        ]
        for event in new:
            if event.kind is Kind.ASK_NEEDLESS:
                self.fp -= event.value
        self.said += new
        return used + new

    def _misreports(
        self, text: str, done: Collection[str], last: bool = False, strict: bool = False
    ) -> bool:
        """``text`` denies the act of an option ``done`` ("I could not book AQ449.",
        "AQ449 was not booked.": :func:`~stategym.kernel.denials.denied_options`, audit
        19A F2); or reports as done options none of which is ``done`` ("Done! AQ348 is
        confirmed." after a payment for AQ449, or before any commit: audit 18A F2); or, as
        the episode's ``last`` word (the ``finish`` answer, ``done`` what the world ends
        committed to), reports nothing done yet denies outright that anything was done
        while something was ("I could not complete the request; nothing was booked,
        ordered, paid or deleted.": :func:`~stategym.kernel.denials.denies_act`).

        *Why*: telling the user what was done is free once per commit because it is what a
        careful agent does; a report of what was not done misleads the user about their
        money (told AQ348 is booked, they act on it), and it scored the expert's R exactly
        (171/171 committing tasks of the six stateful domains, every knob setting). It
        costs what any needless message costs. Only the sentences that report are read,
        and only options they name: a report that names nothing, or names the option done
        beside others, is no false report ("Booked AQ449; AQ348 was sold out."), nor is one
        that names the parts of an option done ("Ordered NO759, NO558." for the order
        ``NO759x1+NO558x1``). ``strict``: the message also asks or proposes, and only its
        plain claims are read as reports (``reported_options``' ``strict``).
        """
        options = self.option_keys
        if strict and not names_option(text, options):
            return False  # a claim or a denial beside a question names the option

        def none_done(named: Iterable[str]) -> bool:
            # an option that is part of one done counts as done (shop's order of several
            # offers, "NO759x1+NO558x1", reported as "Ordered NO759, NO558.")
            return not any(part_of_done(option, done) for option in named)

        reported = reported_options(text, options, strict)
        # a denial of an option the text also reports done is of an earlier try ("I couldn't
        # book AQ449 because the hold had expired, so I retried and it's now booked": 19D F2),
        # in whatever words it reports it, though not in what a question says before its
        # joining word unless the text tells of a retry (``takes_back``: audit 32 F1)
        denied = denied_options(text, options)
        said = reported_options(text, options, stated=takes_back) if denied else ()
        denied = tuple(o for o in denied if o not in said)
        if not none_done(denied):
            return True
        if reported:
            return none_done(reported)
        return last and bool(done) and denies_act(text)

    def _false_answer(self, tr: Trace, outcome: Outcome | None) -> int | None:
        """The ``finish`` round, if its answer, in a task judged on the world, is the last
        report to the user and a false one (:meth:`_misreports`, against what the world ends
        committed to)."""
        answer, end = tr.answer, tr.end
        if not answer or end is None or self.judged_by_answer:
            return None
        done = self.committed if outcome is None else outcome.committed
        return end if self._misreports(answer, done, last=True) else None

    def close(self, tr: Trace, outcome: Outcome | None) -> tuple[Clarification, list[Event]]:
        gold = self.gold
        end = self._false_answer(tr, outcome)
        if end is not None:
            false = Event(end, DIM, Kind.ASK_NEEDLESS, -1.0, -self.norm, FALSE_REPORT, True)
            self.said.append(false)
            self.fp += 1.0
        volunteered = set()
        for slot in gold.must_ask:
            if slot in self.asked_in_time or slot in self.missed:
                continue
            use = self.uses.get(slot, tr.end)
            if use is None:
                continue  # not used yet: neither missed nor volunteered
            if tr.revealed.get(slot, use) < use:
                volunteered.add(slot)
            else:  # never used by a call: the episode's end is its use
                self.missed[slot] = Event(use, DIM, Kind.ASK_MISSED, -1.0, -self.norm, slot, True)
        tp = len(self.asked_in_time)
        fn = len(gold.must_ask) - tp - len(volunteered)
        applicable = bool(gold.must_ask) or self.fp > 0
        scored = Clarification(clarification_quality(tp, fn, self.fp), tp, fn, self.fp, applicable)
        events = self.said + [self.missed[s] for s in gold.must_ask if s in self.missed]
        return scored, events


def running_clarification(counts: EventCounts, gold: Gold) -> tuple[float, bool]:
    """Q_clar from the events so far: a must-ask slot neither asked nor missed yet counts as
    missed until the episode is over (asking it is progress)."""
    count = counts.count
    tp, fn = count.get(_NEEDED, 0), count.get(_MISSED, 0)
    fp = -counts.total.get(_NEEDLESS, 0.0)
    pending = 0 if counts.done else max(0, len(gold.must_ask) - tp - fn)
    return clarification_quality(tp, fn + pending, fp), bool(gold.must_ask) or fp > 0


def _read_say(
    say: SayView,
    tr: Trace,
    gold: Gold,
    uses: dict[str, int],
    end: int | None,
    asked_in_time: set[str],
    put: dict[str, int],
    ranked: frozenset[str],
) -> list[tuple[Kind, float, str]]:
    """The clarification events of one message: ``(kind, value, subject)``."""
    out: list[tuple[Kind, float, str]] = []
    for slot in say.asked:
        known = tr.revealed.get(slot, say.round) < say.round
        if (
            slot == PRIORITIES
            and known
            and slot in gold.must_ask
            and _ranks_more(put.get(slot), say.round, tr, ranked)
        ):
            continue  # the order now ranks a wish the last answer could not name: no waste
        kind = gold.kinds.get(slot)
        if slot in gold.must_ask and not known:
            use = uses.get(slot, end)
            if use is None or say.round < use:
                asked_in_time.add(slot)
                out.append((Kind.ASK_NEEDED, 1.0, slot))
            else:
                out.append((Kind.ASK_LATE, 0.0, slot))
        elif kind is SlotKind.DERIVABLE and not known:
            out.append((Kind.ASK_NEEDLESS, -ALPHA, slot))
        else:
            out.append((Kind.ASK_NEEDLESS, -1.0, slot))
    if say.priority_asked and PRIORITIES not in say.asked:
        out.append((Kind.ASK_NEEDLESS, -1.0, PRIORITIES))
    if PRIORITIES in say.asked:
        put[PRIORITIES] = say.round
    if not say.understood and _names_nothing(say):
        out.append((Kind.ASK_NEEDLESS, -1.0, "unusable message"))
    return out


def _reports(say: SayView) -> bool:
    """The user understood the message, yet it asked, proposed and opened nothing: it reported
    the act done ("Done! Your booking AQ449 is confirmed."; the user's ``Proposal.reported``)."""
    return say.understood and _names_nothing(say)


def _names_nothing(say: SayView) -> bool:
    """The message asked no slot or order, proposed nothing and opened no question."""
    return not (say.asked or say.priority_asked or say.proposed is not None or say.open)


def _free_report(say: SayView, commits: Sequence[int], reported: int | None) -> bool:
    """A report is free when it is the first since the last commit that ran before it; any
    other costs 1 (:data:`REPORT`), as a message that asks nothing does.

    *Why*: telling the user what was done is what a careful agent does once its act ran, and
    the user reads it ("Thank you."); charged as a message the user could not use, a closing
    "Done! Your booking AQ449 is confirmed." cost 0.107 of R on every seed that commits (85/100
    of seeds 0-19 of the five stateful domains; audit 7c F7). Free only once per commit, and
    only after one, so reports cannot pad an episode or stand in for a question.
    """
    made = [c for c in commits if c < say.round]
    return bool(made) and reported != made[-1]


def _read_choice(
    say: SayView, tr: Trace, put: dict[str, int], before: frozenset[str], decided: bool
) -> list[tuple[Kind, float, str]]:
    """The clarification events of a message's proposal and open question (``before``: the
    options the user accepts while it holds the wishes of before its change of mind;
    ``decided``: :func:`_decided` at the message's round)."""
    out: list[tuple[Kind, float, str]] = []
    if say.proposed is not None:
        subject = f"propose:{say.proposed}"
        if _repeated(put.get(subject), say.round, tr):
            out.append((Kind.ASK_NEEDLESS, -1.0, subject))
        elif say.accepted is False and not _overtaken(say, tr, before):
            # the user is not an oracle: what it rejects follows from its slots, its
            # priorities and the world, all of which the agent can ask or look up
            out.append((Kind.ASK_NEEDLESS, -1.0, f"rejected:{say.proposed}"))
        elif decided:
            # the choice is made: another option, even one as good, can change nothing
            out.append((Kind.ASK_NEEDLESS, -1.0, SETTLED))
        put[subject] = say.round
    if say.open:
        # exempt from the unusable-message charge, but free only once per change of mind,
        # and only while the choice is still to make
        if _repeated(put.get(OPEN), say.round, tr):
            out.append((Kind.ASK_NEEDLESS, -1.0, OPEN))
        elif decided:
            out.append((Kind.ASK_NEEDLESS, -1.0, DECIDED))
        put[OPEN] = say.round
    return out


def _overtaken(say: SayView, tr: Trace, before: frozenset[str]) -> bool:
    """The proposal was rejected only because of the change of mind its reply announced: the
    user would have accepted it on the wishes it held before (``before``).

    *Why*: waived whenever the reply announced a change, a proposal wrong before and after it
    cost nothing (bank seed 0: CA33EXP proposed as the change of mind fell due, R = 1.000,
    the expert's; audit 6a §3).
    """
    return say.round in tr.updates and say.proposed in before


def _decided(tr: Trace, at: int, commits: Sequence[int], points: int) -> bool:
    """The choice was made before round ``at``: a commit ran for every choice to make
    (``points``: the task's decision points, at least one; ``commits``: the rounds of the
    commits that ran), or the user accepted a proposal since the last commit, with no change
    of mind announced since (the rule by which D4 reads an acceptance).

    A change of mind reopens an accepted proposal, never a commit (a second commit at the
    same decision point is harmful). With several decision points, a commit settles one
    choice and the next is open again: a proposal or open question for it is free until the
    user accepts one (every task of the shipped domains has at most one).

    *Why the proposal too*: once the user accepted X, proposing each other tied best option
    Y in turn ("Yes, Y works for me") and then paying X cost nothing, after the commit or
    between the acceptance and the commit (audit 7 F2: R = the expert's on 49/49 and 34/49
    tasks with ties).
    """
    made = [c for c in commits if c < at]
    if len(made) >= points:
        return True
    since = made[-1] if made else -1
    return any(since < r < at and not any(r < u < at for u in tr.updates) for r, _ in tr.accepted)


def _repeated(last: int | None, at: int, tr: Trace) -> bool:
    """The same question was put in round ``last`` and no change of mind was announced in
    the rounds between: asking it again at ``at`` cannot get a different answer."""
    return last is not None and not any(last < u < at for u in tr.updates)


def _ranks_more(last: int | None, at: int, tr: Trace, ranked: frozenset[str]) -> bool:
    """Since the priority order was last asked in round ``last``, a hidden slot with a wish
    on it was told (by round ``at``, the question's own round included) or the user changed
    its mind: the order asked again at ``at`` can rank more than it did."""
    if last is None:
        return False
    told = any(last < tr.revealed.get(slot, -1) <= at for slot in ranked)
    return told or any(last < u < at for u in tr.updates)


_UNTOLD = (SlotKind.MISSING, SlotKind.IRRELEVANT)
"""Slot kinds the agent learns only from the user (the user's own ``told`` starts without
them)."""


def _applies(task: Task, gold: Gold) -> bool:
    return bool(gold.must_ask)


DECLARATION = DimensionSpec(DIM, "clar", _applies, ClarificationScorer, running_clarification)
"""Clarification, declared once (see :mod:`stategym.metrics.declaration`)."""

__all__: Sequence[str] = (
    "ALPHA",
    "DECIDED",
    "DECLARATION",
    "OPEN",
    "REPORT",
    "SETTLED",
    "Clarification",
    "ClarificationScorer",
    "ask_rate",
    "clarification",
    "clarification_quality",
    "running_clarification",
)
