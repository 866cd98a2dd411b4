"""The local Hugging Face agent (``hf:PATH``): a causal LM on this machine, no server.

Token-in-token-out: the agent (:class:`~stategym.llm.agent.ChatAgent`) keeps the episode's
token stream and sends it as the prompt (:attr:`Turn.prompt_ids`): the ids the model sampled
stay as sampled and each observation's tokens come from the renderer
(:mod:`stategym.rendering.tokens`, cut from this model's chat template), so nothing is
re-tokenised. Episodes played concurrently (``complete``) are answered together: the
requests of every episode waiting on the model go out as one batch, and each episode's
key/value cache is kept between its rounds (:class:`~stategym.llm.engine.Engine`), so a
round feeds only its observation's tokens. The reply's text is parsed for tool calls
(:mod:`stategym.llm.parse`). Every round logs its token usage, the generated token ids,
their log-probabilities and its place in the token stream; ``prompt_ids=True`` also logs
every round's prompt ids (round 0's always).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from stategym.kernel.errors import AgentStopped
from stategym.llm.agent import Reply, Turn
from stategym.llm.local import ContextLengthError, Generation, LocalModel, Message, Sampling
from stategym.llm.parse import parse

GATHER_PASSES = 4
"""Event-loop passes a batch waits for its requests: one for the episodes a batch answered
to step and ask again, the rest for a new episode to reset and ask (semaphore, reset)."""


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
        self.batches = 0
        """Batches answered by :meth:`complete` (episodes played concurrently share them)."""
        self._waiting: list[tuple[Turn, asyncio.Future[Generation | ContextLengthError]]] = []
        self._flush: asyncio.Task[None] | None = None

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
                generation = self.model.generate_ids(
                    turn.prompt_ids, sampling, session=turn.session
                )
            else:
                generation = self.model.generate(messages, tools, sampling)
        except ContextLengthError as error:
            raise AgentStopped(f"context_length: {error}") from None
        return self._reply(generation, turn)

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        if turn.prompt_ids is None:  # a template-less prompt: rendered and decoded alone
            return await asyncio.to_thread(self.complete_sync, list(messages), list(tools), turn)
        future: asyncio.Future[Generation | ContextLengthError] = (
            asyncio.get_running_loop().create_future()
        )
        self._waiting.append((turn, future))
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._answer_waiting())
        generation = await future
        if isinstance(generation, ContextLengthError):
            raise AgentStopped(f"context_length: {generation}") from None
        return self._reply(generation, turn)

    def release(self, session: int) -> None:
        """Forget an ended episode's cache."""
        self.model.release(session)

    async def _answer_waiting(self) -> None:
        # Lock-step: let every episode that is about to ask (the ones a batch just answered
        # step their environments; a new one resets) do so, then answer them all in one
        # batch. The loop runs no I/O, so which requests share a batch is deterministic.
        for _ in range(GATHER_PASSES):
            await asyncio.sleep(0)
        waiting, self._waiting = self._waiting, []
        requests = [
            (t.prompt_ids or (), replace(self.sampling, seed=t.seed), t.session) for t, _ in waiting
        ]
        try:
            # On the loop's own thread: every episode is waiting for this batch anyway.
            generations = self.model.generate_batch(requests)
        except Exception as error:  # each episode raises it as itself (a bug stops the run)
            for _, future in waiting:
                if not future.done():
                    future.set_exception(error)
            return
        self.batches += 1
        for (_, future), generation in zip(waiting, generations, strict=True):
            if not future.done():  # its episode may have been cancelled meanwhile
                future.set_result(generation)

    def _reply(self, generation: Generation, turn: Turn) -> Reply:
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
