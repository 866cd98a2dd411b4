"""The wire of stategym's OpenEnv server: what it answers itself, so that no request ends a
session or gets a 500 (:func:`guard` installs it on the app that
:func:`stategym.adapters.openenv.build_app` makes).

openenv-core 0.3.0's ``/ws`` route ends the session (``SESSION_ERROR``, socket closed) on a
frame that is not a JSON object, one nested too deep for Python's ``json``, one Python cannot
decode, a binary frame, and a refused message whose error reply it cannot write (a lone
surrogate or a deep value in it); the route is one closure with no hook, so
:class:`FrameGuard`, an ASGI layer, answers such frames in OpenEnv's own error reply before
the route sees them. Over HTTP, FastAPI's and OpenEnv's handlers echo a refused input and fail
on one JSON cannot write; the handlers here answer with the status and the errors without
their inputs, as ASCII JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.utils import is_body_allowed_for_status_code
from openenv.core.env_server.mcp_types import WSMCPMessage
from openenv.core.env_server.serialization import deserialize_action
from openenv.core.env_server.types import (
    Action,
    WSCloseMessage,
    WSErrorCode,
    WSResetMessage,
    WSStateMessage,
    WSStepMessage,
)
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

MAX_FRAME_DEPTH = 512
"""The deepest nesting a WebSocket frame may have. OpenEnv decodes a frame with Python's
recursive ``json.loads``, which fails near 1,000 levels, ending the session; stategym
refuses arguments nested more than 32 levels anyway (a ``too_large`` format error)."""

Scope = MutableMapping[str, Any]
ASGIMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[ASGIMessage]]
Send = Callable[[ASGIMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ResetRefused(ValueError):
    """A reset the environment will not make (an unknown option, a value of the wrong type,
    a seed outside ``[0, 2**64)``): a usage error, answered with its one-line reason.

    The reason is made writable as UTF-8 (a lone surrogate in an option's name is escaped):
    OpenEnv 0.3.0 ends the session when it cannot write an error reply.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason.encode("utf-8", "backslashreplace").decode("utf-8"))


WS_MESSAGES: Mapping[str, type[BaseModel]] = {
    "reset": WSResetMessage,
    "step": WSStepMessage,
    "state": WSStateMessage,
    "close": WSCloseMessage,
    "mcp": WSMCPMessage,
}
"""The messages OpenEnv 0.3.0's ``/ws`` route reads, by ``type``, as it validates them."""
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
"""A JSON string, or one bracket. A string that never closes runs to the end of the text:
the pattern never fails once it has started, so a scan with it takes time linear in the
text (a pattern that must find the closing quote retried every later quote of an unclosed
string, each to the end: quadratic in the escaped quotes)."""


class FrameGuard:
    """An ASGI layer in front of OpenEnv's ``/ws`` route that answers, in OpenEnv's own
    error reply, every frame the route would end the session on; the route never sees it.

    The route (openenv-core 0.3.0) is one closure, with no hook to override; this layer
    reads the frames on their way in instead, and forwards the rest untouched. Refused: a
    binary frame or text Python cannot decode (``INVALID_JSON``), a frame nested more than
    :data:`MAX_FRAME_DEPTH` levels, a JSON value that is not an object, and a message of a
    known ``type`` that fails OpenEnv's own validation (``VALIDATION_ERROR``, its errors
    without their inputs, which may be what OpenEnv could not write). On the way out it
    drops the route's own close of a socket the client already closed (OpenEnv's client
    closes without waiting), which uvicorn would otherwise log as a server error.

    Args:
        app: the app to guard (OpenEnv's).
        action_cls: the action model steps are validated against.
        path: the guarded route.
    """

    def __init__(self, app: ASGIApp, action_cls: type[Action], path: str = "/ws") -> None:
        self.app = app
        self.action_cls = action_cls
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket" or not self._guards(scope):
            await self.app(scope, receive, send)
            return

        async def vetted() -> ASGIMessage:
            while True:
                message = await receive()
                refusal = self.refusal(message) if message["type"] == "websocket.receive" else None
                if refusal is None:
                    return message
                await send({"type": "websocket.send", "text": refusal})

        async def closing(message: ASGIMessage) -> None:
            # OpenEnv's client sends {"type": "close"} and shuts its socket without waiting;
            # the route then closes a socket the client closed first, and uvicorn refuses it
            # (ClientDisconnected, an OSError). That close is already complete: drop it.
            try:
                await send(message)
            except OSError:
                if message["type"] != "websocket.close":
                    raise

        await self.app(scope, vetted, closing)

    def _guards(self, scope: Scope) -> bool:
        path = scope.get("path", "")
        return path in (self.path, scope.get("root_path", "") + self.path)

    def refusal(self, message: Mapping[str, Any]) -> str | None:
        """OpenEnv's error reply to a received frame it could not answer; ``None``: forward it."""
        text = message.get("text")
        if not isinstance(text, str):
            return _error_reply(WSErrorCode.INVALID_JSON, "Invalid JSON: a frame must be text")
        if _nested_deeper(text, MAX_FRAME_DEPTH):
            reason = f"the message is nested more than {MAX_FRAME_DEPTH} levels"
            return _error_reply(WSErrorCode.VALIDATION_ERROR, reason)
        try:
            value = json.loads(text)  # as OpenEnv decodes it
        except (ValueError, RecursionError) as error:
            return _error_reply(WSErrorCode.INVALID_JSON, f"Invalid JSON: {error}")
        if not isinstance(value, dict):
            reason = f"a message must be a JSON object, not {_json_kind(value)}"
            return _error_reply(WSErrorCode.VALIDATION_ERROR, reason)
        try:
            self._validate(value)
        except ValidationError as error:
            errors = _plain_errors(error.errors(include_url=False))
            return _error_reply(WSErrorCode.VALIDATION_ERROR, "Invalid message", errors=errors)
        return None

    def _validate(self, value: dict[str, Any]) -> None:
        """Validate ``value`` as the route will; an unknown ``type`` is the route's to answer.

        Raises:
            ValidationError: as the route's validation would.
        """
        kind = value.get("type", "")
        model = WS_MESSAGES.get(kind) if isinstance(kind, str) else None
        if model is None:
            return
        message = model.model_validate(value)
        if isinstance(message, WSStepMessage):
            deserialize_action(message.data, self.action_cls)


