"""The report page: self-contained, deterministic, derived from the declarations, complete.

Chromium checks open the real page and assert on the rendered DOM (tables, plots, the
viewer listing episodes and one opened with its rounds) and an empty console.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from stategym.cli import main
from stategym.metrics.dimensions import LABELS
from stategym.report import Options, build, write
from stategym.report.markup import json_script, json_text
from stategym.report.plots import ids
from stategym.report.runs import TrainingRun, read_run

from .browser import needs_chromium, render, screenshot


def _blocks(page: str) -> dict[str, str]:
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page)
    return dict(found)


@pytest.fixture(scope="module")
def page(runs: dict[str, Path]) -> str:
    return build([runs["eval"], runs["train"], runs["protocol"]])


def test_the_same_runs_give_the_same_bytes(runs: dict[str, Path], page: str) -> None:
    assert build([runs["eval"], runs["train"], runs["protocol"]]) == page


def test_nothing_is_fetched(page: str) -> None:
    class Urls(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[tuple[str, str]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self.found += [(tag, v or "") for k, v in attrs if k in {"src", "href", "xlink:href"}]

    parser = Urls()
    parser.feed(page)
    assert parser.found and all(url.startswith("#") for _, url in parser.found)
    assert "<link" not in page and "@import" not in page
    assert "default-src 'none'" in page  # the CSP forbids any fetch, too


def test_scorecard_columns_come_from_the_declarations(page: str) -> None:
    heads = re.findall(r"<th>([^<]*)</th>", page)
    for label in LABELS.values():
        assert label in heads
    assert {"success", "R", "harm rate", "lost $", "lucky-success rate"} <= set(heads)


def test_plots_are_inline_svg_with_distinct_ids(page: str) -> None:
    svgs = re.findall(r"<svg.*?</svg>", page, re.DOTALL)
    assert len(svgs) == 3 + 1 + 1  # overview bars, scatter, harm; training; protocol
    every = [i for svg in svgs for i in ids(svg)]
    assert len(every) == len(set(every))
    assert "collapse 0.12" in page  # the protocol plot's legend (index 0.125)
    # the decision curves of the keys the run logged, training and held-out lines together
    for title in ("goal rate", "R (composite)", "entropy", "KL to the start", "held-out eval"):
        assert f">{title}<" in page


def test_the_viewer_gets_one_block_per_episode(page: str) -> None:
    blocks = _blocks(page)
    index = json.loads(blocks["episode-index"])
    assert [e["n"] for e in index] == list(range(8 + 2))  # eval, then the protocol's
    first = json.loads(blocks["ep-0"])
    assert json.loads(blocks[first["task"]])["request"] and first["rounds"][0]["i"] == 0
    assert sum(r["reward"] for r in first["rounds"]) == pytest.approx(index[0]["R"], abs=1e-3)
    tasks = {json.loads(blocks[f"ep-{e}"])["task"] for e in range(10)}
    assert tasks == {f"task-{k}" for k in range(4)}  # travel seeds 0-3, whoever played them
    kinds = {slot[1] for t in tasks for slot in json.loads(blocks[t])["slots"]}
    assert "missing" in kinds
    harmful = [e for e in index if e["risk"] == "harmful"]
    assert all(e["R"] < 0 for e in harmful)


def test_the_viewer_limit_embeds_the_first_episodes_of_each_group(
    runs: dict[str, Path],
) -> None:
    blocks = _blocks(build([runs["eval"]], Options(viewer_limit=1)))
    index = json.loads(blocks["episode-index"])
    assert [(e["agent"], e["seed"]) for e in index] == [("expert", 0), ("serial", 0)]
    assert set(blocks) == {"episode-index", "ep-0", "ep-1", "task-0"}  # one task, seed 0


def test_json_blocks_cannot_close_their_script() -> None:
    text = json_text({"a": "</script><!--&\u2028"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!--&\u2028"}
    assert json_script("x", "</SCRIPT").count("</script>") == 1


def test_training_metrics_keep_every_numeric_key(runs: dict[str, Path]) -> None:
    run = read_run(runs["train"])
    assert isinstance(run, TrainingRun)
    assert [sorted(line) for line in run.train[:1]] == [["entropy", "goal_rate", "iteration", "kl"]]
    assert run.eval == ({"goal_rate": 0.5, "composite": 0.25, "iteration": 2.0},)


def test_cli_writes_the_report(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r" / "report.html"
    assert main(["report", str(runs["eval"]), "--out", str(out), "--resamples", "50"]) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    assert str(out) in capsys.readouterr().out


def test_cli_refuses_a_folder_that_is_no_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_cli_without_matplotlib_is_one_usage_error(
    runs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(runs["eval"]), "--out", str(tmp_path / "r.html")]) == 2
    assert "pip install 'stategym[plot]'" in capsys.readouterr().err


@needs_chromium
def test_chromium_renders_tables_plots_and_an_opened_episode(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out = write([runs["eval"], runs["train"], runs["protocol"]], tmp_path / "report.html")
    rendered = render(out, "episode=4")
    assert rendered.console == ()
    dom = rendered.dom
    # five plots and the opened episode's two call graphs
    assert dom.count("<svg") == 5 + 2 and dom.count('<table class="grid">') == 3
    assert dom.count('<svg class="cg"') == 2 and 'class="node ' in dom
    assert 'data-viewer="ready"' in dom and 'data-opened="4"' in dom
    assert "10 of 10 episodes; page 1 of 1" in dom
    assert dom.count('class="episode') == 10
    assert "Episode 4: serial on travel seed 0" in dom
    assert len(re.findall(r'<div class="round (calls|say|invalid)">', dom)) >= 3
    assert 'class="call"' in dom and "Call graph: executed and gold" in dom
    assert 'data-detail-top="' in dom  # where a cropped screenshot of the episode starts
    for name, fragment in (("overview.png", ""), ("viewer.png", "episode=4")):
        assert screenshot(out, tmp_path / name, fragment) > 20  # not a blank page


def test_a_cut_last_line_is_named_and_the_log_left_as_it_is(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    run = tmp_path / "cut"
    run.mkdir()
    data = (runs["eval"] / "trajectories.jsonl").read_bytes()
    cut = data + data.splitlines(keepends=True)[0][:50]  # an interrupted append
    (run / "trajectories.jsonl").write_bytes(cut)
    page = build([run], Options(resamples=10))
    assert f"ignored {run / 'trajectories.jsonl'}:9, a cut last line" in page
    assert (run / "trajectories.jsonl").read_bytes() == cut  # the report only reads
