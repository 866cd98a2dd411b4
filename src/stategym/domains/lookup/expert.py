"""The lookup expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert searches every name the question mentions in one round, picks the hit whose name
matches exactly, then reads one hop per round, every branch of the question side by side, and
answers with the id or number it arrives at. Of the style's habits only ``ask`` (everything:
questions the user can only repeat the request to), ``batching``, ``spray`` and ``first_fit``
(the first hit of the right type, the first product, the first branch) change anything here:
nothing is hidden, so ``privileged`` and ``ask="nothing"`` are the expert, and there is no
commit, so ``verify``, ``confirm`` and ``commit`` have nothing to act on.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import finish, rounds
from stategym.agents.style import Style
from stategym.kernel.protocol import Action, Observation, Say, ToolCall, call
from stategym.kernel.task import Task

from .beliefs import SUBJECT_TYPES, Beliefs

QUESTIONS = {
    "subject": "Which product, company or person do you mean exactly?",
    "other": "Which is the other one you want compared?",
    "path": "What exactly do you want to know about it?",
    "measure": "By which measure should I compare them?",
    "pick": "Do you want the lowest or the highest?",
}

Steps = Generator[Action, Observation, Any]


def lookup_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the lookup expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style))


def _script(task: Task, style: Style) -> Script:
    given = task.request.given
    subjects = [str(given["subject"])] + ([str(given["other"])] if "other" in given else [])
    path = tuple(str(given["path"]).split(">"))
    beliefs = Beliefs()
    if style.ask == "everything" and not style.privileged:
        yield Say(" ".join(QUESTIONS.values()))
    searches = [call("search", query=s) for s in subjects]
    if style.batching == "guess":  # the names in place of the ids not yet returned
        searches += [call("get_entity", entity_id=s) for s in subjects]
    yield from _round(beliefs, style, searches + _spray(beliefs, style, subjects))
    kind = SUBJECT_TYPES[path[0]]
    frontier = [beliefs.resolve(s, kind, style.first_fit) for s in subjects]
    if path == ("products",):
        answer = yield from _extreme(
            beliefs, style, subjects, frontier[0], str(given["measure"]), str(given["pick"])
        )
    else:
        answer = yield from _follow(beliefs, style, subjects, frontier, path)
        if "measure" in given:
            answer = yield from _compare(
                beliefs, style, subjects, answer, str(given["measure"]), str(given["pick"])
            )
    yield finish(str(answer) if answer is not None else "none")


def _round(
    beliefs: Beliefs, style: Style, batch: list[ToolCall], enough: Callable[[], bool] | None = None
) -> Steps:
    """Play ``batch`` in one round, or one call per round for a serial agent; a first-fit
    agent stops as soon as it has ``enough``."""
    for sent in rounds(batch, style):
        beliefs.see(sent, (yield sent))
        if style.first_fit and enough is not None and enough():
            return


def _spray(beliefs: Beliefs, style: Style, subjects: list[str]) -> list[ToolCall]:
    """Speculative reads nothing needs: each word of a name alone, and the near misses."""
    words = [w for s in subjects for w in s.split()]
    extra = [call("search", query=w) for w in words]
    extra += [
        call("get_entity", entity_id=h["id"])
        for hits in beliefs.hits.values()
        for h in hits
        if h["name"] not in subjects
    ]
    return extra[: style.spray]


def _reads(ids: Sequence[str | None]) -> list[ToolCall]:
    return [call("get_entity", entity_id=i) for i in ids if i is not None]


def _follow(
    beliefs: Beliefs,
    style: Style,
    subjects: list[str],
    frontier: list[str | None],
    path: tuple[str, ...],
) -> Steps:
    """Follow ``path`` from every subject, one hop per round; returns the ends reached."""
    ends: list[Any] = list(frontier)
    for relation in path:
        yield from _round(beliefs, style, _reads(ends) + _spray(beliefs, style, subjects))
        ends = [beliefs.fact(e, relation) for e in ends]
    return ends if len(subjects) > 1 else ends[0]


def _extreme(
    beliefs: Beliefs,
    style: Style,
    subjects: list[str],
    company: str | None,
    measure: str,
    pick: str,
) -> Steps:
    """Read the company, then all its products; returns the one with the extreme measure."""
    yield from _round(beliefs, style, _reads([company]) + _spray(beliefs, style, subjects))
    products = [str(p) for p in beliefs.fact(company, "products") or []]
    yield from _round(
        beliefs,
        style,
        _reads(products) + _spray(beliefs, style, subjects),
        lambda: any(p in beliefs.facts for p in products),
    )
    known = [p for p in products if beliefs.fact(p, measure) is not None]
    if not known:
        return None
    if style.first_fit:
        return known[0]
    choose = min if pick == "lowest" else max
    return choose(known, key=lambda p: beliefs.fact(p, measure))


def _compare(
    beliefs: Beliefs, style: Style, subjects: list[str], ends: list[Any], measure: str, pick: str
) -> Steps:
    """Read both ends of a comparison; returns the one with the lower or higher measure."""
    ids = [str(e) for e in ends if e is not None]
    yield from _round(beliefs, style, _reads(ids) + _spray(beliefs, style, subjects))
    known = [e for e in ids if beliefs.fact(e, measure) is not None]
    if not known:
        return None
    if style.first_fit:
        return known[0]
    choose = min if pick == "lowest" else max
    return choose(known, key=lambda e: beliefs.fact(e, measure))