def _json_kind(value: Any) -> str:
    """What JSON calls the decoded ``value``'s kind (``array``, ``number``, ``null``...)."""
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def _nested_deeper(text: str, limit: int) -> bool:
    """Whether the JSON ``text`` nests more than ``limit`` levels (brackets in strings aside).

    Counted without decoding, as decoding is what fails; a frame with no more brackets than
    ``limit`` (nearly all) is not scanned.
    """
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for token in _TOKEN.finditer(text):
        first = token.group()[0]
        if first in "[{":
            depth += 1
            if depth > limit:
                return True
        elif first in "]}":
            depth -= 1
    return False


def _plain_errors(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Validation errors as their type, location and message: without the input and its
    context, which may hold what JSON cannot write (a lone surrogate, ``NaN``, a deep value)."""
    return [{"type": e["type"], "loc": list(e["loc"]), "msg": e["msg"]} for e in errors]


def _ascii_json(value: Any) -> str:
    """``value`` as JSON text, ASCII only: a lone surrogate (in a key or a location) is
    escaped, not a reason to fail."""
    return json.dumps(value, ensure_ascii=True)


def _error_reply(code: WSErrorCode, message: str, **details: Any) -> str:
    """OpenEnv's ``WSErrorResponse`` as text."""
    return _ascii_json(
        {"type": "error", "data": {"message": message, "code": code.value, **details}}
    )


def _http_error(status: int, detail: Any, headers: Mapping[str, str] | None = None) -> Response:
    """FastAPI's error answer, ``{"detail": ...}``, written so that any request can have it:
    validation errors without their inputs, any other detail as text, ASCII only. FastAPI's
    own handlers echo the inputs and fail on one JSON cannot write (a 500 and a traceback)."""
    if isinstance(detail, list) and all(_is_validation_error(e) for e in detail):
        detail = _plain_errors(detail)
    elif detail is not None:
        detail = str(detail)
    if not is_body_allowed_for_status_code(status):
        return Response(status_code=status, headers=headers)
    return Response(_ascii_json({"detail": detail}), status, headers, "application/json")


def _is_validation_error(entry: Any) -> bool:
    return isinstance(entry, Mapping) and {"type", "loc", "msg"} <= entry.keys()


async def _refused_reset(request: Request, error: Exception) -> Response:
    """A refused HTTP ``/reset``: 422 with the one-line reason (no traceback in the log)."""
    return _http_error(422, str(error))


async def _invalid_request(request: Request, error: Exception) -> Response:
    """A body FastAPI's validation refused: 422 with where and why (not the input)."""
    assert isinstance(error, RequestValidationError)  # registered for it alone
    return _http_error(422, error.errors())


async def _refused_request(request: Request, error: Exception) -> Response:
    """A request refused with an ``HTTPException`` (OpenEnv's refused ``/step`` action, a
    body that cannot be parsed, an unknown path), with its status and headers."""
    assert isinstance(error, HTTPException)  # registered for it alone
    return _http_error(error.status_code, error.detail, error.headers)


def guard(app: Any, action_cls: type[Action]) -> None:
    """Put :class:`FrameGuard` in front of ``app``'s ``/ws`` route and the HTTP handlers
    that answer every refused request with its status and reason (see the module docstring)."""
    app.add_middleware(FrameGuard, action_cls=action_cls)
    app.add_exception_handler(ResetRefused, _refused_reset)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _refused_request)
