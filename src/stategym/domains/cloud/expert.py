"""The cloud expert and its styled variants (see :class:`stategym.agents.style.Style`).

The expert is not privileged: it asks only what the user alone knows, reads the account, then
the project's volumes, then every volume's activity and every instance a volume hangs on in
one parallel round, proposes the best volume, takes the writes the deletion needs (a snapshot
where the retention policy protects the tier, a detach where the volume is attached), checks
in a later round that the deletion is now safe, and deletes once.
"""

from __future__ import annotations

import re

from stategym.agents.base import Script, ScriptedAgent
from stategym.agents.playbook import (
    Agreement,
    Decision,
    Steps,
    agreed,
    assume,
    choose,
    decide_and_commit,
    known_at_start,
    offered_only,
    propose,
    questions,
    rounds,
    worth,
)
from stategym.agents.style import Style
from stategym.generation import order_matters
from stategym.kernel.protocol import CallBatch, ToolCall, call
from stategym.kernel.task import Task, Value

from .beliefs import Beliefs, VolumeView

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
GUESSES: dict[str, Value] = {"need_gb": 0, "idle_min": 30}
"""What an agent that never asks assumes: any volume frees enough; a month idle is idle."""


def cloud_expert(task: Task, style: Style) -> ScriptedAgent:
    """Build the cloud expert for ``task`` with the habits in ``style``."""
    return ScriptedAgent("expert", lambda first: _script(task, style))


def _script(task: Task, style: Style) -> Script:
    values, order = known_at_start(task, style)
    beliefs = Beliefs(values=values, order=order)
    opening = questions(style, beliefs.values, QUESTIONS, USER_FACTS)
    if opening is not None:
        beliefs.see((yield opening))
    yield from _look_up(task, beliefs, style)
    assume(style, beliefs.values, GUESSES)
    decision = Decision(
        question=QUESTIONS["priorities"],
        order_matters=lambda: order_matters(
            [beliefs.meets(v) for v in beliefs.feasible()], beliefs.default_order()
        ),
        pick=lambda: _pick(beliefs, style),
        attempt=lambda choice, agreement: _attempt(beliefs, style, choice, agreement),
        nothing="No volume can go without breaking a rule or your needs; I deleted nothing.",
        give_up="I could not complete the deletion.",
    )
    yield from decide_and_commit(beliefs, style, task.knobs.stateful, decision)


def _spray(style: Style, beliefs: Beliefs, task: Task) -> list[ToolCall]:
    """Speculative reads nothing needs: the snapshot list (where it is offered) and dry runs
    of every volume."""
    extra = [call("list_snapshots", project_id=beliefs.project_id or "")]
    extra += [call("check_deletion", volume_id=v) for v in beliefs.volumes]
    return offered_only(extra[: style.spray], task) if beliefs.project_id else []


def _look_up(task: Task, beliefs: Beliefs, style: Style) -> Script:
    first = [call("get_account"), call("get_retention_policy")]
    named = PROJECT_NAME.search(task.request.text)
    if style.batching == "guess" and named:  # the name in place of the id not yet returned
        first.append(call("list_volumes", project_id=named.group(1)))
    for action in rounds(first, style):
        beliefs.see((yield action))
    if not beliefs.volumes:
        listing = [call("list_volumes", project_id=beliefs.project_id or "")]
        for action in rounds(listing + _spray(style, beliefs, task), style):
            beliefs.see((yield action))
    instances = sorted({v.attached_to for v in beliefs.volumes.values() if v.attached_to})
    fan_out = [call("get_volume_activity", volume_id=v) for v in beliefs.volumes]
    fan_out += [call("describe_instance", instance_id=i) for i in instances]
    for action in rounds(fan_out + _spray(style, beliefs, task), style):
        beliefs.see((yield action))
        if style.first_fit and _pick(beliefs, style) is not None:
            return


def _pick(beliefs: Beliefs, style: Style) -> VolumeView | None:
    """The best volume the agent knows of, or ``None`` if none is feasible."""
    order = beliefs.order or beliefs.default_order()
    return choose(beliefs.feasible(), style, lambda v: (-worth(beliefs.meets(v), order), v.id))


def _attempt(
    beliefs: Beliefs, style: Style, choice: VolumeView, agreement: Agreement
) -> Steps[str | None]:
    """Propose the volume, then take the writes its deletion needs, check, and delete."""
    if agreement.pending(style, choice.id):
        reply = (yield from propose(_proposal(beliefs, choice), style, beliefs.see))[-1]
        if reply.user and not agreed(reply, choice.id):
            beliefs.excluded.add(choice.id)
            return None
        if beliefs.changed:
            return None
        agreement.option = choice.id
    if style.commit == "never":
        return f"{choice.id} is the volume to delete; I did not delete it."
    done = yield from _delete(beliefs, style, _picks(beliefs, style, choice))
    return f"Deleted {choice.id}." if done else None


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


def _delete(beliefs: Beliefs, style: Style, picks: list[VolumeView]) -> Steps[bool]:
    """Writes, a dry-run check in a later round, then the delete; returns whether it happened."""
    writes = [call("create_snapshot", volume_id=v.id) for v in picks if beliefs.needs_snapshot(v)]
    writes += [call("detach_volume", volume_id=v.id) for v in picks if v.attached_to]
    checks = [call("check_deletion", volume_id=v.id) for v in picks]
    deletes = [call("delete_volume", volume_id=v.id) for v in picks]
    if style.verify == "same_round":
        found = beliefs.see((yield CallBatch(tuple(writes + checks + deletes))))
        return "delete_volume" in found
    for action in rounds(writes, style):
        beliefs.see((yield action))
    if style.verify == "before":
        for action in rounds(checks, style):
            beliefs.see((yield action))
        check = beliefs.checks.get(picks[0].id)
        if check is None or not check["safe_to_delete"]:
            beliefs.excluded.add(picks[0].id)
            return False
        if beliefs.changed and _pick(beliefs, style) is not picks[0]:
            return False  # a change of mind since the proposal moved the best choice
    deleted = False
    for action in rounds(deletes, style):
        deleted = "delete_volume" in beliefs.see((yield action)) or deleted
    return deleted
