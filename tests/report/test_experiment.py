"""Experiment runs in the report: their tables parsed back and escaped, their plots redrawn
from the JSON (never the files embedded), and ``stategym experiment … --report``."""

from __future__ import annotations

import platform
import re
import shutil
from pathlib import Path

import pytest

from stategym.cli import main
from stategym.report import build, write
from stategym.report.experiment import estimates, tables
from stategym.report.runs import ExperimentRun, read_run
from stategym.tables import Grid, markdown

from .browser import needs_chromium, render
from .conftest import HOSTILE_TEXTS, PWN


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg.*?</svg>", page, re.DOTALL)


def test_an_experiment_run_is_read_with_its_plot_names(experiments: dict[str, Path]) -> None:
    run = read_run(experiments["e0"])
    assert isinstance(run, ExperimentRun) and run.results["experiment"] == "e0"
    assert run.plots == ("dimensions.png", "dimensions.svg", "goal_vs_r.png", "goal_vs_r.svg")
    assert run.raw["agents"] == ["expert", "serial", "ask-nothing"] and run.table


def test_markdown_tables_round_trip() -> None:
    grids = [
        Grid("one", ("agent", "R"), (("a|b", "0.5 [0.1, 0.9]"), ("c", "-")), caption="read me"),
        Grid("two", ("x",), (("1",),)),
    ]
    assert tables(markdown(grids)) == grids
    assert tables("| not | a table\nsome words") == ["| not | a table\nsome words"]


def test_e0_gets_its_tables_and_two_redrawn_figures(experiments: dict[str, Path]) -> None:
    page = build([experiments["e0"]])
    run = read_run(experiments["e0"])
    assert isinstance(run, ExperimentRun)
    for grid in tables(run.table):
        assert isinstance(grid, Grid)  # every block of E0's table.md parses
        assert f"<h3>{grid.title}</h3>" in page
    start = page.index('id="experiment-e0"')
    section = page[start : page.index("<section", start)]
    assert section.count("<tr>") == sum(len(g.rows) + 1 for g in tables(run.table))
    svgs = _svgs(page)
    assert len(svgs) == 2
    for domain in ("pooled", "travel", "bank"):  # a goal-against-R panel each
        assert f">{domain}<" in svgs[0]
    for measure in ("success", "composite", "clarification", "lucky_rate"):
        assert f">{measure}<" in svgs[1]
    assert "dimensions.svg" in page  # named, not embedded
    assert "Experiment e0: " in page


def test_e3_gets_r_against_distance_and_every_estimate(experiments: dict[str, Path]) -> None:
    run = read_run(experiments["e3"])
    assert isinstance(run, ExperimentRun)
    page = build([experiments["e3"]])
    distance, forest = _svgs(page)
    assert ">topology distance from training<" in distance
    assert ">expert<" in distance and ">serial<" in distance
    found = list(estimates(run.results))
    assert "agents.expert.slope" in dict(found)
    assert all(f">{path}<" in forest for path, _ in found)


def test_a_hostile_experiment_stays_text(experiments: dict[str, Path]) -> None:
    page = build([experiments["hostile"]])
    assert "<svg onload" not in page and f"<script>{PWN}" not in page  # plots/evil.svg
    assert "evil.svg" in page
    assert "<h3>&lt;img src=x onerror=" in page  # the table's title, escaped
    assert page.count("&lt;script&gt;document.title") >= 3  # table, budget, chart labels
    assert len(_svgs(page)) == 1  # the estimates of every hostile name, drawn as text


@needs_chromium
def test_chromium_renders_the_hostile_experiment_and_runs_none_of_it(
    experiments: dict[str, Path], tmp_path: Path
) -> None:
    out = write([experiments["hostile"], experiments["e3"]], tmp_path / "report.html")
    rendered = render(out)
    assert rendered.console == ()
    assert "<title>stategym report</title>" in rendered.dom
    assert rendered.dom.count('<table class="grid">') == 2  # the hostile table and E3's
    assert "<img" not in rendered.dom


def test_experiment_report_prints_the_report_it_wrote(
    experiments: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from stategym.commands import experiment

    # the run itself is stood in for by the tiny E0 run (tests/experiments play the budgets)
    def run(
        name: str, budget: str, seeds: tuple[int, ...], out: Path, start: float, overrides: object
    ) -> list:
        shutil.copytree(experiments["e0"], out)
        return [out / "results.json"]

    monkeypatch.setattr(experiment, "_run", run)
    out = tmp_path / "e0"
    assert main(["experiment", "e0", "--smoke", "--out", str(out), "--report"]) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    assert "Experiment e0: " in (out / "report.html").read_text()


@pytest.mark.slow
def test_a_real_e3_smoke_run_writes_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "e3"
    args = ["experiment", "e3", "--smoke", "--seeds", "0,1", "--out", str(out), "--report"]
    assert main(args) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    # the plot's title since the fine-tuned arm joined the zero-shot agents (6887a62)
    assert "E3: score against topology distance" in page and len(_svgs(page)) == 2


def test_the_hostile_texts_reach_the_table(experiments: dict[str, Path]) -> None:
    run = read_run(experiments["hostile"])
    assert isinstance(run, ExperimentRun)
    (grid,) = tables(run.table)
    assert isinstance(grid, Grid) and len(grid.rows) == len(HOSTILE_TEXTS)


def test_an_experiment_says_what_ran_it(experiments: dict[str, Path]) -> None:
    page = build([experiments["e0"], experiments["e3"]])
    e0 = page[page.index('id="experiment-e0"') :]
    assert f"<dt>ran on</dt><dd>python {platform.python_version()}, " in e0
    # E3's committed files are from before the environment was recorded
    e3 = page[page.index('id="experiment-e3"') :]
    assert "<dt>ran on</dt><dd>-</dd>" in e3
