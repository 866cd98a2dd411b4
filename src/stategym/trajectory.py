"""The versioned trajectory log: the single source of truth for every score.

One episode is one :class:`Trajectory`; a run directory holds them as JSON Lines, one per
line. Every score, report and protocol figure is computed from these records and the task,
which is regenerated from ``(domain, seed, knobs)``. Field-by-field documentation:
``docs/trajectory.md``. :func:`replay` feeds a trajectory's actions to a fresh environment
and reproduces the world exactly (equal state digest).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pydantic

from stategym.errors import TrajectoryError
from stategym.knobs import Knobs
from stategym.protocol import JSON, Action, CallBatch, Say, ToolCall
from stategym.provenance import Origin
from stategym.tools import Effect
from stategym.user import UserTurn
from stategym.world import Charge

if TYPE_CHECKING:
    from stategym.env import Env

TRAJECTORY_VERSION = 1


class RoundKind(StrEnum):
    CALLS = "calls"
    SAY = "say"
    INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call as executed.

    Attributes:
        id: call id.
        name: tool name as the agent wrote it.
        arguments: decoded arguments, or the raw text if it was not a JSON object.
        effect: the tool's declared effect (``None`` for ``finish`` and unknown tools).
        content: the result (``None`` on error).
        error: the error shown to the agent, if any.
        error_kind: ``tool`` or a format-error kind.
        sources: for each argument, where its value first appeared (``None``: ungrounded).
    """

    id: str
    name: str
    arguments: dict[str, Any] | str
    effect: Effect | None
    content: JSON
    error: str | None
    error_kind: str | None
    sources: dict[str, Origin | None]


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One round: what the agent did, what happened, and what the clock read.

    Attributes:
        index: round number from 0.
        clock: clock at the start of the round.
        latency: ticks the round took (a batch costs its slowest call).
        kind: calls, say, or invalid (no usable action).
        calls: the calls of a tool round.
        say: the agent's message in a say round.
        user: how the user read that message and what it replied.
        notice: words the user volunteered after a tool round (a change of mind).
        notice_values: slot values the notice revealed.
        events: indices into ``task.events`` that fired at the end of this round.
        charges: money moved by this round.
        format_errors: format-error kinds in this round.
        raw: the unusable action, for invalid rounds.
        meta: anything the runner adds (token usage, logprobs); not used for scoring.
    """

    index: int
    clock: int
    latency: int
    kind: RoundKind
    calls: tuple[CallRecord, ...] = ()
    say: str | None = None
    user: UserTurn | None = None
    notice: str | None = None
    notice_values: tuple[tuple[str, Any], ...] = ()
    events: tuple[int, ...] = ()
    charges: tuple[Charge, ...] = ()
    format_errors: tuple[str, ...] = ()
    raw: JSON = None
    meta: dict[str, Any] = field(default_factory=dict)

    def action(self) -> Action:
        """The action that produced this round (for replay)."""
        if self.kind is RoundKind.SAY:
            return Say(self.say or "")
        return CallBatch(tuple(ToolCall(c.name, c.arguments, c.id) for c in self.calls))


@dataclass(frozen=True, slots=True)
class Outcome:
    """The final-answer view of an episode.

    Attributes:
        goal_reached: the world ends committed to a best option (or to nothing when doing
            nothing is best); in stateless tasks, the answer names a best option.
        committed: options the world is committed to at the end.
        answer: the ``finish`` answer, if any.
        spent: money paid out of the user's account.
        refunded: money paid back into it.
        lost: money spent on anything but the one right commitment (fees, wrong bookings).
    """

    goal_reached: bool
    committed: tuple[str, ...]
    answer: str | None
    spent: int
    refunded: int
    lost: int


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One episode, replayable and re-scorable offline.

    Attributes:
        version: log format version (:data:`TRAJECTORY_VERSION`).
        domain: domain name.
        seed: task seed.
        knobs: task knobs.
        agent: agent name.
        rounds: every round in order.
        terminated: ended by ``finish`` or by the user.
        truncated: ended by the round limit.
        outcome: final-answer view (``None`` while the episode is running).
        digest: state digest at the end.
        meta: anything the runner adds (token usage, model name); not used for scoring.
    """

    version: int
    domain: str
    seed: int
    knobs: Knobs
    agent: str
    rounds: tuple[RoundRecord, ...]
    terminated: bool
    truncated: bool
    outcome: Outcome | None
    digest: str
    meta: dict[str, Any] = field(default_factory=dict)


_ADAPTER = pydantic.TypeAdapter(Trajectory)


def dumps(trajectory: Trajectory) -> bytes:
    """One JSON line (without the newline)."""
    return orjson.dumps(trajectory)


def loads(line: bytes | str) -> Trajectory:
    """Parse and validate one JSON line.

    Raises:
        TrajectoryError: broken JSON, missing fields, or an unknown version.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise TrajectoryError(f"not JSON: {error}") from None
    if not isinstance(data, dict) or data.get("version") != TRAJECTORY_VERSION:
        version = data.get("version") if isinstance(data, dict) else None
        raise TrajectoryError(f"unsupported trajectory version {version!r}")
    try:
        return _ADAPTER.validate_python(data)
    except pydantic.ValidationError as error:
        raise TrajectoryError(f"invalid trajectory: {error}") from None


def write_jsonl(path: Path, trajectories: Iterable[Trajectory], *, append: bool = False) -> int:
    """Write trajectories one per line; returns how many were written."""
    count = 0
    with path.open("ab" if append else "wb") as handle:
        for trajectory in trajectories:
            handle.write(dumps(trajectory) + b"\n")
            count += 1
    return count


def read_jsonl(path: Path, *, strict: bool = True) -> Iterator[Trajectory]:
    """Read a JSONL file of trajectories.

    Args:
        path: the file.
        strict: raise on the first broken line; if ``False``, skip broken lines (an
            interrupted run leaves at most a cut last line) and keep the rest.

    Raises:
        TrajectoryError: with the file and line number of a broken line (strict mode).
    """
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield loads(line)
            except TrajectoryError as error:
                if strict:
                    raise TrajectoryError(f"{path}:{number}: {error}") from None


def replay(trajectory: Trajectory, env: Env | None = None) -> Env:
    """Feed the trajectory's actions to a fresh environment; returns the environment.

    The returned environment's ``state_key()`` equals ``trajectory.digest`` when the
    environment is deterministic (it is: this is tested for every domain).
    """
    from stategym.env import Env

    env = env or Env(trajectory.domain, knobs=trajectory.knobs)
    env.reset(seed=trajectory.seed)
    for record in trajectory.rounds:
        if record.kind is RoundKind.INVALID:
            env.step(CallBatch(()))
        else:
            env.step(record.action())
    return env


def summarise_rounds(rounds: Iterable[RoundRecord]) -> Mapping[str, int]:
    """Counts a results table shows: rounds, asks, tool calls, format errors."""
    totals = {"rounds": 0, "asks": 0, "calls": 0, "format_errors": 0}
    for record in rounds:
        totals["rounds"] += 1
        totals["asks"] += record.kind is RoundKind.SAY
        totals["calls"] += len(record.calls)
        totals["format_errors"] += len(record.format_errors)
    return totals
