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

from loopback import completion as completion  # re-exported: the LLM tests' one completion
from loopback import round_of as round_of

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
