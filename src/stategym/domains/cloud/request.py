"""What the volume owner knows and says: the slots, the constraints and the request's text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from stategym.generation import priorities_sentences, priorities_slot
from stategym.kernel.knobs import Knobs
from stategym.kernel.task import Constraint, ConstraintKind, Slot, SlotKind, Value

if TYPE_CHECKING:
    from .generator import Draw

PREFERENCES = ("long_idle", "detached", "own_team")
PREFERENCE_TEXTS = {
    "long_idle": ("a volume that has been idle long enough", "idle_min"),
    "detached": ("not having to detach a volume from an instance", "detach"),
    "own_team": ("a volume from my own team", "team"),
}


def owner_slots(draw: Draw, knobs: Knobs, conflict: bool) -> tuple[Slot, ...]:
    """Every fact the owner holds, and whether the request gives it or the agent must ask.
    The draw may have the owner keep the order back; it does as well when the order ranks a
    wish on a hidden slot (:func:`stategym.generation.keeps_order`)."""

    def kind(name: str) -> SlotKind:
        return SlotKind.MISSING if draw.hidden[name] and knobs.hidden_info else SlotKind.GIVEN

    facts = (
        Slot(
            "project_id",
            SlotKind.DERIVABLE,
            draw.account.project_id,
            "I think the project id is {value}.",
        ),
        Slot("team", SlotKind.DERIVABLE, draw.account.team, "I'm on the {value} team."),
        Slot(
            "retention",
            SlotKind.DERIVABLE,
            " and ".join(draw.policy.snapshot_tiers),
            "I believe {value} volumes need a final snapshot.",
        ),
        Slot("need_gb", kind("need_gb"), draw.need_gb, "We need to free at least {value} GB."),
        Slot(
            "idle_min",
            kind("idle_min"),
            draw.idle_min,
            "Only count a volume as idle after {value} days without activity.",
        ),
        Slot("window", SlotKind.IRRELEVANT, draw.window, "Our maintenance window is {value}."),
    )
    order = priorities_slot(
        draw.order,
        knobs,
        drawn_hidden=draw.priorities_hidden,
        conflict=conflict,
        facts=facts,
        constraints=owner_constraints(),
    )
    return (*facts, order)


def owner_constraints() -> tuple[Constraint, ...]:
    """The retention policy and the needs, then the held preferences."""
    fixed = (
        Constraint(
            "not_in_use",
            ConstraintKind.POLICY,
            "to never delete a volume attached to a running instance",
            "running instance",
        ),
        Constraint("frees_enough", ConstraintKind.NEED, "to free enough space", "need_gb"),
        Constraint("volume_deleted", ConstraintKind.NEED, "to delete a volume at all", "volume"),
    )
    return fixed + tuple(
        Constraint(p, ConstraintKind.PREFERENCE, *PREFERENCE_TEXTS[p]) for p in PREFERENCES
    )


def request_text(
    draw: Draw, given: dict[str, Value], constraints: tuple[Constraint, ...], knobs: Knobs
) -> str:
    """The owner's opening message: the task, what it states, and the priority order."""
    verb = "Please delete" if knobs.stateful else "Find"
    parts = [
        f"Hi! Our cloud project {draw.account.project_name} is over its storage budget. "
        f"{verb} one volume we can do without to bring it back under budget."
    ]
    parts.append(
        f"We need to free at least {given['need_gb']} GB."
        if "need_gb" in given
        else "It has to free enough space."
    )
    parts.append(
        "Never delete anything attached to a running instance, and follow the "
        "company's data-retention policy."
    )
    parts.append(
        f"I'd like a volume that has been idle for at least {given['idle_min']} days."
        if "idle_min" in given
        else "I'd like one that has been idle long enough."
    )
    parts.append(
        "I'd rather not detach a volume from an instance, and I'd prefer one of my own "
        "team's volumes."
    )
    parts += priorities_sentences(given, constraints)
    if not knobs.stateful:
        parts.append(
            "Don't change anything: finish with the id of the volume you recommend "
            "deleting, or 'none'."
        )
    return " ".join(parts)
