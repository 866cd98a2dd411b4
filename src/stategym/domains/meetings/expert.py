"""The meetings expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the organiser knows, reads the
profile and the room list in one round, then fans out every time-zone lookup, calendar and
room schedule in one parallel round, picks the best time by the organiser's priorities,
holds the room (which also shows who is unavailable right now), proposes it, and sends the
invitation once the organiser agrees.
"""

from __future__ import annotations

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    assume,
    blind_commit,
    choose,
    decide_and_commit,
    known_at_start,
    offered_only,
    propose,
    questions,
    rounds,
)
from stategym.agents.style import Style
from stategym.generation import order_matters
from stategym.kernel.protocol import CallBatch, Observation, ToolCall, call
from stategym.kernel.task import Task, Value

from .beliefs import Beliefs
from .generator import ROOM_NAMES
from .spec import split_names
from .timegrid import Option, Scene, clock, feasible, options, rank

QUESTIONS = {
    "optional": "Which attendees are optional?",
    "duration": "How long should the meeting last?",
    "time_of_day": "Do you prefer a morning or an afternoon slot?",
    "room_feature": "Does the room need any equipment, such as video or a whiteboard?",
    "attendees": "Who should attend?",
    "window": "Which days could the meeting be on?",
    "working_hours": "What are your working hours?",
    "timezone": "Which time zones are the attendees in?",
    "agenda": "What is the agenda?",
    "priorities": "If I can't satisfy every wish, which should I prioritize?",
}
USER_FACTS = ("optional", "duration", "time_of_day", "room_feature")
GUESSES: dict[str, Value] = {
    "optional": "",
    "duration": 60,
    "time_of_day": "any",
    "room_feature": "any",
}
"""What an agent that asks nothing assumes: everyone required, an hour, any time, any room."""


def meetings_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the meetings expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style, first))


class _Plan:
    """What the script works from: the request's attendees and days, and the beliefs."""

    def __init__(self, task: Task, style: Style) -> None:
        given = task.request.given
        self.task = task
        self.style = style
        self.names = split_names(str(given["attendees"]))
        first, last = (int(x) for x in str(given["window"]).split("-"))
        self.days = tuple(range(first, last + 1))
        values, order = known_at_start(task, style)
        self.beliefs = Beliefs(values=values, order=order)
        self._views: dict[tuple[int, tuple[int, ...]], tuple[Scene, list[Option]]] = {}

    def _view(self, days: tuple[int, ...] | None) -> tuple[Scene, list[Option]]:
        """The scene and its feasible options, rebuilt only when the beliefs changed."""
        key = (self.beliefs.version, self.days if days is None else days)
        if key not in self._views:
            scene = self.beliefs.scene(self.names, key[1])
            self._views[key] = (scene, [o for o in options(scene) if feasible(o)])
        return self._views[key]

    def scene(self) -> Scene:
        return self._view(None)[0]

    def options(self, days: tuple[int, ...] | None = None) -> list[Option]:
        """Feasible options as far as the agent knows, not yet ruled out."""
        return [o for o in self._view(days)[1] if o.id not in self.beliefs.excluded]

    def pick(self, days: tuple[int, ...] | None = None) -> Option | None:
        """The best option the agent knows of (the first one for a first-fit agent)."""
        order = self.beliefs.order or self.beliefs.default_order(self.scene())
        return choose(self.options(days), self.style, lambda o: -rank(o.hits, order))

    def order_matters(self) -> bool:
        return order_matters((o.hits for o in self.options()), self.scene().preferences())


def _script(task: Task, style: Style, first: Observation) -> Script:
    plan = _Plan(task, style)
    opening = questions(style, plan.beliefs.values, QUESTIONS, USER_FACTS)
    if opening is not None:
        plan.beliefs.see((yield opening))
    assume(style, plan.beliefs.values, GUESSES)
    yield from _look_up(plan)
    decision = Decision(
        question=QUESTIONS["priorities"],
        order_matters=plan.order_matters,
        pick=plan.pick,
        attempt=lambda choice, agreement: _attempt(plan, choice, agreement),
        nothing="No time suits everyone who must attend, so I sent nothing.",
        give_up="I could not send the invitation.",
    )
    yield from decide_and_commit(plan.beliefs, style, task.knobs.stateful, decision)


