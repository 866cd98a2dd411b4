"""stategym: stateful, partially observable environments and decision-quality metrics for
agentic RL."""

from __future__ import annotations

from stategym.env import Env
from stategym.errors import AgentFormatError, StateGymError, ToolError
from stategym.gym import register_envs as _register_envs
from stategym.knobs import Knobs
from stategym.protocol import CallBatch, Observation, Say, StepResult, ToolCall, call, calls
from stategym.runner import run_episode
from stategym.trajectory import Trajectory, replay

__version__ = "0.1.0"

# Gymnasium ids (stategym/Travel-v0, ...) for every registered domain, with string entry
# points: no environment is built until gymnasium.make asks for one.
_register_envs()

__all__ = [
    "AgentFormatError",
    "CallBatch",
    "Env",
    "Knobs",
    "Observation",
    "Say",
    "StateGymError",
    "StepResult",
    "ToolCall",
    "ToolError",
    "Trajectory",
    "__version__",
    "call",
    "calls",
    "replay",
    "run_episode",
]
