"""Rendering: the one place that turns episodes into model text and model text into actions.

Two renderings of the same protocol (:class:`~stategym.rendering.base.Renderer`):

- :class:`MessageRenderer` (``messages``): OpenAI chat messages with JSON tool calls, what
  endpoints and Hermes-style chat templates take;
- :class:`CompactRenderer` (``compact``): one line per call with short entity handles, for
  tiny models trained from scratch.

Every consumer (LLM agents, demonstrations, supervised data, the probe, trainers and
adapters) makes a renderer per episode with :func:`make_renderer` and asks it for the tools,
the prompt and the messages; :func:`transcript` rebuilds a logged episode through the same
renderer, so what a live agent saw and what the log rebuilds are equal.
"""

from __future__ import annotations

from stategym.kernel.domain import Domain
from stategym.kernel.knobs import Knobs
from stategym.rendering.base import Message, Renderer, observation_of, transcript
from stategym.rendering.compact import CompactRenderer
from stategym.rendering.messages import PROMPT_VERSION, MessageRenderer, offered_tools

RENDERINGS = ("messages", "compact")
"""The renderings :func:`make_renderer` knows."""


def make_renderer(domain: Domain, knobs: Knobs, kind: str = "messages") -> Renderer:
    """A fresh renderer for one episode.

    Raises:
        ValueError: an unknown rendering.
    """
    if kind == "messages":
        return MessageRenderer(domain, knobs)
    if kind == "compact":
        return CompactRenderer(domain, knobs)
    raise ValueError(f"unknown rendering {kind!r}; use one of {', '.join(RENDERINGS)}")


__all__ = [
    "PROMPT_VERSION",
    "RENDERINGS",
    "CompactRenderer",
    "Message",
    "MessageRenderer",
    "Renderer",
    "make_renderer",
    "observation_of",
    "offered_tools",
    "transcript",
]
