"""``stategym serve``: an OpenAI-compatible chat-completions server over a local model.

``POST /v1/chat/completions`` takes ``messages``, ``tools`` and the usual sampling fields and
answers with ``tool_calls`` parsed from the model's text, so any OpenAI-compatible harness
(and :mod:`stategym.llm.openai_agent`) can evaluate a model trained here. Like vLLM it returns
``prompt_token_ids`` and each choice's ``token_ids`` when the request sets
``return_token_ids``, and per-token ``logprobs`` when asked. Each choice also carries
``stategym.format_errors``: malformations the parser tolerated. A request with
``prompt_token_ids`` (token-in-token-out clients) is continued from those ids as given; its
``messages`` are not rendered. A request naming another
model than the one served is answered 404 ``model_not_found``, as OpenAI does (an empty
``model`` is taken to mean the served one). Streaming is not supported.
Binds to 127.0.0.1 unless told otherwise; there is no authentication.

Concurrent requests are decoded together (:class:`Batcher`): while one batch decodes, the
requests that arrive wait, and the next batch takes every waiting one (each of a request's
``n`` choices is one row), so a harness with many episodes in flight gets one forward per
token for all of them. A row's tokens are its own seed's, whatever shares its batch.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Self

import pydantic

from stategym.llm.local import ContextLengthError, Generation, LocalModel, Sampling
from stategym.llm.parse import parse

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

DEFAULT_MAX_TOKENS = 256
MAX_BATCH_ROWS = 64
"""Rows (choices) decoded together at most; more waiting requests go in the next batch."""

Job = tuple[tuple[int, ...], Sampling]
"""One choice to generate: the prompt's ids and how to sample."""


class Batcher:
    """Decodes the choices of concurrent requests in shared batches.

    :meth:`generate` queues one request's jobs and waits. When no batch is decoding, the
    waiting requests (whole, up to ``max_rows`` rows; a larger request alone) go to
    :meth:`LocalModel.generate_batch` in a worker thread, and every request gets its own
    rows back. Requests that arrive meanwhile wait for the next batch: no timer, so a lone
    request is answered as soon as the model is free.

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
            flat = [(prompt, sampling, None) for jobs, _ in batch for prompt, sampling in jobs]
            self.batches.append(len(flat))
            try:
                answers = await asyncio.to_thread(self.model.generate_batch, flat)
            except Exception as error:  # a bug: every request of the batch reports it
                for _, future in batch:
                    if not future.done():
                        future.set_exception(error)
                continue
            start = 0
            for jobs, future in batch:
                if not future.done():  # a request cancelled while it waited gets nothing
                    future.set_result(answers[start : start + len(jobs)])
                start += len(jobs)


class ChatRequest(pydantic.BaseModel):
    """The fields of a chat-completions request this server reads (others are ignored)."""

    model_config = pydantic.ConfigDict(extra="allow")

    model: str = ""
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    temperature: float = pydantic.Field(1.0, ge=0.0, le=2.0)
    top_p: float = pydantic.Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = pydantic.Field(None, ge=1)
    max_completion_tokens: int | None = pydantic.Field(None, ge=1)
    n: int = pydantic.Field(1, ge=1, le=16)
    seed: int | None = None
    logprobs: bool = False
    stream: bool = False
    return_token_ids: bool = False


def create_app(model: LocalModel, *, name: str | None = None) -> FastAPI:
    """The FastAPI application serving ``model`` under ``name`` (default: its folder name)."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    served = name or model.name
    counter = itertools.count()
    app = FastAPI(title="stategym serve")
    batcher = Batcher(model)
    app.state.batcher = batcher

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> JSONResponse:
        return _error(400, f"invalid request: {error.errors()}", "invalid_request_error")

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
        prompt = await asyncio.to_thread(_prompt, model, body)
        generations = await batcher.generate(_jobs(body, prompt, number))
        for generation in generations:  # every choice shares the prompt: all or none fit
            if isinstance(generation, ContextLengthError):
                return _error(
                    400,
                    f"This model's maximum context length is {model.context} tokens: {generation}",
                    "invalid_request_error",
                    "context_length_exceeded",
                )
        done = [g for g in generations if isinstance(g, Generation)]
        return _response(model, body, served, number, done)

    return app


def _prompt(model: LocalModel, body: ChatRequest) -> tuple[int, ...]:
    """The request's prompt ids: ``prompt_token_ids`` as given (token-in-token-out: the
    client's stream continued as it is), else its messages rendered by the chat template."""
    given = (body.model_extra or {}).get("prompt_token_ids")
    if given is not None:
        return tuple(int(i) for i in given)
    return tuple(model.render(body.messages, body.tools or []))


def _jobs(body: ChatRequest, prompt: tuple[int, ...], number: int) -> list[Job]:
    """One job per choice: choice ``i`` samples with seed ``seed + i`` (the request's seed,
    else its number)."""
    base = Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS,
    )
    seed = body.seed if body.seed is not None else number
    return [(prompt, replace(base, seed=seed + index)) for index in range(body.n)]


def _response(
    model: LocalModel,
    body: ChatRequest,
    served: str,
    number: int,
    generations: list[Generation],
) -> dict[str, Any]:
    """The OpenAI response object of one chat completion (one choice per generation)."""
    assistants = sum(1 for m in body.messages if m.get("role") == "assistant")
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


def _error(status: int, message: str, kind: str, code: str | None = None) -> Any:
    from fastapi.responses import JSONResponse

    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": code}},
        status_code=status,
    )


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
    model: LocalModel, *, host: str = "127.0.0.1", port: int = 8000, name: str | None = None
) -> None:
    """Serve in the foreground until interrupted."""
    import uvicorn

    uvicorn.run(create_app(model, name=name), host=host, port=port, log_level="info")


__all__ = ["BackgroundServer", "Batcher", "ChatRequest", "create_app", "run_server"]
