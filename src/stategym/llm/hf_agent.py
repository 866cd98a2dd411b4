"""The local Hugging Face agent (``hf:PATH``): a causal LM on this machine, no server.

Token-in-token-out: the agent (:class:`~stategym.llm.agent.ChatAgent`) keeps the episode's
token stream and sends it as the prompt (:attr:`Turn.prompt_ids`): the ids the model sampled
stay as sampled and each observation's tokens come from the renderer
(:mod:`stategym.rendering.tokens`, cut from this model's chat template), so nothing is
re-tokenised. The reply's text is parsed for tool calls (:mod:`stategym.llm.parse`). Every
round logs its token usage, the generated token ids, their log-probabilities and its place in
the token stream; ``prompt_ids=True`` also logs every round's prompt ids (round 0's always).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from stategym.kernel.errors import AgentStopped
from stategym.llm.agent import Reply, Turn
from stategym.llm.local import ContextLengthError, LocalModel, Message, Sampling
from stategym.llm.parse import parse


class HFBackend:
    """Replies from a :class:`~stategym.llm.local.LocalModel`.

    Args:
        model: the loaded model.
        sampling: temperature, top-p and reply length; the seed is set per round.
        prompt_ids: also log each round's prompt token ids (large: the whole context).
    """

    def __init__(self, model: LocalModel, sampling: Sampling, *, prompt_ids: bool = False) -> None:
        self.model = model
        self.sampling = sampling
        self.prompt_ids = prompt_ids
        self.chat = model.chat
        """The chat template the agent cuts observation tokens from (token-in-token-out)."""

    def describe(self) -> dict[str, Any]:
        sampling = asdict(self.sampling)
        del sampling["seed"]
        return {"backend": "hf", "model": str(self.model.path), "sampling": sampling}

    def complete_sync(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        sampling = replace(self.sampling, seed=turn.seed)
        try:
            if turn.prompt_ids is not None:
                generation = self.model.generate_ids(turn.prompt_ids, sampling)
            else:
                generation = self.model.generate(messages, tools, sampling)
        except ContextLengthError as error:
            raise AgentStopped(f"context_length: {error}") from None
        parsed = parse(generation.text)
        meta: dict[str, Any] = {
            "usage": {
                "prompt_tokens": len(generation.prompt_ids),
                "completion_tokens": len(generation.completion_ids),
            },
            "finish_reason": generation.finish_reason,
            "completion_token_ids": list(generation.completion_ids),
            "logprobs": [round(lp, 6) for lp in generation.logprobs],
        }
        if self.prompt_ids:
            meta["prompt_token_ids"] = list(generation.prompt_ids)
        meta["text"] = generation.text  # the raw reply: the action as the model wrote it
        if parsed.errors:
            meta["format_errors"] = list(parsed.errors)
        return Reply(parsed.to_message(f"call_{turn.index}"), meta, parsed.errors)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        # Decoding is CPU/GPU-bound: run it off the event loop so environments keep stepping.
        return await asyncio.to_thread(self.complete_sync, list(messages), list(tools), turn)
