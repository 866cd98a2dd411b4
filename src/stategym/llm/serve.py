"""``stategym serve``: an OpenAI-compatible chat-completions server over a local model.

``POST /v1/chat/completions`` takes ``messages``, ``tools`` and the usual sampling fields and
answers with ``tool_calls`` parsed from the model's text, so any OpenAI-compatible harness
(and :mod:`stategym.llm.openai_agent`) can evaluate a model trained here. Like vLLM it returns
``prompt_token_ids`` and each choice's ``token_ids`` when the request sets
``return_token_ids``, and per-token ``logprobs`` when asked. Each choice also carries
``stategym.format_errors``: malformations the parser tolerated. A request's ``messages`` and
``tools`` are rendered by the model's chat template with every text in them tokenised as text
(contents, earlier calls' names and arguments, tools' names, descriptions and schemas:
:func:`~stategym.rendering.tokens.conversation_texts`), so the prompt holds no special token
the template did not write, whatever model text a client sends back. A request with
``prompt_token_ids`` (token-in-token-out clients) is continued from those ids as given; its
``messages`` are not rendered. A request naming another
model than the one served is answered 404 ``model_not_found``, as OpenAI does (an empty
``model`` is taken to mean the served one). Streaming is not supported.
Binds to 127.0.0.1 unless told otherwise; there is no authentication.

A request is checked whole before it joins a batch, and a bad one is answered 400
``invalid_request_error`` naming what is wrong: the shapes of its fields
(:class:`~stategym.llm.requests.ChatRequest`: messages, tools, ``seed`` a signed 32-bit
integer, as is ``seed + n - 1``), a chat template that refuses its messages, and what the model
cannot decode
(:meth:`LocalModel.check`: token ids outside the vocabulary...). A temperature below
:data:`~stategym.llm.local.MIN_TEMPERATURE` decodes greedily. A body over
:data:`MAX_BODY_BYTES` is answered 413 before it is parsed. A ``null`` for a field that has a
default is that default, as OpenAI reads it. Every refusal is OpenAI's
``{"error": {"message", "type", "param", "code"}}``, the web framework's own included (a body
that is not UTF-8 JSON, or nests past the decoder's limit; an unknown path or method).

Concurrent requests are decoded together (:class:`Batcher`): while one batch decodes, the
requests that arrive wait, and the next batch takes every waiting one (each of a request's
``n`` choices is one row), so a harness with many episodes in flight gets one forward per
token for all of them. A row's tokens are its own seed's, whatever shares its batch, and one
request's failure is its own: a batch that fails is decoded again one request at a time.
Choice ``i`` samples with seed ``seed + i`` (as a request of that seed and ``n`` 1 does), else
with the request's number plus ``i`` (modulo ``2**31``); seeds are the signed 32-bit integers
(:data:`~stategym.llm.local.SEEDS`), the bits torch's CPU generator keeps, so two seeds never
sample alike (a wider seed would be folded onto another: ``-1`` and ``2**63 - 1`` sampled the
same tokens), and a seed outside is a 400.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Self

import orjson

from stategym.llm.local import (
    SEEDS,
    ContextLengthError,
    Generation,
    InvalidRequestError,
    LocalModel,
    Sampling,
)
from stategym.llm.model_files import check_servable
from stategym.llm.parse import parse
from stategym.llm.requests import ChatRequest
from stategym.llm.turns import template_errors

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

DEFAULT_MAX_TOKENS = 256
MAX_BATCH_ROWS = 64
"""Rows (choices) decoded together at most; more waiting requests go in the next batch."""
MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body (4 MiB: a conversation filling a 128k-token context, with its
``prompt_token_ids``, is about 1.5 MiB); a larger one is answered 413 before it is parsed."""

Job = tuple[tuple[int, ...], Sampling]
"""One choice to generate: the prompt's ids and how to sample."""


