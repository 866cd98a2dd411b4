"""Every exception stategym raises, in one place.

::

    StateGymError                 base of everything below
    ├── ToolError                 a tool refused a well-formed call; shown to the agent
    ├── AgentFormatError          the agent's output could not be turned into an action
    │                             (malformed JSON, unknown tool, bad arguments); shown to
    │                             the agent as a structured error and logged as a format error
    ├── UnknownDomainError        no domain or environment is registered under that name
    ├── TrajectoryError           a trajectory file is broken or has an unknown version
    ├── UsageError                the command line asked for something that cannot be done
    │                             (a bad value, a missing file, an unreachable endpoint);
    │                             the CLI prints its message on one line and exits 2
    └── AgentStopped              an agent cannot continue its episode (an LLM whose context
                                  the conversation outgrew); the episode ends truncated

Only ``ToolError`` and ``AgentFormatError`` ever reach the agent. Any other exception raised
while a tool runs is a bug in stategym and propagates.
"""

from __future__ import annotations


class StateGymError(Exception):
    """Base class of all stategym errors."""


class ToolError(StateGymError):
    """A tool refused a well-formed call (expired hold, unknown id, no seats...).

    The message is what the agent sees, so write it for the agent.
    """


class AgentFormatError(StateGymError):
    """The agent's output could not be turned into a valid call.

    Attributes:
        kind: a short machine-readable label (``malformed_json``, ``unknown_tool``,
            ``missing_argument``, ``unexpected_argument``, ``wrong_type``, ``empty_action``,
            ``episode_over``, ``bad_message``, and from the boundary rule of
            :func:`stategym.kernel.protocol.to_json`: ``bad_value``, ``too_large``).
    """

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class UnknownDomainError(StateGymError, KeyError):
    """No domain is registered under the requested name."""


class TrajectoryError(StateGymError):
    """A trajectory file could not be read (broken JSON, wrong version, missing fields)."""


class UsageError(StateGymError):
    """A user error on the command line: the CLI prints ``stategym: error: MESSAGE`` and exits 2.

    Raise it (or a subclass) for anything the user can fix by changing what they typed; any
    other exception is a bug and keeps its traceback.
    """


class AgentOptionError(UsageError, TypeError):
    """An option the agent's kind does not take (``--base-url`` for ``hf:PATH``, ``--device``
    for ``openai:MODEL``): a wrong keyword, so a ``TypeError``, and a usage error, so the
    CLI says it in one line."""


class AgentStopped(StateGymError):
    """The agent cannot continue this episode (the conversation outgrew the model's context).

    Episode loops end the episode there, marked truncated, with ``meta["stop_reason"]``.
    """
