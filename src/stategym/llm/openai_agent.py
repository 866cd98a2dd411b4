"""The OpenAI-compatible agent (``openai:MODEL``): any chat-completions endpoint.

vLLM, SGLang, Ollama, ``stategym serve`` and hosted APIs all speak this protocol. Tools go as
function schemas, the reply's ``tool_calls`` are one parallel round and plain ``content``
goes to the simulated user. Every request carries a sampling ``seed`` derived from (run seed,
task, sample, round), as an ``hf:`` agent seeds each round, and ``meta.sampling.seed`` logs
the run seed (:attr:`Settings.seed`, 0 unless given): the same command against
``stategym serve`` gives the same episodes; an endpoint that ignores ``seed`` does not.
Before the first request the endpoint is asked for its models, once and quickly
(:func:`check_endpoint`), so a server that is down fails at once. Transient failures
(timeouts, connection errors, 408/409/429 and 5xx answers) are retried with exponential
backoff; a request rejected because the conversation outgrew the model's context
(its error message or body says so) ends the episode (:class:`AgentStopped`); any other
error stops the run, since it would fail every episode the same way, and the CLI says it in
one line (:func:`failure_line`: status, address and the body's first line).

The endpoint is read like the model it serves, as untrusted input (:func:`response_body`,
:func:`reply_of`): its text is made valid UTF-8 by the environment's rule for agent text
(:func:`~stategym.kernel.boundary.clean_text`: a lone surrogate becomes U+FFFD); the
assistant message goes to the renderer as sent, which makes any shape it cannot read the
round's format error; every other field is read by type, and one of the wrong type (a
``finish_reason`` that is no string, token ids that are not 64-bit counts, a count of tokens
that is negative or ``NaN``...) is left out and named in the round's ``meta["dropped"]``, so
nothing is logged in a form the trajectory reader refuses. A body that is no JSON object is
no chat completion: it stops the run like any refused request.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from stategym.kernel.boundary import clean_strings, clean_text
from stategym.kernel.errors import AgentStopped, UsageError
from stategym.kernel.verify import PARSER_KINDS
from stategym.llm.agent import COUNT_LIMIT, Reply, Turn, finite_number
from stategym.llm.prompt import Message

if TYPE_CHECKING:
    import openai
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
_CONTEXT_SCAN = 4096
"""Characters of an error's body searched for :data:`_CONTEXT_WORDS`."""
HttpResponse = Any
"""A response of the HTTP library the installed ``openai`` client is built on (``httpx``, or
its successor): its ``text``, ``status_code``, ``reason_phrase``, ``headers`` and ``request``."""
_SHOWN = 200
"""Characters of an endpoint's body a failure line shows."""
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a surrogate: only text holding one can decode to a lone surrogate."""


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
    seed: int = 0
    """Base sampling seed (the run seed; 0 by default, as ``hf:`` agents). Every request
    carries the seed derived from (seed, task, sample, round), the one an ``hf:`` agent
    samples its round with, so the same command against ``stategym serve`` reproduces its
    episodes; an endpoint that ignores ``seed``, or honours it at best effort (as OpenAI's
    own documents), samples as it likes."""
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
            if k in ("temperature", "top_p", "max_tokens", "seed") and v is not None
        }
        described = {
            "backend": "openai",
            "model": self.settings.model,
            "base_url": self._address(),
            "sampling": sampling,
            "extra_body": dict(self.settings.extra_body),  # sent with every request (top_k)
        }
        if self.settings.tokenizer is not None:
            described["tokenizer"] = self.settings.tokenizer
        return described

    def _address(self) -> str:
        """The endpoint the requests go to, as logged and compared on resume: the given
        client's, else :func:`endpoint_url` (``OPENAI_BASE_URL`` when no ``base_url`` is
        given), with no trailing slash (``.../v1/`` is ``.../v1``)."""
        if self._client is not None:
            return str(self._client.base_url).rstrip("/")
        return endpoint_url(self.settings.base_url)

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
                # The raw answer: the body is read here, by type, not by the client's models
                # (which take any shape and crash on it later).
                answer = await client.chat.completions.with_raw_response.create(**request)
                return reply_of(response_body(answer.http_response))
            except openai.BadRequestError as error:
                if _context_exceeded(error):
                    raise AgentStopped(f"context_length: {error}") from None
                raise
            except openai.APIError as error:
                if not _transient(error):
                    raise
                if attempt == self.settings.retries:
                    error.add_note(f"(gave up after {attempt} retries)")
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
        request["seed"] = turn.seed  # derived from (run seed, task, sample, round)
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


def endpoint_url(base_url: str | None) -> str:
    """The address a client given ``base_url`` talks to: it, else ``OPENAI_BASE_URL``, else
    OpenAI's, without a trailing slash."""
    return (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")


OPENAI_URL = "https://api.openai.com/v1"
"""Where the ``openai`` client goes when neither ``base_url`` nor ``OPENAI_BASE_URL`` is set."""


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

    url = endpoint_url(base_url)
    key = api_key_or_default(api_key)
    with openai.OpenAI(base_url=url, api_key=key, timeout=PROBE_TIMEOUT, max_retries=0) as client:
        try:
            answer = client.models.with_raw_response.list()
        except openai.APIConnectionError:  # includes timeouts
            raise UsageError(f"cannot reach {url} (is the server running?)") from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise UsageError(f"{url} refused the API key (OPENAI_API_KEY): {error}") from None
        except openai.APIStatusError:
            return
        served = served_models(answer.http_response)
    # Ollama lists "name:latest" and answers to the bare name too.
    if served and model not in served and f"{model}:latest" not in served:
        shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
        raise UsageError(f"{url} does not serve model {model!r}; it serves: {shown}")


def served_models(response: HttpResponse) -> list[str]:
    """The model ids a ``/models`` answer lists; empty when it lists none readably.

    A body that is no JSON object with a ``data`` list, and entries without a string ``id``,
    are read as an endpoint that does not implement the listing: it passes, and its first
    request will tell.
    """
    body = _json_or_none(response.text)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return []
    return [
        clean_text(entry["id"])
        for entry in data
        if isinstance(entry, dict) and type(entry.get("id")) is str
    ]


def response_body(response: HttpResponse) -> dict[str, Any]:
    """A chat-completion answer's JSON object, its text made valid UTF-8 (:func:`clean_text`).

    Read with the standard library, which reads lone surrogate escapes (cleaned here) and
    ``NaN`` (left for the readers of :func:`reply_of` to drop).

    Raises:
        openai.APIResponseValidationError: the body is not JSON, or not a JSON object (a
            list, a string, null): no chat completion; it stops the run.
    """
    import openai

    text = response.text
    body = _json_or_none(text)
    if isinstance(body, dict) and _SURROGATE_ESCAPE.search(text):
        try:
            body = clean_strings(body)
        except RecursionError:  # nested deeper than the walk can go: read as no JSON
            body = None
    if isinstance(body, dict):
        return body
    what = "JSON that is no object" if body is not None or text.strip() == "null" else "no JSON"
    message = (
        f"{response.request.url} answered {response.status_code} with {what}, not a chat "
        f"completion: {body_line(text)}"
    )
    raise openai.APIResponseValidationError(response, text, message=message)


def _json_or_none(text: str) -> Any:
    """``text`` decoded as JSON, or ``None`` if it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # ValueError: also an integer of 4,300 digits
        return None


def failure_line(error: BaseException) -> str | None:
    """What an endpoint error that stops a run says, on one line; ``None`` for other errors.

    An error of the ``openai`` client that got past the retries (a refused request, a server
    that kept failing, a body that is no chat completion) stops the run: it would fail every
    episode the same way. The CLI prints this line instead of a traceback; the episodes
    finished before it are on disk already.
    """
    import openai

    if not isinstance(error, openai.APIError):
        return None
    if isinstance(error, openai.APIStatusError):
        text = _status_line(error)
    elif isinstance(error, openai.APIConnectionError):  # a timeout, a connection cut
        text = f"{error.request.method} {error.request.url}: {error}"
    else:
        text = str(error)
    notes = getattr(error, "__notes__", [])
    return " ".join([text, *(str(note) for note in notes)])


def _status_line(error: openai.APIStatusError) -> str:
    response = error.response
    status = f"{response.status_code} {response.reason_phrase}".strip()
    where = f"{error.request.method} {error.request.url} answered {status}"
    location = response.headers.get("location")
    if location:
        return f"{where} (a redirect to {location}, which is not followed)"
    unread = response.is_closed and not response.is_stream_consumed  # as the client tells
    return f"{where}: {body_line('' if unread else response.text)}"


def body_line(text: str) -> str:
    """The first line of an endpoint's body that has text, cut to :data:`_SHOWN` characters."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "(an empty body)")
    line = clean_text(line)
    return line if len(line) <= _SHOWN else line[: _SHOWN - 1] + "\u2026"


def _context_exceeded(error: openai.APIStatusError) -> bool:
    """Whether a refused request was refused for its length: the error's message or its body
    (JSON or plain text, as a proxy may send) says so."""
    said = f"{error} {error.body}"[:_CONTEXT_SCAN].lower()
    return any(word in said for word in _CONTEXT_WORDS)


def _transient(error: Exception) -> bool:
    import openai

    if isinstance(error, openai.APIConnectionError):  # includes timeouts
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in _TRANSIENT_STATUS or error.status_code >= 500
    return False


def reply_of(body: dict[str, Any]) -> Reply:
    """The assistant message and the round's log from a chat completion, read by type.

    The message of the first choice goes to the renderer as sent (one that is no object is
    an empty message): the core makes whatever it cannot read the round's format error. The
    other fields are kept only when of their type; the names of those that were not are
    listed in ``meta["dropped"]``.
    """
    dropped: list[str] = []
    choice = _first_choice(body.get("choices"), dropped)
    raw = choice.get("message")
    if raw is not None and not isinstance(raw, dict):
        dropped.append("message")
    raw = raw if isinstance(raw, dict) else {}
    message: Message = {"role": "assistant", "content": raw.get("content")}
    if raw.get("tool_calls"):
        message["tool_calls"] = raw["tool_calls"]
    meta: dict[str, Any] = {"finish_reason": _read(choice, "finish_reason", _text, dropped)}
    meta["usage"] = _usage(body.get("usage"), dropped)
    refusal = _read(raw, "refusal", _text, dropped)
    if refusal:
        meta["refusal"] = refusal
    logprobs = _read(choice, "logprobs", _logprobs, dropped)
    if logprobs:
        meta["logprobs"], meta["tokens"] = logprobs
    for field_name, source, key in (
        ("completion_token_ids", choice, "token_ids"),
        ("prompt_token_ids", body, "prompt_token_ids"),
    ):
        ids = _read(source, key, _ids, dropped)
        if ids is not None:
            meta[field_name] = ids
    errors = _parse_errors(choice.get("stategym"), dropped)
    if errors:
        meta["format_errors"] = list(errors)
    if dropped:
        meta["dropped"] = dropped
    return Reply(message, meta, errors)


def _first_choice(choices: Any, dropped: list[str]) -> dict[str, Any]:
    """The first choice, or an empty one (no choices: an empty message)."""
    if choices is None or choices == []:
        return {}
    if isinstance(choices, list) and isinstance(choices[0], dict):
        return choices[0]
    dropped.append("choices")
    return {}


def _read(source: dict[str, Any], key: str, read: Callable[[Any], Any], dropped: list[str]) -> Any:
    """``read(source[key])``; ``None`` when absent or, noted in ``dropped``, of another type."""
    value = source.get(key)
    if value is None:
        return None
    typed = read(value)
    if typed is None:
        dropped.append(key)
    return typed


def _text(value: Any) -> str | None:
    return value if type(value) is str else None


def _count(value: Any) -> int | None:
    """A count of tokens, or a token id: an integer in [0, 2**63) (not a bool, nor 1.0)."""
    return value if type(value) is int and 0 <= value < COUNT_LIMIT else None


def _ids(value: Any) -> list[int] | None:
    if type(value) is list and all(_count(item) is not None for item in value):
        return value
    return None


def _usage(value: Any, dropped: list[str]) -> dict[str, int | None]:
    """Both counts of ``usage``, each ``None`` when absent or not a count (then dropped)."""
    if value is not None and not isinstance(value, dict):
        dropped.append("usage")
    usage = value if isinstance(value, dict) else {}
    counts = {}
    for key in ("prompt_tokens", "completion_tokens"):
        counts[key] = _read(usage, key, _count, dropped)
    return counts


def _logprobs(value: Any) -> tuple[list[float], list[str]] | None:
    """``logprobs.content`` as parallel lists, if every entry has a string ``token`` and a
    finite ``logprob``; both go or neither (``{"content": null}``: none were asked for)."""
    if not isinstance(value, dict):
        return None
    content = value.get("content")
    if content is None:
        return [], []
    if type(content) is not list:
        return None
    numbers, tokens = [], []
    for item in content:
        entry: dict[str, Any] = item if isinstance(item, dict) else {}
        number, token = finite_number(entry.get("logprob")), entry.get("token")
        if number is None or type(token) is not str:
            return None
        numbers.append(number)
        tokens.append(token)
    return numbers, tokens


def _parse_errors(extension: Any, dropped: list[str]) -> tuple[str, ...]:
    """``stategym.format_errors`` (the parse errors ``stategym serve`` reported), if a list
    of the parser's kinds: any other kind would be a format error the round's
    replay cannot give, so the log would fail verify (dropped whole, like any mistyped field)."""
    if extension is None:
        return ()
    errors = extension.get("format_errors") if isinstance(extension, dict) else None
    if errors is None:
        if not isinstance(extension, dict):
            dropped.append("stategym")
        return ()
    if type(errors) is list and all(type(e) is str and e in PARSER_KINDS for e in errors):
        return tuple(errors)
    dropped.append("stategym.format_errors")
    return ()
