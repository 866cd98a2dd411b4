"""What :meth:`~stategym.kernel.env.Env.snapshot` saves, so that
:meth:`~stategym.kernel.env.Env.restore` can rewind an episode (search agents branch on it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from stategym.kernel.provenance import Origin
from stategym.kernel.reward import RoundReward
from stategym.kernel.trajectory import RoundRecord
from stategym.kernel.user import UserState
from stategym.kernel.world import WorldSnapshot


class Ending(NamedTuple):
    """Whether and how the episode has ended."""

    terminated: bool
    """The agent finished, or the user ended the conversation."""
    truncated: bool
    """The episode ran out of rounds."""
    answer: str | None
    """The answer ``finish`` gave, if it has been called."""


@dataclass(frozen=True, slots=True)
class EnvSnapshot:
    """An environment's state between two rounds.

    Attributes:
        world: the world's tables, clock and ledger.
        user: the simulated user's state.
        provenance: where each value first appeared.
        rounds: how many rounds had been played.
        fired: how many scheduled events had fired.
        confused: messages in a row the user could not understand.
        done: whether and how the episode had ended.
        reward: a copy of the episode's round reward, with whatever it keeps between rounds
            (the dense reward's running score), so the rounds after a restore are paid as
            they were the first time.
        task: the id of the task played (a snapshot restores only into an episode of it).
        episode: the token of the episode it was taken in (drawn at each reset, shared by
            the environment's copies; ``""``: unknown, a snapshot made by hand).
        log: the rounds themselves (frozen records, so a copy of pointers): a restore puts
            back this log, not the first ``rounds`` rounds of whatever was played since,
            which may be another branch's (audit 18A F1). ``()`` in a snapshot pickled
            before it was kept, which cuts the log back to ``rounds`` instead.
    """

    world: WorldSnapshot
    user: UserState
    provenance: dict[Any, Origin]
    rounds: int
    fired: int
    confused: int
    done: Ending
    reward: RoundReward
    task: str = ""
    episode: str = ""
    log: tuple[RoundRecord, ...] = ()


def rounds_to_restore(
    snapshot: EnvSnapshot, task: str, episode: str, played: list[RoundRecord]
) -> list[RoundRecord]:
    """The log :meth:`~stategym.kernel.env.Env.restore` puts back: the snapshot's own rounds
    (audit 18A F1), or, for a snapshot pickled before it kept them, the first ``rounds`` of
    the log ``played`` in the episode ``episode`` of task ``task``.

    Raises:
        ValueError: the snapshot was taken in an episode of another task (audit 16C F4), in
            another episode (16D F3, 16E F1), or is an older snapshot of more rounds than
            were played.
    """
    if getattr(snapshot, "task", "") not in ("", task):
        raise ValueError(
            f"the snapshot was taken in an episode of {snapshot.task}; this episode plays {task}"
        )
    taken = getattr(snapshot, "episode", "")  # a snapshot pickled before stop 42 has none
    if taken and taken != episode:
        raise ValueError(
            "the snapshot was taken in another episode (before a reset, or in another "
            "environment than this one or its copies)"
        )
    log = getattr(snapshot, "log", ())  # a snapshot pickled before stop 44 has none
    if len(log) == snapshot.rounds:
        return list(log)
    if snapshot.rounds > len(played):
        raise ValueError(
            f"the snapshot was taken after round {snapshot.rounds - 1}; this episode has "
            f"played {len(played)} rounds (a snapshot of another episode)"
        )
    return played[: snapshot.rounds]