def _spray(plan: _Plan, count: int) -> list[ToolCall]:
    """Speculative reads that cannot change the decision (days outside the window)."""
    me = plan.beliefs.me or ""
    extra = [
        call("list_invitations"),
        call("get_calendar", person_id=me, day=plan.days[0] - 1),
        call("get_calendar", person_id=me, day=plan.days[-1] + 1),
        call("list_rooms", min_capacity=1),
    ]
    return offered_only(extra[:count], plan.task)


def _guesses(plan: _Plan) -> list[ToolCall]:
    """Reads issued before the values they need were returned: ids guessed from names."""
    guessed = [
        call("get_calendar", person_id=n.split()[0].lower(), day=plan.days[0]) for n in plan.names
    ]
    return guessed + [
        call("get_room_schedule", room_id=r, day=d) for r in ROOM_NAMES[:3] for d in plan.days
    ]


def _look_up(plan: _Plan) -> Script:
    style, beliefs = plan.style, plan.beliefs
    roots = [call("get_my_profile"), call("list_rooms", min_capacity=len(plan.names) + 1)]
    if style.batching == "guess":
        roots += _guesses(plan)
    for action in rounds(roots, style):
        beliefs.see((yield action))
    ids = beliefs.ids(plan.names)
    lookups = [call("lookup_person", person_id=p) for p in ids]
    groups = [(d,) for d in plan.days] if style.first_fit else [plan.days]
    for index, days in enumerate(groups):
        batch = lookups if index == 0 else []
        batch = batch + [
            call("get_calendar", person_id=p, day=d) for d in days for p in [beliefs.me or "", *ids]
        ]
        batch += [
            call("get_room_schedule", room_id=r, day=d)
            for d in days
            for r in beliefs.rooms
            if (r, d) not in beliefs.room_free
        ]
        if index == 0:
            batch += _spray(plan, style.spray)
        for action in rounds(batch, style):
            beliefs.see((yield action))
        if style.first_fit and plan.pick(plan.days[: index + 1]) is not None:
            return


def _attempt(plan: _Plan, choice: Option, agreement: Agreement) -> Steps[str | None]:
    """Hold the room (which shows who is unavailable now), propose it, and send."""
    style, beliefs = plan.style, plan.beliefs
    if style.verify == "same_round" or style.commit == "shotgun":
        return (yield from _blind_commit(plan, choice))
    held = beliefs.see((yield CallBatch((_hold(choice),)))).get("hold_room")
    if held is None:
        beliefs.excluded.add(choice.id)
        return None
    if style.verify == "before" and (beliefs.changed or _moved(plan, choice)):
        return None  # someone became unavailable or the organiser changed their mind
    if agreement.pending(style, choice.id):
        reply = (yield from propose(proposal(choice), style, beliefs.see))[-1]
        if not agreed(reply, choice.id):
            beliefs.excluded.add(choice.id)
            return None
        if beliefs.changed:
            return None
        agreement.option = choice.id
    if style.commit == "never":
        return f"{choice.id} is the best option; I did not send the invitation."
    sent = beliefs.see((yield CallBatch((call("send_invitation", hold_id=held["hold_id"]),))))
    return f"Sent the invitation for {choice.id}." if "send_invitation" in sent else None


def _moved(plan: _Plan, choice: Option) -> bool:
    """Whether what the hold showed makes another option the best one now."""
    now = plan.pick()
    return now is None or now.id != choice.id


def _hold(option: Option) -> ToolCall:
    return call(
        "hold_room",
        room_id=option.room,
        day=option.day,
        start=clock(option.start),
        duration=option.duration,
    )


def proposal(option: Option) -> str:
    """What the expert says to propose ``option``: its one-token id, and nothing the user could
    read as a question about a slot."""
    return (
        f"Room {option.room} is held for day {option.day} at {clock(option.start)} "
        f"(option {option.id}). Shall I send the invitation?"
    )


def _blind_commit(plan: _Plan, choice: Option) -> Steps[str]:
    """Hold and send without looking at the hold first (guessing hold ids), or send several."""
    picks = [choice]
    if plan.style.commit == "shotgun":
        picks += [o for o in plan.options() if o.id != choice.id][:2]
    holds = [_hold(o) for o in picks]
    yield from blind_commit(
        holds, lambda h: call("send_invitation", hold_id=h), plan.style, plan.beliefs.see
    )
    return f"Sent invitations for {', '.join(o.id for o in picks)}."
