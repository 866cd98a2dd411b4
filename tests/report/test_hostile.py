"""Hostile model output cannot script the report: every string stays text.

A hostile agent (tests/report/conftest.py) writes ``<script>``, ``<img onerror>``,
``</style>``, ``</script>``, ``javascript:`` links, an SVG ``onload`` and unicode controls
into its messages, tool names, raw arguments, its answer and its own name. The generated page
is parsed (nothing but the report's own script and data blocks; no handler attribute, no
``javascript:`` URL, no element the payloads name) and opened in headless Chromium, which
must render the viewer with the episode open, run nothing of the payload and log nothing.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from stategym.report import build, write
from stategym.report.assets import SCRIPT

from .browser import needs_chromium, render, screenshot
from .conftest import HOSTILE_AGENT


class Census(HTMLParser):
    """Every start tag with its attributes, and the text of each ``<script>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag == "script":
            self._script, self._text = dict(attrs), []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._text)))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._text.append(data)


@pytest.fixture(scope="module")
def page(runs: dict[str, Path]) -> str:
    return build([runs["hostile"], runs["eval"], runs["train"]])


def test_the_only_code_is_the_reports_own_script(page: str) -> None:
    census = Census()
    census.feed(page)
    code = [text for attrs, text in census.scripts if attrs.get("type") != "application/json"]
    assert code == [SCRIPT]
    data = [attrs for attrs, _ in census.scripts if attrs.get("type") == "application/json"]
    # the index, one block per episode, one per task (travel seeds 0-3, shared by the runs)
    assert len(data) == 1 + (2 + 8) + 4
    assert all(set(attrs) == {"type", "id"} for attrs in data)


def test_no_handler_url_or_injected_element(page: str) -> None:
    census = Census()
    census.feed(page)
    names = {tag for tag, _ in census.tags}
    assert names & {"img", "iframe", "object", "embed", "link", "base", "form", "style"} == {
        "style"
    }
    assert sum(tag == "style" for tag, _ in census.tags) == 1 + 4  # the page's, the 4 plots'
    for tag, attrs in census.tags:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name, value)
            if name in {"href", "src", "xlink:href", "action", "formaction"}:
                assert (value or "").startswith("#"), (tag, name, value)


def test_payload_text_survives_as_data(page: str) -> None:
    # the agent's name and words are in the page, escaped, not dropped
    assert "openai:&lt;script&gt;document.title" in page  # the index table's HTML text
    assert "\\u003cscript\\u003edocument.title" in page  # the JSON data blocks
    assert "</script><script>" not in page


@needs_chromium
def test_chromium_renders_the_hostile_episode_and_runs_none_of_it(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = write([runs["hostile"]], tmp_path / "hostile.html")
    rendered = render(out, "episode=0")
    assert rendered.console == ()  # no error, no CSP refusal, no log from a payload
    assert "<title>stategym report</title>" in rendered.dom  # document.title never set
    assert 'data-viewer="ready"' in rendered.dom and 'data-opened="0"' in rendered.dom
    assert "round 0" in rendered.dom and "round 2" in rendered.dom
    assert rendered.dom.count('<svg class="cg"') == 2  # both call graphs, drawn as text
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in rendered.dom
    assert HOSTILE_AGENT.replace("<", "&lt;").replace(">", "&gt;") in rendered.dom
    assert "<img" not in rendered.dom and "<svg onload" not in rendered.dom
    assert screenshot(out, tmp_path / "hostile.png", "episode=0") > 20  # not a blank page
