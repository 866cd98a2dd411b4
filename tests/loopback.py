"""A chat-completions endpoint on a loopback port, for tests that need a real HTTP server
(another process, or a client the test cannot hand a mock transport)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[dict[str, Any]], dict[str, Any]]
"""``request body -> response body`` (a chat completion)."""


@contextlib.contextmanager
def serving(reply: Reply) -> Iterator[str]:
    """Serves ``reply`` to every POST on a free loopback port; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the standard library's name
            length = int(self.headers["Content-Length"])
            data = json.dumps(reply(json.loads(self.rfile.read(length)))).encode()
            self.send_response(200)
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