class Batcher:
    """Decodes the choices of concurrent requests in shared batches.

    :meth:`generate` queues one request's jobs and waits. When no batch is decoding, the
    waiting requests (whole, up to ``max_rows`` rows; a larger request alone) go to
    :meth:`LocalModel.generate_batch` in a worker thread, and every request gets its own
    rows back. Requests that arrive meanwhile wait for the next batch: no timer, so a lone
    request is answered as soon as the model is free.

    A batch that raises is decoded again one request at a time, so only the request that
    breaks it fails (with its own error) and the others get their rows.

    Attributes:
        batches: how many rows each batch decoded, in order (what the tests and
            benchmarks read).
    """

    def __init__(self, model: LocalModel, max_rows: int = MAX_BATCH_ROWS) -> None:
        self.model = model
        self.max_rows = max_rows
        self.batches: list[int] = []
        self._waiting: list[tuple[list[Job], asyncio.Future[list[Any]]]] = []
        self._drainer: asyncio.Task[None] | None = None  # held: the loop keeps weak references

    async def generate(self, jobs: list[Job]) -> list[Generation | ContextLengthError]:
        """Each job's generation (or its context error), in order."""
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._waiting.append((jobs, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._waiting:
            taken, rows = 0, 0
            for jobs, _ in self._waiting:
                if taken and rows + len(jobs) > self.max_rows:
                    break
                taken, rows = taken + 1, rows + len(jobs)
            batch, self._waiting = self._waiting[:taken], self._waiting[taken:]
            try:
                await self._decode(batch)
            except Exception as error:
                if len(batch) == 1:
                    _fail(batch[0][1], error)
                    continue
                for one in batch:  # which request broke the batch? it alone fails
                    try:
                        await self._decode([one])
                    except Exception as alone:  # a bug that request meets: it reports it
                        _fail(one[1], alone)

    async def _decode(self, batch: list[tuple[list[Job], asyncio.Future[list[Any]]]]) -> None:
        """Decode the batch's requests (those not cancelled) and give each its rows."""
        batch = [(jobs, future) for jobs, future in batch if not future.done()]
        if not batch:
            return
        flat = [(prompt, sampling, None) for jobs, _ in batch for prompt, sampling in jobs]
        self.batches.append(len(flat))
        answers = await asyncio.to_thread(self.model.generate_batch, flat)
        start = 0
        for jobs, future in batch:
            if not future.done():  # a request cancelled while it waited gets nothing
                future.set_result(answers[start : start + len(jobs)])
            start += len(jobs)


def _fail(future: asyncio.Future[list[Any]], error: Exception) -> None:
    if not future.done():
        future.set_exception(error)


def create_app(
    model: LocalModel, *, name: str | None = None, max_body_bytes: int = MAX_BODY_BYTES
) -> FastAPI:
    """The FastAPI application serving ``model`` under ``name`` (default: its folder name);
    a request body over ``max_body_bytes`` is answered 413.

    Raises:
        UsageError: the model's folder records a rendering other than ``messages``, which
            the chat template's conversation is not (:func:`check_servable`).
    """
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    if (folder := getattr(model, "path", None)) is not None:  # a stand-in model has none
        check_servable(folder)
    served = name or model.name
    counter = itertools.count()
    app = FastAPI(title="stategym serve")
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    _refusals_in_openai_shape(app)
    batcher = Batcher(model)
    app.state.batcher = batcher

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": served, "object": "model", "created": 0, "owned_by": "stategym"}],
        }

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(body: ChatRequest) -> dict[str, Any] | JSONResponse:
        if body.stream:
            return _error(400, "streaming is not supported", "invalid_request_error")
        if body.model and body.model != served:  # as OpenAI answers for a model it lacks
            return _error(
                404,
                f"The model {body.model!r} does not exist; this server serves {served!r}",
                "invalid_request_error",
                "model_not_found",
            )
        number = next(counter)
        try:  # the whole request is checked before it joins a batch
            prompt = await asyncio.to_thread(_prompt, model, body)
            jobs = _jobs(body, prompt, number)
            for job_prompt, sampling in jobs:
                model.check(job_prompt, sampling)
        except InvalidRequestError as error:
            return _error(400, f"invalid request: {error}", "invalid_request_error")
        except ContextLengthError as error:
            return _too_long(model, error)
        generations = await batcher.generate(jobs)
        for generation in generations:  # every choice shares the prompt: all or none fit
            if isinstance(generation, ContextLengthError):
                return _too_long(model, generation)
        done = [g for g in generations if isinstance(g, Generation)]
        return _response(model, body, served, number, done)

    return app


def _too_long(model: LocalModel, error: ContextLengthError) -> Any:
    return _error(
        400,
        f"This model's maximum context length is {model.context} tokens: {error}",
        "invalid_request_error",
        "context_length_exceeded",
    )


def _refusals_in_openai_shape(app: FastAPI) -> None:
    """Answer a request FastAPI itself refuses as OpenAI does: a field of the wrong shape,
    and its own refusals (a body it cannot parse: bytes that are not UTF-8, JSON nested past
    the decoder's recursion limit; an unknown path or method) in the documented shape, not
    its ``{"detail": ...}``."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return _error(400, f"invalid request: {_fields(error.errors())}", "invalid_request_error")

    @app.exception_handler(HTTPException)
    async def refused(request: Request, error: HTTPException) -> JSONResponse:
        kind = "invalid_request_error" if error.status_code < 500 else "server_error"
        response: JSONResponse = _error(error.status_code, str(error.detail), kind)
        response.headers.update(error.headers or {})
        return response


def _prompt(model: LocalModel, body: ChatRequest) -> tuple[int, ...]:
    """The request's prompt ids: ``prompt_token_ids`` as given (token-in-token-out: the
    client's stream continued as it is), else its messages rendered by the chat template.

    Raises:
        ContextLengthError: more messages than the context has tokens, refused before the
            template renders them (rendering 50,000 took minutes: audit 17B F1).
        InvalidRequestError: text that is not Unicode (a lone surrogate, which JSON's
            ``\\ud800`` escape can write), or a chat template that refuses the messages (its
            own ``raise_exception``, a field it needs that is missing or of another type).
    """
    if body.prompt_token_ids is not None:
        return tuple(body.prompt_token_ids)
    if len(body.messages) > model.context:  # every message renders a token at least
        raise ContextLengthError(
            f"the request has {len(body.messages)} messages, more than the context has tokens"
        )
    messages = [m.model_dump(exclude_unset=True) for m in body.messages]  # as the client sent
    tools = [t.model_dump(exclude_unset=True) for t in body.tools or []]
    try:
        orjson.dumps([messages, tools])  # refuses a lone surrogate, which no tokenizer takes
    except orjson.JSONEncodeError as error:
        raise InvalidRequestError(f"the messages or tools hold no valid text: {error}") from None
    try:
        return tuple(model.render(messages, tools))
    # The template runs on the client's data: its TypeError (a join over a number where it
    # expects a list) is the request's fault, as its raise_exception is.
    except template_errors(ValueError) as error:
        raise InvalidRequestError(f"the chat template cannot render them: {error}") from None


def _jobs(body: ChatRequest, prompt: tuple[int, ...], number: int) -> list[Job]:
    """One job per choice, each with its seed (:func:`_choice_seeds`).

    Raises:
        InvalidRequestError: a choice's seed past :data:`~stategym.llm.local.SEEDS`.
    """
    base = Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS,
    )
    seeds = _choice_seeds(body.seed, body.n, number)
    return [(prompt, replace(base, seed=seed)) for seed in seeds]


def _choice_seeds(seed: int | None, n: int, number: int) -> list[int]:
    """Choice ``i``'s seed: the request's ``seed`` plus ``i`` (so it samples as a request with
    seed ``seed + i`` and ``n`` 1 does), each in :data:`~stategym.llm.local.SEEDS`, where two
    seeds are two generator states; without a seed, the request's number plus ``i``, taken
    modulo ``2**31`` (a server answers 2**31 requests before two unseeded rows share one).

    Raises:
        InvalidRequestError: ``seed + n - 1`` past the largest seed (folding it back would
            give the choice another request's tokens).
    """
    if seed is None:
        return [(number + index) % SEEDS.stop for index in range(n)]
    last = seed + n - 1
    if last not in SEEDS:
        raise InvalidRequestError(
            f"seed {seed} with n={n}: choice {n - 1} would sample with seed {last}, past the "
            f"largest seed {SEEDS.stop - 1} (2**31 - 1); give a seed of at most {SEEDS.stop - n}"
        )
    return [seed + index for index in range(n)]


def _response(
    model: LocalModel,
    body: ChatRequest,
    served: str,
    number: int,
    generations: list[Generation],
) -> dict[str, Any]:
    """The OpenAI response object of one chat completion (one choice per generation)."""
    assistants = sum(1 for m in body.messages if m.role == "assistant")
    choices = [
        _choice(model, body, generation, index, f"call_{assistants}")
        for index, generation in enumerate(generations)
    ]
    prompt_ids = generations[0].prompt_ids
    completion_tokens = sum(len(g.completion_ids) for g in generations)
    response: dict[str, Any] = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served,
        "choices": choices,
        "usage": {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": completion_tokens,
            "total_tokens": len(prompt_ids) + completion_tokens,
        },
    }
    if body.return_token_ids:
        response["prompt_token_ids"] = list(prompt_ids)
    return response


def _choice(
    model: LocalModel, body: ChatRequest, generation: Generation, index: int, call_prefix: str
) -> dict[str, Any]:
    """One choice of the response: the parsed message, why it stopped, and what was asked
    for beside it (per-token logprobs, the completion's token ids)."""
    parsed = parse(generation.text)
    finish: str = generation.finish_reason
    if finish == "stop" and parsed.calls:
        finish = "tool_calls"
    choice: dict[str, Any] = {
        "index": index,
        "message": parsed.to_message(call_prefix),
        "finish_reason": finish,
        "logprobs": None,
        "stategym": {"format_errors": list(parsed.errors)},
    }
    if body.logprobs:
        choice["logprobs"] = {"content": _token_logprobs(model, generation)}
    if body.return_token_ids:
        choice["token_ids"] = list(generation.completion_ids)
    return choice


def _token_logprobs(model: LocalModel, generation: Generation) -> list[dict[str, Any]]:
    """OpenAI's ``logprobs.content``: each sampled token with its log-probability."""
    return [
        {
            "token": model.tokenizer.convert_ids_to_tokens(token),
            "logprob": logprob,
            "bytes": None,
            "top_logprobs": [],
        }
        for token, logprob in zip(generation.completion_ids, generation.logprobs, strict=True)
    ]


def _fields(errors: Any) -> str:
    """Validation errors as ``field.path: what is wrong`` (the body's own path), the first five."""
    described = [
        ".".join(str(part) for part in e["loc"] if part != "body") + ": " + e["msg"] for e in errors
    ]
    more = f" (and {len(described) - 5} more)" if len(described) > 5 else ""
    return "; ".join(described[:5]) + more


def _error(status: int, message: str, kind: str, code: str | None = None) -> Any:
    from fastapi.responses import JSONResponse

    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": code}},
        status_code=status,
    )


class BodyLimit:
    """ASGI middleware: a request whose body is over ``limit`` bytes is answered 413
    (``request_too_large``) before the application parses any of it: at once when its
    ``Content-Length`` says so, else once the bytes read pass the limit."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await self._refuse(scope, receive, send)
                return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Any, receive: Any, send: Any) -> None:
        message = f"the request body is over {self.limit} bytes"
        response = _error(413, message, "invalid_request_error", "request_too_large")
        await response(scope, receive, send)


class ThreadedServer:
    """An ASGI app served by uvicorn in a thread of this process (tests, notebooks,
    benchmarks); ``port=0`` takes a free port. A context manager: started on entry."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        name: str = "stategym-serve",
        lifespan: Literal["auto", "on", "off"] = "auto",
    ) -> None:
        import uvicorn

        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan=lifespan)
        self._server: uvicorn.Server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)

    @property
    def origin(self) -> str:
        """``http://HOST:PORT`` as bound (the free port ``port=0`` took)."""
        host, port = self._server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def start(self, timeout: float = 30.0) -> Self:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:  # uvicorn offers no event to wait on
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class BackgroundServer(ThreadedServer):
    """``stategym serve`` in a thread of this process (tests, notebooks, benchmarks).

    Example:
        >>> with BackgroundServer(LocalModel("models/tiny")) as server:  # doctest: +SKIP
        ...     print(server.base_url)
        http://127.0.0.1:53124/v1
    """

    def __init__(
        self, model: LocalModel, *, host: str = "127.0.0.1", port: int = 0, name: str | None = None
    ) -> None:
        super().__init__(create_app(model, name=name), host=host, port=port, lifespan="off")

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"


def run_server(
    model: LocalModel,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    name: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    sock: socket.socket | None = None,
) -> None:
    """Serve in the foreground until interrupted (on ``sock``, already bound, if given:
    ``host`` and ``port`` then only name it)."""
    import uvicorn

    app = create_app(model, name=name, max_body_bytes=max_body_bytes)
    if sock is None:
        uvicorn.run(app, host=host, port=port, log_level="info")
        return
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="info"))
    server.run(sockets=[sock])


__all__ = [
    "MAX_BODY_BYTES",
    "BackgroundServer",
    "Batcher",
    "BodyLimit",
    "create_app",
    "run_server",
]
