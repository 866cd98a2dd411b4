"""Helpers for the LLM tests: a scripted chat-completions endpoint.

The scripted endpoint is the test seam the issue asks for: an ``AsyncOpenAI`` client whose
transport is a mock that answers from a script, so edge cases (parallel calls, malformed
JSON, refusals, timeouts, failing servers) are exact and need no network.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest

openai = pytest.importorskip("openai")

# The HTTP library the installed openai client is built on (httpx, or its successor).
http: Any = importlib.import_module(
    openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0]
)

Script = Callable[[dict[str, Any], int], Any]
"""``(request body, request number) -> response``: a dict (200), ``(status, dict)``, or an
exception to raise in the transport (a timeout, a dropped connection)."""


class ScriptedEndpoint:
    """A chat-completions endpoint that answers from a script and records every request."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []

    async def handle(self, request: Any) -> Any:
        body = json.loads(request.content)
        self.requests.append(body)
        answer = self.script(body, len(self.requests) - 1)
        if isinstance(answer, BaseException):
            raise answer
        status, payload = answer if isinstance(answer, tuple) else (200, answer)
        return http.Response(status, json=payload)

    def client(self) -> Any:
        transport = http.MockTransport(self.handle)
        return openai.AsyncOpenAI(
            base_url="http://endpoint.test/v1",
            api_key="test",
            max_retries=0,
            http_client=http.AsyncClient(transport=transport),
        )


def completion(
    content: str | None = None,
    calls: list[tuple[str, str]] = (),  # type: ignore[assignment]
    **extra: Any,
) -> dict[str, Any]:
    """A chat-completion response with text and/or ``(name, arguments_json)`` tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": "tool_calls" if calls else "stop",
        **extra.pop("choice", {}),
    }
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "mock",
        "choices": [choice],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        **extra,
    }


def round_of(body: dict[str, Any]) -> int:
    """Which round a request is for: the assistant messages already in the conversation."""
    return sum(1 for m in body["messages"] if m["role"] == "assistant")
