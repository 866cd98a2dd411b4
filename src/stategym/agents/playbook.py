"""The moves every domain's styled expert makes, written once.

A domain's expert (see ``domains/*/expert.py``) reads the request, asks what only the user
knows, looks things up, then decides and commits. What differs between domains is which
tools it calls and what an option is; how a :class:`~stategym.agents.style.Style` bends the
play is the same everywhere and lives here:

* the opening: what the agent knows before acting (:func:`known_at_start`), its questions
  (:func:`questions`), and the guesses of an agent that asks nothing (:func:`assume`);
* rounds of calls, parallel or one call per round (:func:`rounds`);
* choosing an option by the user's priorities (:func:`worth`, :func:`choose`);
* proposing the choice to the user (:func:`propose`, :func:`agreed`);
* hold-style commits that do not look at the hold first (:func:`blind_commit`);
* the loop that asks for the priorities when they matter, picks, and tries to commit until
  it succeeds or runs out of re-decisions (:func:`decide_and_commit`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from stategym.kernel.domain import lookup
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.kernel.task import Task, Value, final_values

from .base import Script
from .hearing import Knowledge
from .style import Style

T = TypeVar("T")
Steps = Generator[Action, Observation, T]
"""Part of a script: yields actions, receives observations, returns a ``T``."""

RE_DECISIONS = 12
"""How often the loop decides again (after price moves, sell-outs, refusals and changes of
mind) before it gives up."""


class Option(Protocol):
    """Anything an expert can choose: it has the id the user and the scorer know it by."""

    @property
    def id(self) -> str: ...


Choice = TypeVar("Choice", bound=Option)


def offered_only(calls: Sequence[ToolCall], task: Task) -> list[ToolCall]:
    """The calls whose tools an episode of ``task`` offers (``Domain.available_tools``): a
    speculative read of a tool its knobs leave out (a list of the agent's own writes, with
    ``stateful`` off) leaves its slot empty, rather than getting the whole round refused or
    moving the next read (one of a value nothing has shown yet) into its slot."""
    offered = {t.name for t in lookup(task.domain).available_tools(task.knobs)}
    return [c for c in calls if c.name in offered]


def finish(answer: str) -> Action:
    """End the episode with ``answer`` (an option id or ``"none"`` when stateless)."""
    return CallBatch((call("finish", answer=answer),))


def known_at_start(task: Task, style: Style) -> tuple[dict[str, Value], tuple[str, ...] | None]:
    """The slot values and preference order the agent knows before its first action.

    That is what the request states; a privileged agent also knows every final value and
    the true order of the preferences.
    """
    values = dict(task.request.given)
    order = tuple(str(values["priorities"]).split(">")) if "priorities" in values else None
    if style.privileged:
        values.update(final_values(task))
        prefs = {c.id for c in task.constraints if c.kind == "preference"}
        order = tuple(c for c in task.priority_order() if c in prefs)
    return values, order


def questions(
    style: Style, known: Mapping[str, Value], asked: Mapping[str, str], user_facts: Iterable[str]
) -> Say | None:
    """The opening questions, in one message, or ``None`` when the agent asks nothing.

    Args:
        style: ``ask="needed"`` asks the user facts not known yet, ``"everything"`` asks
            every question in ``asked``, ``"nothing"`` (and a privileged agent) none;
            ``style.skip`` names facts it leaves out whatever it asks.
        known: the slot values known so far.
        asked: the expert's question for each slot it can ask about.
        user_facts: the slots only the user knows, in the order to ask them.
    """
    if style.privileged or style.ask == "nothing":
        return None
    if style.ask == "everything":
        names = list(asked)
    else:
        names = [name for name in user_facts if name not in known]
    names = [name for name in names if name not in style.skip]
    return Say(" ".join(asked[n] for n in names)) if names else None


def assume(style: Style, values: dict[str, Value], guesses: Mapping[str, Value]) -> None:
    """An agent that asks nothing takes ``guesses`` for the user facts it does not know (and
    any agent for the facts it skips)."""
    for name, guess in guesses.items():
        if style.ask == "nothing" or name in style.skip:
            values.setdefault(name, guess)


def rounds(batch: Sequence[ToolCall], style: Style) -> list[CallBatch]:
    """One parallel round, or one round per call for a serial agent; no calls, no round."""
    if style.batching == "serial":
        return [CallBatch((c,)) for c in batch]
    return [CallBatch(tuple(batch))] if batch else []


def worth(hits: Iterable[str], order: Sequence[str]) -> int:
    """How much the preferences met are worth under ``order``, lexicographically.

    The i-th of n ranked preferences weighs ``2 ** (n - i)``, more than all after it
    together, so one option beats another exactly when it meets the first preference on
    which they differ. Example: under ``("a", "b")``, ``{"a"}`` is worth 4, ``{"b"}`` 2.
    """
    weights = {p: 2 ** (len(order) - i) for i, p in enumerate(order)}
    return sum(weights.get(p, 0) for p in hits)


def choose(options: Sequence[T], style: Style, rank: Callable[[T], Any]) -> T | None:
    """The option to go for: none without options, the first for a first-fit agent, else
    the one whose ``rank`` is smallest (the first of ties)."""
    if not options:
        return None
    if style.first_fit:
        return options[0]
    return min(options, key=rank)


def asks_priorities(style: Style, order: tuple[str, ...] | None) -> bool:
    """Whether the agent would ask for the priority order, were it to matter: it does not
    know it and neither guesses (ask nothing, or skips the order) nor takes the first fit."""
    guesses = style.ask == "nothing" or "priorities" in style.skip
    return order is None and not guesses and not style.first_fit


def propose(
    text: str, style: Style, see: Callable[[Observation], object]
) -> Steps[list[Observation]]:
    """Propose the choice in ``text`` (three times over for confirm spam), taking in each
    reply; returns the replies."""
    replies = []
    for _ in range(3 if style.confirm == "spam" else 1):
        reply = yield Say(text)
        see(reply)
        replies.append(reply)
    return replies


def agreed(reply: Observation, option: str) -> bool:
    """Whether the user's ``reply`` accepts the proposal of ``option``."""
    return f"Yes, {option}" in (reply.user or "")


