"""What a cloud agent has learnt so far, and how it reads the user's words and tool results."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stategym.agents.hearing import Answers, hear
from stategym.kernel.protocol import Observation
from stategym.kernel.task import Value

from .request import PREFERENCE_TEXTS, PREFERENCES

_ANSWERS: Answers = (
    ("need_gb", re.compile(r"free at least (\d+) GB"), int),
    ("idle_min", re.compile(r"idle after (\d+) days"), int),
)
_BY_TEXT = {text: pref for pref, (text, _) in PREFERENCE_TEXTS.items()}
"""The preference each of the user's phrases for one speaks of."""


@dataclass(slots=True)
class VolumeView:
    id: str
    size_gb: int
    tier: str
    team: str
    attached_to: str | None
    idle_days: int | None = None


@dataclass(slots=True)
class Beliefs:
    """The agent's knowledge; ``None`` means not known yet."""

    values: dict[str, Value] = field(default_factory=dict)
    order: tuple[str, ...] | None = None
    team: str | None = None
    project_id: str | None = None
    protected_tiers: tuple[str, ...] | None = None
    volumes: dict[str, VolumeView] = field(default_factory=dict)
    running: dict[str, bool] = field(default_factory=dict)
    checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    excluded: set[str] = field(default_factory=set)
    changed: bool = False

    def see(self, observation: Observation) -> dict[str, Any]:
        """Take in tool results and user words; returns successful results by tool name."""
        hear(self, observation.user, _ANSWERS, _BY_TEXT.get)
        found: dict[str, Any] = {}
        for result in observation.results:
            if result.ok:
                found[result.name] = result.content
                self._record(result.name, result.content)
        return found

    def _record(self, name: str, content: Any) -> None:
        if name == "get_account":
            self.team, self.project_id = content["team"], content["project_id"]
        elif name == "get_retention_policy":
            self.protected_tiers = tuple(content["snapshot_required_tiers"])
        elif name == "list_volumes":
            for row in content:
                old = self.volumes.get(row["volume_id"])
                self.volumes[row["volume_id"]] = VolumeView(
                    row["volume_id"],
                    row["size_gb"],
                    row["tier"],
                    row["team"],
                    row["attached_to"],
                    old.idle_days if old else None,
                )
        elif name == "get_volume_activity" and content["volume_id"] in self.volumes:
            self.volumes[content["volume_id"]].idle_days = content["idle_days"]
        elif name == "describe_instance":
            self.running[content["instance_id"]] = content["state"] == "running"
        elif name == "detach_volume" and content["volume_id"] in self.volumes:
            self.volumes[content["volume_id"]].attached_to = None
        elif name == "check_deletion":
            self.checks[content["volume_id"]] = content

    def in_use(self, volume: VolumeView) -> bool:
        """Attached to an instance not known to be stopped."""
        return volume.attached_to is not None and self.running.get(volume.attached_to, True)

    def needs_snapshot(self, volume: VolumeView) -> bool:
        return volume.tier in (self.protected_tiers or ())

    def feasible(self) -> list[VolumeView]:
        """Volumes that free enough space and are not in use, in listing order."""
        need = int(self.values.get("need_gb", 0))
        return [
            v
            for v in self.volumes.values()
            if v.id not in self.excluded and v.size_gb >= need and not self.in_use(v)
        ]

    def meets(self, volume: VolumeView) -> frozenset[str]:
        """The preferences deleting ``volume`` meets, as far as the agent knows."""
        hits = set()
        idle_min = int(self.values.get("idle_min", 0))
        if volume.idle_days is not None and volume.idle_days >= idle_min:
            hits.add("long_idle")
        if volume.attached_to is None:
            hits.add("detached")
        if volume.team == self.team:
            hits.add("own_team")
        return frozenset(hits)

    def default_order(self) -> tuple[str, ...]:
        return PREFERENCES
