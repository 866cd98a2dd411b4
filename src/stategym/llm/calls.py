"""How well a model speaks the protocol: shares of its tool calls that parse and that run.

Computed from trajectories alone, so it applies to any agent's log. A call *parses* when a
tool name and a JSON object of arguments could be read from it; it is *accepted* when the
environment accepted its format (a known tool with well-typed arguments): it ran, a tool refused
it, or it did not run only because another call of its round was malformed (``not_run``); the
format was right in each case.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from stategym.kernel.trajectory import RoundKind, Trajectory
from stategym.kernel.validation import NOT_RUN

UNPARSED = frozenset({"malformed_json"})
ACCEPTED = frozenset({None, "tool", NOT_RUN})
"""``error_kind`` values of calls whose format the environment accepted."""


@dataclass(frozen=True, slots=True)
class CallStats:
    """Counts over a set of trajectories.

    Attributes:
        rounds: rounds played.
        tool_rounds: rounds in which the model called tools.
        invalid_rounds: rounds with no usable action.
        calls: tool calls emitted.
        parsed: calls with a readable name and JSON-object arguments.
        accepted: calls whose format the environment accepted.
    """

    rounds: int
    tool_rounds: int
    invalid_rounds: int
    calls: int
    parsed: int
    accepted: int

    @property
    def parsed_share(self) -> float:
        """Share of emitted calls that parse (0 when there were none)."""
        return self.parsed / self.calls if self.calls else 0.0

    @property
    def accepted_share(self) -> float:
        """Share of emitted calls whose format was accepted (0 when there were none)."""
        return self.accepted / self.calls if self.calls else 0.0


def call_stats(trajectories: Iterable[Trajectory]) -> CallStats:
    """Count rounds and calls, and how many calls parsed and ran.

    Example:
        A round with ``get_profile()`` and a call whose arguments were cut off gives
        ``calls=2, parsed=1, accepted=1``.
    """
    rounds = tool_rounds = invalid = calls = parsed = accepted = 0
    for trajectory in trajectories:
        for record in trajectory.rounds:
            rounds += 1
            tool_rounds += record.kind is RoundKind.CALLS
            invalid += record.kind is RoundKind.INVALID
            for call in record.calls:
                calls += 1
                parsed += bool(call.name) and call.error_kind not in UNPARSED
                accepted += call.error_kind in ACCEPTED
    return CallStats(rounds, tool_rounds, invalid, calls, parsed, accepted)
