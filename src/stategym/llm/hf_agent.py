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

Every trajectory's ``meta.model_digest`` holds digests of the model folder's files
(:func:`model_digest`): ``weights`` (the weight files, ``config.json`` and
``generation_config.json``) and ``tokenizer`` (the tokenizer's files and the chat template),
taken once when the backend is made, right after the model loaded. A run resumes an ``hf:``
episode only when they are the ones of the model it plays now
(:func:`stategym.rollout.settings.refuse_other_settings`): the same path may hold other
weights after training wrote to it. Hashing reads every weight file once (seconds per GB;
the files are in the page cache after loading); the device and thread count are not logged.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from stategym.kernel.errors import AgentStopped
from stategym.kernel.files import open_regular
from stategym.llm.agent import Reply, Turn
from stategym.llm.local import ContextLengthError, Generation, LocalModel, Message, Sampling
from stategym.llm.parse import parse

WEIGHT_SUFFIXES = (".safetensors", ".bin")
"""Weight files (single files and shards; a shard index is a ``.json`` named for them)."""
WEIGHT_NAMES = ("config.json", "generation_config.json")
"""What else decides the network's output: its architecture and its stop tokens."""
TOKENIZER_NAMES = (
    "tokenizer.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)
"""The files the tokenizer and its chat template load from (and additional_chat_templates/)."""
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
        self.digest = model_digest(model.path)
        """The loaded model's file digests (taken now: a later write to the folder is not
        what this backend plays)."""
        self.chat = model.chat
        """The chat template the agent cuts observation tokens from (token-in-token-out)."""
        self.batches = 0
        """Batches answered by :meth:`complete` (episodes played concurrently share them)."""
        self._waiting: list[tuple[Turn, asyncio.Future[Generation | ContextLengthError]]] = []
        self._flush: asyncio.Task[None] | None = None

    def describe(self) -> dict[str, Any]:
        sampling = asdict(self.sampling)
        del sampling["seed"]
        return {
            "backend": "hf",
            "model": str(self.model.path),
            "device": self.model.device,
            "sampling": sampling,
            "model_digest": self.digest,
        }

    def runtime(self) -> dict[str, Any]:
        """How the model ran that does not change what it plays, as every trajectory's
        ``meta["runtime"]`` logs it (never compared when a run resumes): torch's threads,
        which another machine's defaults change."""
        return {"threads": self.model.threads}

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


def model_digest(folder: Path) -> dict[str, str]:
    """SHA-256 digests of a model folder's ``weights`` (:data:`WEIGHT_SUFFIXES` and
    :data:`WEIGHT_NAMES`, shard indexes included) and ``tokenizer`` (:data:`TOKENIZER_NAMES`
    and ``additional_chat_templates/*.jinja``) files, each over the files' names and
    contents. Other files (a README, a recipe record with timings) change nothing the model
    plays and are left out. Cached per folder while no file's size or time changes, so the
    backends of one run (one per domain) hash the weights once."""
    root = Path(folder).resolve()
    stats = [(part, name, path.stat()) for part, name, path in _model_files(root)]
    signature = tuple((part, name, st.st_size, st.st_mtime_ns) for part, name, st in stats)
    return dict(_digests(root, signature))


def _model_files(folder: Path) -> list[tuple[str, str, Path]]:
    """The files :func:`model_digest` hashes, as ``(part, name in the folder, path)``,
    sorted by name."""
    paths = [p for p in folder.iterdir() if p.is_file()]
    templates = folder / "additional_chat_templates"
    if templates.is_dir():
        paths += [p for p in templates.glob("*.jinja") if p.is_file()]
    files = []
    for path in paths:
        part = _part(path.name)
        if part is not None:
            files.append((part, path.relative_to(folder).as_posix(), path))
    return sorted(files, key=lambda file: file[1])


def _part(name: str) -> str | None:
    """Which digest a file of the folder belongs to (``None``: neither)."""
    if name.endswith((*WEIGHT_SUFFIXES, ".index.json")) or name in WEIGHT_NAMES:
        return "weights"
    if name in TOKENIZER_NAMES or name.endswith(".jinja"):
        return "tokenizer"
    return None


@functools.lru_cache(maxsize=8)
def _digests(
    folder: Path, signature: tuple[tuple[str, str, int, int], ...]
) -> tuple[tuple[str, str], ...]:
    """The digests of :func:`model_digest` (``signature``: each file's part, name, size and
    time, the cache's key)."""
    parts = {"weights": hashlib.sha256(), "tokenizer": hashlib.sha256()}
    for part, name, _, _ in signature:
        with open_regular(folder / name) as handle:  # a FIFO swapped in: refused, no hang
            content = hashlib.file_digest(handle, "sha256").hexdigest()
        parts[part].update(f"{name}\0{content}\n".encode())
    return tuple((part, digest.hexdigest()) for part, digest in parts.items())
