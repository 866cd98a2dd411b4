"""The trajectory viewer driven in headless Chromium: each filter (agent, domain, knobs,
outcome, R range, risk class) changes the listed episodes to exactly the ones the index
says match; opening an episode draws both call graphs; the console stays empty."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stategym.report import write

from .browser import Page, needs_chromium, screenshot

pytestmark = needs_chromium

SHOWN = "Array.from(document.querySelectorAll('#list-body tr')).map(r => +r.dataset.n)"
RESET = """["f-agent", "f-domain", "f-knobs", "f-risk", "f-goal", "f-rmin", "f-rmax"]
  .forEach(id => { document.getElementById(id).value = ""; });
document.getElementById("f-agent").dispatchEvent(new Event("change"));"""


def _set(field: str, value: str) -> str:
    """The script a person's choice makes: set the control, fire its event."""
    event = "input" if field in ("rmin", "rmax") else "change"
    return (
        f"var f = document.getElementById('f-{field}'); f.value = {json.dumps(value)};"
        f" f.dispatchEvent(new Event('{event}'));"
    )


@pytest.fixture(scope="module")
def report(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write([runs["mixed"]], tmp_path_factory.mktemp("viewer") / "report.html")


@pytest.fixture(scope="module")
def index(report: Path) -> list[dict[str, Any]]:
    found = re.search(r'id="episode-index">(.*?)</script>', report.read_text())
    assert found is not None
    entries: list[dict[str, Any]] = json.loads(found.group(1))
    return entries


@pytest.fixture(scope="module")
def page(report: Path) -> Iterator[Page]:
    with Page(report) as opened:
        assert opened.run("document.body.dataset.viewer") == "ready"
        yield opened
        assert opened.console == []  # nothing logged, thrown or refused, all tests long


def _expect(index: list[dict[str, Any]], keep: Callable[[dict[str, Any]], bool]) -> list[int]:
    return [e["n"] for e in index if keep(e)]


def test_the_fixture_has_something_to_filter(index: list[dict[str, Any]]) -> None:
    assert len(index) == 16
    for key in ("agent", "domain", "knobs", "goal", "risk"):
        assert len({e[key] for e in index}) >= 2, key
    assert {"safe", "harmful"} <= {e["risk"] for e in index}


def test_every_filter_lists_exactly_the_matching_episodes(
    page: Page, index: list[dict[str, Any]]
) -> None:
    page.run(RESET)
    assert page.run(SHOWN) == [e["n"] for e in index]
    cases: list[tuple[str, str, Callable[[dict[str, Any]], bool]]] = [
        ("agent", "serial", lambda e: e["agent"] == "serial"),
        ("domain", "bank", lambda e: e["domain"] == "bank"),
        ("knobs", "off: dynamics", lambda e: e["knobs"] == "off: dynamics"),
        ("goal", "false", lambda e: not e["goal"]),
        ("goal", "true", lambda e: e["goal"]),
        ("risk", "harmful", lambda e: e["risk"] == "harmful"),
        ("risk", "safe", lambda e: e["risk"] == "safe"),
        ("rmin", "0.5", lambda e: e["R"] >= 0.5),
        ("rmax", "0", lambda e: e["R"] <= 0),
    ]
    for field, value, keep in cases:
        page.run(RESET)
        page.run(_set(field, value))
        wanted = _expect(index, keep)
        assert 0 < len(wanted) < len(index), (field, value)  # the filter must bite
        assert page.run(SHOWN) == wanted, (field, value)
        info = page.run("document.getElementById('page-info').textContent")
        assert info.startswith(f"{len(wanted)} of {len(index)} episodes"), info


def test_filters_combine_and_an_empty_result_is_an_empty_list(
    page: Page, index: list[dict[str, Any]]
) -> None:
    page.run(RESET)
    page.run(_set("agent", "expert") + _set("domain", "travel") + _set("rmin", "0.9"))
    wanted = _expect(
        index, lambda e: e["agent"] == "expert" and e["domain"] == "travel" and e["R"] >= 0.9
    )
    assert wanted and page.run(SHOWN) == wanted
    page.run(_set("risk", "harmful"))  # the expert is never harmful
    assert page.run(SHOWN) == []
    page.run(RESET)
    assert len(page.run(SHOWN)) == len(index)


def test_each_select_offers_the_values_the_episodes_have(
    page: Page, index: list[dict[str, Any]]
) -> None:
    for key in ("agent", "domain", "knobs", "risk"):
        script = f"Array.from(document.getElementById('f-{key}').options).map(o => o.value)"
        assert page.run(script) == ["", *sorted({e[key] for e in index})], key


def test_a_clicked_episode_opens_with_both_call_graphs(
    page: Page, index: list[dict[str, Any]], report: Path
) -> None:
    page.run(RESET)
    harmful = next(e for e in index if e["risk"] == "harmful")
    n = harmful["n"]
    page.run(f"document.querySelector('#list-body tr[data-n=\"{n}\"]').click()")
    assert page.run("document.body.dataset.opened") == str(n)
    heading = page.run("document.querySelector('#detail h3').textContent")
    assert heading.startswith(f"Episode {n}: {harmful['agent']} on {harmful['domain']}")
    text = report.read_text()
    detail = json.loads(re.search(rf'id="ep-{n}">(.*?)</script>', text).group(1))
    task = json.loads(re.search(rf'id="{detail["task"]}">(.*?)</script>', text).group(1))
    counts = page.run(
        "Array.from(document.querySelectorAll('#detail svg.cg')).map(s => "
        "[s.querySelectorAll('g.node').length, s.querySelectorAll('path.edge').length])"
    )
    executed, gold = detail["executed"], task["gold"]
    assert counts == [
        [len(executed["nodes"]), len(executed["edges"])],
        [len(gold["nodes"]), len(gold["edges"])],
    ]
    missed = page.run("document.querySelectorAll('#detail svg.cg g.node.missed').length")
    assert missed == len(gold["nodes"]) - len(detail["gold_done"]) > 0  # harm skips steps
    labels = page.run(
        "Array.from(document.querySelectorAll('#detail svg.cg g.node > text'))"
        ".map(t => t.textContent)"
    )
    assert all(labels) and len(labels) == len(executed["nodes"]) + len(gold["nodes"])
    assert page.run("document.querySelectorAll('#detail .round').length") == len(detail["rounds"])


def test_screenshots_of_the_filtered_list_and_the_open_episode(
    report: Path, index: list[dict[str, Any]], tmp_path: Path
) -> None:
    n = next(e["n"] for e in index if e["domain"] == "bank")
    assert screenshot(report, tmp_path / "viewer.png", f"episode={n}", "1300,3000") > 20
