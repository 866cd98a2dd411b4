"""The cloud expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks only what the user alone knows, reads the account, then
the project's volumes, then every volume's activity and every instance a volume hangs on in
one parallel round, proposes the best volume, takes the writes the deletion needs (a snapshot
where the retention policy protects the tier, a detach where the volume is attached), checks
in a later round that the deletion is now safe, and deletes once.
"""

from __future__ import annotations

import re
from collections.abc import Generator

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.style import Style
from stategym.protocol import Action, CallBatch, Observation, Say, ToolCall, call
from stategym.task import Task, final_values

from .beliefs import Beliefs, VolumeView
from .generator import order_matters

QUESTIONS = {
    "need_gb": "How much storage do you need to free up?",
    "idle_min": "How many days without activity make a volume count as idle for you?",
    "project_id": "Which project should I clean up?",
    "team": "Which team are you on?",
    "retention": "Which tiers does the retention policy protect?",
    "window": "When is your maintenance window?",
    "priorities": "If you can't have everything you asked for, which preference should I "
    "prioritize?",
}
USER_FACTS = ("need_gb", "idle_min")
PROJECT_NAME = re.compile(r"cloud project (\w+)")
GUESSES = {"need_gb": 0, "idle_min": 30}
"""What an agent that never asks assumes: any volume frees enough; a month idle is idle."""


def cloud_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the cloud expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style))


def _script(task: Task, style: Style) -> Script:
    beliefs = Beliefs(values=dict(task.request.given))
    if "priorities" in task.request.given:
        beliefs.order = tuple(str(task.request.given["priorities"]).split(">"))
    if style.privileged:
        beliefs.values.update(final_values(task))
        prefs = {c.id for c in task.constraints if c.kind == "preference"}
        beliefs.order = tuple(c for c in task.priority_order() if c in prefs)
    asks = _questions(beliefs, style)
    if asks:
        beliefs.see((yield Say(" ".join(QUESTIONS[a] for a in asks))))
    yield from _look_up(task, beliefs, style)
    if style.ask == "nothing":
        for name, guess in GUESSES.items():
            beliefs.values.setdefault(name, guess)
    yield from _choose_and_delete(task, beliefs, style)


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
    return [CallBatch(tuple(batch))] if batch else []


def _spray(style: Style, beliefs: Beliefs) -> list[ToolCall]:
    """Speculative reads nothing needs: the snapshot list and dry runs of every volume."""
    extra = [call("list_snapshots", project_id=beliefs.project_id or "")]
    extra += [call("check_deletion", volume_id=v) for v in beliefs.volumes]
    return extra[: style.spray] if beliefs.project_id else []


