"""The OpenAI-compatible agent (``openai:MODEL``): any chat-completions endpoint.

vLLM, SGLang, Ollama, ``stategym serve`` and hosted APIs all speak this protocol. Tools go as
function schemas, the reply's ``tool_calls`` are one parallel round and plain ``content``
goes to the simulated user. Before the first request the endpoint is asked for its models,
once and quickly (:func:`check_endpoint`), so a server that is down fails at once. Transient
failures (timeouts, connection errors, 408/409/429 and 5xx answers) are retried with
exponential backoff; a request rejected because the conversation outgrew the model's context
ends the episode (:class:`AgentStopped`); any other error stops the run, since it would fail
every episode the same way.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from stategym.kernel.errors import AgentStopped, UsageError
from stategym.llm.agent import Reply, Turn
from stategym.llm.prompt import Message

if TYPE_CHECKING:
    from openai import AsyncOpenAI

PROBE_TIMEOUT = 10.0
"""Seconds :func:`check_endpoint` waits for the model list."""
_TRANSIENT_STATUS = frozenset({408, 409, 429})
_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
)


@dataclass(frozen=True, slots=True)
class Settings:
    """How to reach the endpoint and sample from it (``None``: the server's default)."""

    model: str
    """Model name the server knows."""
    base_url: str | None = None
    """Endpoint, e.g. ``http://127.0.0.1:8000/v1``; ``None``: ``OPENAI_BASE_URL`` or OpenAI."""
    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    max_tokens: int | None = None
    """Most tokens per reply."""
    seed: int | None = None
    """Base sampling seed; each request gets one derived from (seed, task, sample, round)."""
    logprobs: bool = False
    """Ask for the log-probability of every generated token."""
    token_ids: bool = False
    """Ask for token ids (vLLM's and ``stategym serve``'s ``return_token_ids``)."""
    timeout: float = 120.0
    """Seconds before one request times out (and is retried)."""
    retries: int = 4
    """Retries of a request after a transient failure."""
    backoff: float = 1.0
    """First retry delay in seconds; doubles on each retry, capped at 30 s."""
    extra_body: dict[str, Any] = field(default_factory=dict)
    """Server-specific request fields (e.g. vLLM's ``top_k``)."""
    tokenizer: str | None = None
    """A local folder with the served model's tokenizer: token-in-token-out. Each request
    then carries the episode's token stream as ``prompt_token_ids`` (the sampled ids as
    sampled, observations tokenised by the renderer), which ``stategym serve`` continues
    as given; token ids are asked for (``return_token_ids``)."""


class OpenAIBackend:
    """Replies from a chat-completions endpoint through the official ``openai`` client.

    Args:
        settings: endpoint and sampling.
        client: a ready ``AsyncOpenAI`` client (the test seam: give it a mock transport);
            by default one is made per event loop, with the client's own retries off.
        api_key: key for the endpoint; default ``OPENAI_API_KEY``, else ``"EMPTY"`` (what
            local servers accept).
    """

    def __init__(
        self, settings: Settings, *, client: AsyncOpenAI | None = None, api_key: str | None = None
    ) -> None:
        self.settings = settings
        self._client = client
        self._api_key = api_key_or_default(api_key)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )
        self._checked = client is not None  # a given client is the test seam: nothing to reach
        self._check_lock = threading.Lock()
        self.chat: Any = None
        """The chat template the agent cuts observation tokens from (``tokenizer`` given)."""
        if settings.tokenizer is not None:
            from stategym.llm.local import ChatTokenizer

            self.chat = ChatTokenizer.load(settings.tokenizer)

    def check(self) -> None:
        """Check the endpoint once (:func:`check_endpoint`); later calls return at once.

        Called before the first request rather than at construction, so making a backend
        never touches the network, and a server that is down fails in seconds rather than
        after every retry of the first request.
        """
        if self._checked:
            return
        with self._check_lock:  # concurrent first requests: one probe
            if not self._checked:
                check_endpoint(self.settings.model, self.settings.base_url, self._api_key)
                self._checked = True

    def describe(self) -> dict[str, Any]:
        sampling = {
            k: v
            for k, v in asdict(self.settings).items()
            if k in ("temperature", "top_p", "max_tokens") and v is not None
        }
        described = {
            "backend": "openai",
            "model": self.settings.model,
            "base_url": self.settings.base_url,
            "sampling": sampling,
        }
        if self.settings.tokenizer is not None:
            described["tokenizer"] = self.settings.tokenizer
        return described

    def _new_client(self) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(
            base_url=self.settings.base_url,
            api_key=self._api_key,
            timeout=self.settings.timeout,
            max_retries=0,
        )

    def _client_here(self) -> AsyncOpenAI:
        """The client for the running event loop (connections belong to one loop)."""
        if self._client is not None:
            return self._client
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._new_client()
        return client

    async def aclose(self) -> None:
        """Close the client this backend made for the running loop (if any)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def complete_sync(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        self.check()

        async def once() -> Reply:
            if self._client is not None:
                return await self._complete(self._client, messages, tools, turn)
            async with self._new_client() as client:
                return await self._complete(client, messages, tools, turn)

        return asyncio.run(once())

    async def complete(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> Reply:
        # Blocks the loop once, for at most PROBE_TIMEOUT: no episode can progress without
        # the endpoint anyway, and there is no await under the lock, so no coroutine waits
        # on it while holding the loop.
        self.check()
        return await self._complete(self._client_here(), messages, tools, turn)

    async def _complete(
        self,
        client: AsyncOpenAI,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        turn: Turn,
    ) -> Reply:
        import openai

        request = self._request(messages, tools, turn)
        for attempt in range(self.settings.retries + 1):
            try:
                response = await client.chat.completions.create(**request)
                return _reply(response.model_dump(exclude_unset=True))
            except openai.BadRequestError as error:
                if any(word in str(error).lower() for word in _CONTEXT_WORDS):
                    raise AgentStopped(f"context_length: {error}") from None
                raise
            except openai.APIError as error:
                if not _transient(error) or attempt == self.settings.retries:
                    raise
            await asyncio.sleep(min(30.0, self.settings.backoff * 2**attempt))
        raise AssertionError("unreachable: the loop returns or raises")

    def _request(
        self, messages: Sequence[Message], tools: Sequence[dict[str, Any]], turn: Turn
    ) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "model": s.model,
            "messages": list(messages),
            "tools": list(tools),
            "timeout": s.timeout,
        }
        for name in ("temperature", "top_p", "max_tokens"):
            if getattr(s, name) is not None:
                request[name] = getattr(s, name)
        if s.seed is not None:
            request["seed"] = turn.seed  # derived from (s.seed, task, sample, round)
        if s.logprobs:
            request["logprobs"] = True
        extra = dict(s.extra_body)
        if s.token_ids or turn.prompt_ids is not None:
            extra["return_token_ids"] = True
        if turn.prompt_ids is not None:
            extra["prompt_token_ids"] = list(turn.prompt_ids)
        if extra:
            request["extra_body"] = extra
        return request


def api_key_or_default(api_key: str | None) -> str:
    """``api_key``, else ``OPENAI_API_KEY``, else ``"EMPTY"`` (what local servers accept)."""
    return api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"


def check_endpoint(model: str, base_url: str | None, api_key: str | None = None) -> None:
    """Ask the endpoint for its models once, with a short timeout, before any episode.

    A server that is down then fails in seconds with a clear message, instead of after
    every retry of the first request; a model the server does not list fails the same way.
    An endpoint that answers the listing with an error other than a refused key (some do
    not implement it) passes: its first request will tell.

    Raises:
        UsageError: the endpoint cannot be reached, refuses the key, or does not serve
            ``model``.
    """
    import openai

    url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    key = api_key_or_default(api_key)
    with openai.OpenAI(base_url=url, api_key=key, timeout=PROBE_TIMEOUT, max_retries=0) as client:
        try:
            served = [m.id for m in client.models.list()]
        except openai.APIConnectionError:  # includes timeouts
            raise UsageError(f"cannot reach {url} (is the server running?)") from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise UsageError(f"{url} refused the API key (OPENAI_API_KEY): {error}") from None
        except openai.APIStatusError:
            return
    # Ollama lists "name:latest" and answers to the bare name too.
    if served and model not in served and f"{model}:latest" not in served:
        shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
        raise UsageError(f"{url} does not serve model {model!r}; it serves: {shown}")


def _transient(error: Exception) -> bool:
    import openai

    if isinstance(error, openai.APIConnectionError):  # includes timeouts
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in _TRANSIENT_STATUS or error.status_code >= 500
    return False


def _reply(response: dict[str, Any]) -> Reply:
    """The assistant message and the round's log from a chat-completion response."""
    choice = (response.get("choices") or [{}])[0]
    raw = choice.get("message") or {}
    message: Message = {"role": "assistant", "content": raw.get("content")}
    calls = [
        {
            "id": c.get("id") or "",
            "type": "function",
            "function": {
                "name": (c.get("function") or {}).get("name", ""),
                "arguments": (c.get("function") or {}).get("arguments", ""),
            },
        }
        for c in raw.get("tool_calls") or []
    ]
    if calls:
        message["tool_calls"] = calls
    meta: dict[str, Any] = {"finish_reason": choice.get("finish_reason")}
    usage = response.get("usage") or {}
    meta["usage"] = {key: usage.get(key) for key in ("prompt_tokens", "completion_tokens")}
    if raw.get("refusal"):
        meta["refusal"] = raw["refusal"]
    logprobs = (choice.get("logprobs") or {}).get("content")
    if logprobs:
        meta["logprobs"] = [item.get("logprob") for item in logprobs]
        meta["tokens"] = [item.get("token") for item in logprobs]
    if choice.get("token_ids") is not None:
        meta["completion_token_ids"] = list(choice["token_ids"])
    if response.get("prompt_token_ids") is not None:
        meta["prompt_token_ids"] = list(response["prompt_token_ids"])
    extension = choice.get("stategym") or {}
    errors = tuple(str(e) for e in extension.get("format_errors") or ())
    if errors:
        meta["format_errors"] = list(errors)
    return Reply(message, meta, errors)
