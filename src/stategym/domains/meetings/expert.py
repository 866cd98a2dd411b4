"""The meetings expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks exactly what only the organiser knows, reads the
profile and the room list in one round, then fans out every time-zone lookup, calendar and
room schedule in one parallel round, picks the best time by the organiser's priorities,
holds the room (which also shows who is unavailable right now), proposes it, and sends the
invitation once the organiser agrees.
"""

from __future__ import annotations

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.style import Style
from stategym.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.task import Task, final_values

from .beliefs import Beliefs
from .generator import ROOM_NAMES
from .spec import split_names
from .timegrid import Option, Scene, clock, feasible, options, order_matters, rank

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
GUESSES: dict[str, str | int] = {
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
        self.beliefs = Beliefs(values=dict(given))
        if "priorities" in given:
            self.beliefs.order = tuple(str(given["priorities"]).split(">"))
        if style.privileged:
            self.beliefs.values.update(final_values(task))
            prefs = {c.id for c in task.constraints if c.kind == "preference"}
            self.beliefs.order = tuple(c for c in task.priority_order() if c in prefs)
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
        found = self.options(days)
        if not found:
            return None
        if self.style.first_fit:
            return found[0]
        order = self.beliefs.order or self.beliefs.default_order(self.scene())
        return max(found, key=lambda o: rank(o.hits, order))  # max keeps the earliest of ties

    def order_matters(self) -> bool:
        return order_matters((o.hits for o in self.options()), self.scene().preferences())


def _script(task: Task, style: Style, first: Observation) -> Script:
    plan = _Plan(task, style)
    asks = _questions(plan.beliefs, style)
    if asks:
        plan.beliefs.see((yield Say(" ".join(QUESTIONS[a] for a in asks))))
    if style.ask == "nothing":
        for name, guess in GUESSES.items():
            plan.beliefs.values.setdefault(name, guess)
    yield from _look_up(plan)
    yield from _choose_and_commit(plan)


def _questions(beliefs: Beliefs, style: Style) -> list[str]:
    if style.privileged or style.ask == "nothing":
        return []
    if style.ask == "everything":
        return list(QUESTIONS)
    return [name for name in USER_FACTS if name not in beliefs.values]


def _rounds(batch: list[ToolCall], style: Style) -> list[CallBatch]:
    """One parallel round, or one round per call for a serial agent."""
    if style.batching == "serial":
        return [CallBatch((c,)) for c in batch]
    return [CallBatch(tuple(batch))]


def _spray(plan: _Plan, count: int) -> list[ToolCall]:
    """Speculative reads that cannot change the decision (days outside the window)."""
    me = plan.beliefs.me or ""
    extra = [
        call("list_invitations"),
        call("get_calendar", person_id=me, day=plan.days[0] - 1),
        call("get_calendar", person_id=me, day=plan.days[-1] + 1),
        call("list_rooms", min_capacity=1),
    ]
    return extra[:count]


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
    for action in _rounds(roots, style):
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
        for action in _rounds(batch, style):
            beliefs.see((yield action))
        if style.first_fit and plan.pick(plan.days[: index + 1]) is not None:
            return


def _choose_and_commit(plan: _Plan) -> Script:
    task, style, beliefs = plan.task, plan.style, plan.beliefs
    confirmed: str | None = None
    for _ in range(12):  # re-decisions after taken slots, expired holds and changes of mind
        if (
            beliefs.order is None
            and style.ask != "nothing"
            and not style.first_fit
            and plan.order_matters()
        ):
            beliefs.see((yield Say(QUESTIONS["priorities"])))
            continue
        choice = plan.pick()
        if choice is None:
            yield _finish(
                "none"
                if not task.knobs.stateful
                else "No time suits everyone who must attend, so I sent nothing."
            )
            return
        if not task.knobs.stateful:
            yield _finish(choice.id)
            return
        beliefs.changed = False
        if style.verify == "same_round" or style.commit == "shotgun":
            yield from _blind_commit(plan, choice)
            return
        held = beliefs.see((yield CallBatch((_hold(choice),)))).get("hold_room")
        if held is None:
            beliefs.excluded.add(choice.id)
            continue
        if style.verify == "before" and (beliefs.changed or _moved(plan, choice)):
            continue  # someone became unavailable or the organiser changed their mind
        if style.confirm != "skip" and confirmed != choice.id:
            obs: Observation | None = None
            for _ in range(3 if style.confirm == "spam" else 1):
                obs = yield Say(proposal(choice))
                beliefs.see(obs)
            if obs is None or not obs.user or f"Yes, {choice.id}" not in obs.user:
                beliefs.excluded.add(choice.id)
                continue
            if beliefs.changed:
                continue
            confirmed = choice.id
        if style.commit == "never":
            yield _finish(f"{choice.id} is the best option; I did not send the invitation.")
            return
        sent = beliefs.see((yield CallBatch((call("send_invitation", hold_id=held["hold_id"]),))))
        if "send_invitation" in sent:
            yield _finish(f"Sent the invitation for {choice.id}.")
            return
    yield _finish("I could not send the invitation.")


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


def _blind_commit(plan: _Plan, choice: Option) -> Script:
    """Hold and send without looking at the hold first (guessing hold ids), or send several."""
    picks = [choice]
    if plan.style.commit == "shotgun":
        picks += [o for o in plan.options() if o.id != choice.id][:2]
    holds = [_hold(o) for o in picks]
    if plan.style.verify == "same_round":
        sends = [call("send_invitation", hold_id=f"H{i + 1}") for i in range(len(picks))]
        plan.beliefs.see((yield CallBatch(tuple(holds + sends))))
    else:
        obs = yield CallBatch(tuple(holds))
        ids = [r.content["hold_id"] for r in obs.results if r.ok]
        plan.beliefs.see((yield CallBatch(tuple(call("send_invitation", hold_id=h) for h in ids))))
    yield _finish(f"Sent invitations for {', '.join(o.id for o in picks)}.")


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))