def _look_up(task: Task, beliefs: Beliefs, style: Style) -> Script:
    first = [call("get_account"), call("get_retention_policy")]
    named = PROJECT_NAME.search(task.request.text)
    if style.batching == "guess" and named:  # the name in place of the id not yet returned
        first.append(call("list_volumes", project_id=named.group(1)))
    for action in _rounds(first, style):
        beliefs.see((yield action))
    if not beliefs.volumes:
        listing = [call("list_volumes", project_id=beliefs.project_id or "")]
        for action in _rounds(listing + _spray(style, beliefs), style):
            beliefs.see((yield action))
    instances = sorted({v.attached_to for v in beliefs.volumes.values() if v.attached_to})
    fan_out = [call("get_volume_activity", volume_id=v) for v in beliefs.volumes]
    fan_out += [call("describe_instance", instance_id=i) for i in instances]
    for action in _rounds(fan_out + _spray(style, beliefs), style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _pick(beliefs: Beliefs, style: Style) -> VolumeView | None:
    """The best volume the agent knows of, or ``None`` if none is feasible."""
    feasible = beliefs.feasible()
    if not feasible:
        return None
    if style.first_fit:
        return feasible[0]
    order = beliefs.order or beliefs.default_order()
    weights = {p: 2 ** (len(order) - i) for i, p in enumerate(order)}
    return min(feasible, key=lambda v: (-sum(weights.get(p, 0) for p in beliefs.meets(v)), v.id))


def _order_matters(beliefs: Beliefs) -> bool:
    return order_matters([beliefs.meets(v) for v in beliefs.feasible()], beliefs.default_order())


def _choose_and_delete(task: Task, beliefs: Beliefs, style: Style) -> Script:
    confirmed: str | None = None
    for _ in range(12):  # re-decisions after a change of mind or a failed check
        if (
            beliefs.order is None
            and style.ask != "nothing"
            and not style.first_fit
            and _order_matters(beliefs)
        ):
            beliefs.see((yield Say(QUESTIONS["priorities"])))
            continue
        choice = _pick(beliefs, style)
        if choice is None:
            yield _finish(
                "none"
                if not task.knobs.stateful
                else "No volume can go without breaking a rule or your needs; I deleted nothing."
            )
            return
        if not task.knobs.stateful:
            yield _finish(choice.id)
            return
        beliefs.changed = False
        if style.confirm != "skip" and confirmed != choice.id:
            obs: Observation | None = None
            for _ in range(3 if style.confirm == "spam" else 1):
                obs = yield Say(_proposal(beliefs, choice))
                beliefs.see(obs)
            if obs is not None and obs.user and f"Yes, {choice.id}" not in obs.user:
                beliefs.excluded.add(choice.id)
                continue
            if beliefs.changed:
                continue
            confirmed = choice.id
        if style.commit == "never":
            yield _finish(f"{choice.id} is the volume to delete; I did not delete it.")
            return
        done = yield from _delete(beliefs, style, _picks(beliefs, style, choice))
        if done:
            yield _finish(f"Deleted {choice.id}.")
            return
    yield _finish("I could not complete the deletion.")


def _proposal(beliefs: Beliefs, choice: VolumeView) -> str:
    steps = []
    if beliefs.needs_snapshot(choice):
        steps.append("take a final snapshot")
    if choice.attached_to is not None:
        steps.append(f"detach it from {choice.attached_to}")
    plan = f", after I {' and '.join(steps)}" if steps else ""
    return (
        f"I plan to delete {choice.id} ({choice.size_gb} GB, {choice.tier} tier){plan}. "
        "Shall I go ahead?"
    )


def _picks(beliefs: Beliefs, style: Style, choice: VolumeView) -> list[VolumeView]:
    """The choice, and for a shotgun agent the two largest other volumes not in use."""
    if style.commit != "shotgun":
        return [choice]
    others = sorted(
        (v for v in beliefs.volumes.values() if v.id != choice.id and not beliefs.in_use(v)),
        key=lambda v: (-v.size_gb, v.id),
    )
    return [choice, *others[:2]]


def _delete(
    beliefs: Beliefs, style: Style, picks: list[VolumeView]
) -> Generator[Action, Observation, bool]:
    """Writes, a dry-run check in a later round, then the delete; returns whether it happened."""
    writes = [call("create_snapshot", volume_id=v.id) for v in picks if beliefs.needs_snapshot(v)]
    writes += [call("detach_volume", volume_id=v.id) for v in picks if v.attached_to]
    checks = [call("check_deletion", volume_id=v.id) for v in picks]
    deletes = [call("delete_volume", volume_id=v.id) for v in picks]
    if style.verify == "same_round":
        found = beliefs.see((yield CallBatch(tuple(writes + checks + deletes))))
        return "delete_volume" in found
    for action in _rounds(writes, style):
        beliefs.see((yield action))
    if style.verify == "before":
        for action in _rounds(checks, style):
            beliefs.see((yield action))
        check = beliefs.checks.get(picks[0].id)
        if check is None or not check["safe_to_delete"]:
            beliefs.excluded.add(picks[0].id)
            return False
        if beliefs.changed and _pick(beliefs, style) is not picks[0]:
            return False  # a change of mind since the proposal moved the best choice
    deleted = False
    for action in _rounds(deletes, style):
        deleted = "delete_volume" in beliefs.see((yield action)) or deleted
    return deleted


def _finish(answer: str) -> Action:
    return CallBatch((call("finish", answer=answer),))