def blind_commit(
    holds: list[ToolCall],
    commit: Callable[[str], ToolCall],
    style: Style,
    see: Callable[[Observation], object],
) -> Steps[None]:
    """Hold and commit without looking at the holds first.

    A same-round agent commits in the holds' own round, guessing the hold ids (``H1``,
    ``H2``... in the order of the holds); otherwise every hold that succeeded is committed
    in the next round.

    Args:
        holds: the hold calls, one per option.
        commit: the commit call for a hold id.
        style: the agent's habits.
        see: takes in the commit round's observation.
    """
    if style.verify == "same_round":
        commits = [commit(f"H{i + 1}") for i in range(len(holds))]
        see((yield CallBatch(tuple(holds + commits))))
        return
    held = yield CallBatch(tuple(holds))
    ids = [r.content["hold_id"] for r in held.results if r.ok]
    see((yield CallBatch(tuple(commit(h) for h in ids))))


@dataclass(slots=True)
class Agreement:
    """The option the user last agreed to, so that a re-decision that lands on it again
    (after a failed commit) does not propose it a second time."""

    option: str | None = None

    def pending(self, style: Style, option: str) -> bool:
        """Whether to propose ``option`` before committing to it."""
        return style.confirm != "skip" and self.option != option


@dataclass(frozen=True, slots=True)
class Decision(Generic[Choice]):
    """A domain's side of :func:`decide_and_commit`.

    Attributes:
        question: the question that asks the user for the priority order.
        order_matters: whether the priority order decides between the feasible options
            known so far.
        pick: the best option as far as the agent knows (``None``: nothing fits).
        attempt: commit to an option; yields the rounds it takes and returns the final
            answer, or ``None`` to decide again. It may ask the user (see
            :class:`Agreement`) and rule options out.
        nothing: the final answer when nothing fits (stateful tasks).
        give_up: the final answer when the re-decisions run out.
        answer: a stateless task's answer naming the choice, as the domain's ``answer_form``
            asks for it (``None``: the choice's id).
    """

    question: str
    order_matters: Callable[[], bool]
    pick: Callable[[], Choice | None]
    attempt: Callable[[Choice, Agreement], Steps[str | None]]
    nothing: str
    give_up: str
    answer: Callable[[Choice], str] | None = None


def decide_and_commit(
    beliefs: Knowledge, style: Style, stateful: bool, decision: Decision[Choice]
) -> Script:
    """Decide, and commit to the choice, again and again until it is done.

    Each time: ask for the priority order if the agent would and it matters; pick the best
    option; with nothing to pick, end with nothing done; in a stateless task, answer with
    the option's id; otherwise attempt the commit, which ends the episode or leads to
    another decision.
    """
    agreement = Agreement()
    for _ in range(RE_DECISIONS):
        if asks_priorities(style, beliefs.order) and decision.order_matters():
            beliefs.see((yield Say(decision.question)))
            continue
        choice = decision.pick()
        if choice is None:
            yield finish(decision.nothing if stateful else "none")
            return
        if not stateful:
            yield finish(choice.id if decision.answer is None else decision.answer(choice))
            return
        beliefs.changed = False
        answer = yield from decision.attempt(choice, agreement)
        if answer is not None:
            yield finish(answer)
            return
    yield finish(decision.give_up)
