"""Headless Chromium for the report tests: the rendered DOM, the console, a screenshot,
and a live page driven over the DevTools protocol (:class:`Page`).

Debian's ``chromium`` is used when it is on the path (``apt-get install -y chromium``);
tests that need it are skipped with that reason otherwise. :class:`Page` talks to it over
``--remote-debugging-pipe`` (JSON messages ending in a NUL byte on file descriptors 3 and
4), so no driver, websocket library or port is needed.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)"
)
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
)


@dataclass(frozen=True, slots=True)
class Rendered:
    """What Chromium made of a page.

    Attributes:
        dom: the document after its scripts ran (``--dump-dom``).
        console: the page's console lines (errors, CSP refusals, logs).
    """

    dom: str
    console: tuple[str, ...]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


def render(page: Path, fragment: str = "") -> Rendered:
    """Open ``page`` (with ``#fragment``) and dump its DOM after the scripts ran."""
    done = _run("--dump-dom", page.resolve().as_uri() + (f"#{fragment}" if fragment else ""))
    console = tuple(line for line in done.stderr.splitlines() if ":CONSOLE" in line)
    return Rendered(done.stdout, console)


def screenshot(page: Path, out: Path, fragment: str = "", size: str = "1300,2400") -> int:
    """Save a PNG of ``page`` at ``size`` (width,height) to ``out``; how many distinct
    colours it has (a blank page has one or two)."""
    from PIL import Image  # pillow comes with matplotlib

    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    _run(f"--window-size={size}", f"--screenshot={out}", url)
    with Image.open(out) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 20) or ())


CONSOLE_EVENTS = frozenset(
    {"Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded"}
)
"""DevTools events that are console output: logs, uncaught exceptions, CSP refusals."""


class Page:
    """One page in a headless Chromium, driven over the DevTools pipe.

    ``with Page(path) as page:`` opens ``path`` and waits for its load event;
    :meth:`run` evaluates JavaScript in it and returns the value; :attr:`console` holds
    every console event so far (a test asserts it stays empty).
    """

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.url = path.resolve().as_uri()
        self.timeout = timeout
        self.console: list[dict[str, Any]] = []
        self._buffer = b""
        self._next = 0
        self._profile = tempfile.TemporaryDirectory()

    def __enter__(self) -> Page:
        assert CHROMIUM is not None
        to_browser, from_browser = os.pipe(), os.pipe()

        def wire() -> None:  # in the child: the pipe's two ends on fds 3 and 4
            os.dup2(to_browser[0], 3)
            os.dup2(from_browser[1], 4)

        self._process = subprocess.Popen(
            [*(CHROMIUM, *FLAGS[:3]), "--remote-debugging-pipe", "--no-first-run",
             f"--user-data-dir={self._profile.name}", "about:blank"],
            preexec_fn=wire, pass_fds=(3, 4),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser[0])
        os.close(from_browser[1])
        self._writer, self._reader = to_browser[1], from_browser[0]
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})
        self._session = attached["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self._call(f"{domain}.enable", session=self._session)
        self._call("Page.navigate", {"url": self.url}, self._session)
        self._wait(lambda m: m.get("method") == "Page.loadEventFired")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._call("Browser.close")
            self._process.wait(timeout=20)
        except (OSError, EOFError, subprocess.TimeoutExpired, RuntimeError):
            self._process.kill()  # our own child, by its handle
            self._process.wait()
        finally:
            os.close(self._writer)
            os.close(self._reader)
            self._profile.cleanup()

    def run(self, expression: str) -> Any:
        """The value of ``expression`` evaluated in the page (an exception fails the test)."""
        done = self._call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            self._session,
        )
        if "exceptionDetails" in done:
            raise AssertionError(f"{expression!r} threw: {done['exceptionDetails']}")
        return done["result"].get("value")

    def _call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        number = self._next
        reply = self._wait(lambda m: m.get("id") == number)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    def _wait(self, wanted: Any) -> dict[str, Any]:
        """Read messages until one is ``wanted``; console events on the way are kept."""
        end = time.monotonic() + self.timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message: dict[str, Any] = json.loads(raw)
                if wanted(message):
                    return message
                if message.get("method") in CONSOLE_EVENTS:
                    self.console.append(message)
            left = end - time.monotonic()
            if left <= 0 or not select.select([self._reader], [], [], left)[0]:
                raise TimeoutError(f"no reply from chromium within {self.timeout} s")
            chunk = os.read(self._reader, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed the DevTools pipe")
            self._buffer += chunk
