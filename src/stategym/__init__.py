"""stategym: stateful, partially observable environments and decision-quality metrics for
agentic RL."""

from __future__ import annotations

from stategym import registry as _registry
from stategym.gym import register_envs as _register_envs
from stategym.kernel.domain import use_registry as _use_registry
from stategym.kernel.env import Env
from stategym.kernel.errors import AgentFormatError, StateGymError, ToolError
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import CallBatch, Observation, Say, StepResult, ToolCall, call, calls
from stategym.kernel.trajectory import Trajectory, replay
from stategym.kernel.verify import verify
from stategym.rollout import run_episode

__version__ = "0.1.0"

# The kernel never imports the registry; the package hands it over, so Env("travel") and
# replay(trajectory) resolve names. The registry imports each domain on first use only.
_use_registry(_registry)
# Gymnasium ids (stategym/Travel-v0, ...) from the registry's static table, with string
# entry points: no domain is imported and no environment built until gymnasium.make.
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
    "verify",
]
