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
        try:
            return await asyncio.to_thread(_complete, model, body, served, number)
        except ContextLengthError as error:
            return _error(
                400,
                f"This model's maximum context length is {model.context} tokens: {error}",
                "invalid_request_error",
                "context_length_exceeded",
            )

    return app


def _complete(model: LocalModel, body: ChatRequest, served: str, number: int) -> dict[str, Any]:
    """One chat completion (``n`` choices) as the OpenAI response object."""
    base = Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens or DEFAULT_MAX_TOKENS,
    )
    seed = body.seed if body.seed is not None else number
    assistants = sum(1 for m in body.messages if m.get("role") == "assistant")
    choices = []
    prompt_ids: tuple[int, ...] = ()
    completion_tokens = 0
    given = (body.model_extra or {}).get("prompt_token_ids")
    for index in range(body.n):
        sampling = replace(base, seed=seed + index)
        if given is not None:  # token-in-token-out: continue the client's stream as it is
            generation = model.generate_ids([int(i) for i in given], sampling)
        else:
            generation = model.generate(body.messages, body.tools or [], sampling)
        prompt_ids = generation.prompt_ids
        completion_tokens += len(generation.completion_ids)
        choices.append(_choice(model, body, generation, index, f"call_{assistants}"))
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


__all__ = ["BackgroundServer", "ChatRequest", "create_app", "run_server"]
