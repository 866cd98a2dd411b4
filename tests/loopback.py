"""A chat-completions endpoint on a loopback port, for tests that need a real HTTP server
(another process, or a client the test cannot hand a mock transport)."""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], dict[str, Any]]
"""``request body -> response body`` (a chat completion)."""
Answer = Callable[[str, bytes, int], tuple[int, str]]
"""``(request: "GET /v1/models" or "POST /v1/chat/completions", its body, how many requests
of that method came before) -> (status, body text)``: any answer, well-formed or not."""


@contextlib.contextmanager
def answering(answer: Answer) -> Iterator[str]:
    """Answers every GET and POST with ``answer`` on a free loopback port; yields the base URL."""
    counts = {"GET": itertools.count(), "POST": itertools.count()}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the standard library's names
            self._send(*answer(f"GET {self.path}", b"", next(counts["GET"])))

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            self._send(*answer(f"POST {self.path}", body, next(counts["POST"])))

        def _send(self, status: int, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def serving(reply: Reply) -> contextlib.AbstractContextManager[str]:
    """Serves ``reply`` to every POST on a free loopback port; yields the base URL. A GET
    (the model list) is answered 501, as an endpoint without the listing answers it."""

    def answer(request: str, body: bytes, _: int) -> tuple[int, str]:
        if request.startswith("GET"):
            return 501, "Unsupported method ('GET')"
        return 200, json.dumps(reply(json.loads(body)))

    return answering(answer)


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
