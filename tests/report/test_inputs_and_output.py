"""What ``stategym report`` reads and writes (audit 11A): it never writes over a file it
reads or any file but an earlier report (F2), a symlink loop is one line (F5), an
experiment folder whose files come from two runs is refused (F7), an extreme training
metric does not lose the page, and an undefined E0 estimate is never drawn at 0."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from refusals import refused
from stategym.cli import main


def _copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / run.name))


# -- F2: the report is never written over a file of a run ---------------------------------


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("trajectories.jsonl", "is not an HTML report"),  # the run's own log
        ("summary.json", "not named *.html"),  # a run file's name, not there yet
        ("notes/../trajectories.jsonl", "is not an HTML report"),
    ],
)
def test_report_refuses_an_out_that_is_a_file_of_the_run(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    said: str,
) -> None:
    run = _copy(runs["eval"], tmp_path)
    (run / "notes").mkdir()
    log = (run / "trajectories.jsonl").read_bytes()
    refused(capsys, ["report", str(run), "--out", str(run / name)], said)
    assert (run / "trajectories.jsonl").read_bytes() == log
    assert not (run / "summary.json").exists()
    assert main(["score", str(run), "--resamples", "20"]) == 0  # the run is whole


def test_report_refuses_an_existing_file_that_is_no_report(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _copy(runs["eval"], tmp_path)
    notes = tmp_path / "notes.html"
    notes.write_text("my notes, not a report\n")
    link = tmp_path / "link.html"
    link.symlink_to(run / "trajectories.jsonl")
    for out in (notes, link):
        refused(capsys, ["report", str(run), "--out", str(out)], f"--out {out} exists")
    assert notes.read_text() == "my notes, not a report\n"
    log = (runs["eval"] / "trajectories.jsonl").read_bytes()
    assert (run / "trajectories.jsonl").read_bytes() == log


def test_report_overwrites_an_earlier_report(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A guard (it passes before the fix too): the refusal keeps re-running allowed."""
    run = _copy(runs["eval"], tmp_path)
    out = run / "report.html"
    argv = ["report", str(run), "--out", str(out), "--resamples", "20"]
    assert main(argv) == 0 and main(argv) == 0
    assert out.read_text().startswith("<!DOCTYPE html>")
    empty = tmp_path / "empty.html"
    empty.touch()  # nothing to lose
    assert main(["report", str(run), "--out", str(empty), "--resamples", "20"]) == 0


# -- F5: a symlink loop is one line -------------------------------------------------------


def test_report_of_a_symlink_loop_is_one_line(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    out = str(tmp_path / "r.html")
    refused(capsys, ["report", str(loop), "--out", out], "symbolic links")
    refused(capsys, ["report", str(runs["eval"]), str(loop), "--out", out], "symbolic links")
    assert not Path(out).exists()


# -- F7: an experiment folder holding files of two runs -------------------------------------


def test_report_refuses_an_experiment_folder_a_stopped_run_left_mixed(
    experiments: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``experiment e0`` over an earlier run, stopped (Ctrl-C) as it opens ``table.md``:
    the folder then holds some new files and some old ones, and the report must not show
    them as one run."""
    from stategym.experiments import plots

    out = _copy(experiments["e0"], tmp_path)
    before = json.loads((out / "results.json").read_text())
    opened = Path.open

    def stopped_at_the_table(self: Path, *args: object, **kwargs: object) -> object:
        if self.name.startswith("table.md") and self.parent == out:
            raise KeyboardInterrupt
        return opened(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plots, "save", lambda figure, path: [])  # no figures: seconds faster
    monkeypatch.setattr(Path, "open", stopped_at_the_table)
    argv = ["experiment", "e0", "--smoke", "--seeds", "1", "--out", str(out)]
    assert main(argv) == 130
    monkeypatch.setattr(Path, "open", opened)
    capsys.readouterr()
    refused(capsys, ["report", str(out), "--out", str(tmp_path / "r.html")], "mixes two runs")
    assert not (tmp_path / "r.html").exists()
    # written last, results.json is still the earlier run's, whose files it names
    assert json.loads((out / "results.json").read_text())["seeds"] == before["seeds"]


def test_report_refuses_plots_written_over_an_earlier_run_that_stopped_before_its_results(
    experiments: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Stopped after its figures, before ``raw.json``: the folder holds this run's plots
    beside the earlier run's tables, which the report must not list as one run's."""
    from stategym.experiments import plots

    out = _copy(experiments["e0"], tmp_path)
    opened = Path.open

    def new_figures(figure: object, path: Path) -> list[Path]:
        written = [path.with_suffix(".png"), path.with_suffix(".svg")]
        for file in written:
            file.write_bytes(b"this run's figure")
        return written

    def stopped_at_raw(self: Path, *args: object, **kwargs: object) -> object:
        if self.name.startswith("raw.json") and self.parent == out:
            raise KeyboardInterrupt
        return opened(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plots, "save", new_figures)
    monkeypatch.setattr(Path, "open", stopped_at_raw)
    argv = ["experiment", "e0", "--smoke", "--seeds", "1", "--out", str(out)]
    assert main(argv) == 130
    monkeypatch.setattr(Path, "open", opened)
    capsys.readouterr()
    line = refused(capsys, ["report", str(out), "--out", str(tmp_path / "r.html")], "mixes")
    assert f"{out / 'plots'}/" in line  # the plots are named, the tables are the old run's
    assert "raw.json" not in line and "table.md" not in line


def test_report_lists_only_the_runs_own_plots_and_names_the_others(
    experiments: dict[str, Path], tmp_path: Path
) -> None:
    run = _copy(experiments["e0"], tmp_path)
    (run / "plots" / "left-by-an-earlier-run.png").write_bytes(b"old")
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    page = out.read_text()
    assert "also holds left-by-an-earlier-run.png, not written by this run" in page
    listed = re.search(r"plot files \(redrawn here\)</dt><dd>([^<]*)<", page)
    assert listed is not None and "left-by-an-earlier-run" not in listed.group(1)
    assert "goal_vs_r.png" in listed.group(1)


def test_report_names_an_experiment_folder_it_cannot_check(
    experiments: dict[str, Path], tmp_path: Path
) -> None:
    """A results.json without digests (an older stategym's, or a hand-written one) is
    still reported, with a note that its files were not checked."""
    out = tmp_path / "r.html"
    assert main(["report", str(experiments["hostile"]), "--out", str(out)]) == 0
    assert "holds no digests of raw.json and table.md" in out.read_text()


# -- minor: extreme numbers and undefined estimates ------------------------------------------


@pytest.mark.parametrize("value", [1e308, -1e308, 1.7e308])
def test_an_extreme_training_metric_leaves_its_panel_out_not_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: float
) -> None:
    run = tmp_path / "train"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"kind": "grpo"}))
    lines = [{"iteration": i, "goal_rate": 0.5, "grad_norm": value} for i in (1, 2)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    page = out.read_text()
    assert "not drawn (training): values beyond ±1e+300" in page
    assert ">goal rate<" in page  # the other panels are drawn


def _e0_with(experiments: dict[str, Path], tmp_path: Path, mean: object) -> Path:
    run = _copy(experiments["e0"], tmp_path)
    results = json.loads((run / "results.json").read_text())
    results["estimates"]["pooled"]["serial"]["composite"]["mean"] = mean
    (run / "results.json").write_text(json.dumps(results))
    return run


def test_an_unreadable_e0_estimate_is_refused(
    experiments: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _e0_with(experiments, tmp_path, "x")
    said = 'estimates.pooled.serial.composite.mean is "x", not a number'
    refused(capsys, ["report", str(run), "--out", str(tmp_path / "r.html")], said)


def test_an_undefined_e0_estimate_is_marked_not_drawn_at_zero(
    experiments: dict[str, Path], tmp_path: Path
) -> None:
    run = _e0_with(experiments, tmp_path, None)
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    pooled = re.findall(r"<svg.*?</svg>", out.read_text(), re.DOTALL)[1]
    assert pooled.count(">n/a<") == 1  # serial's R; its other measures keep their bars


def _distances_set_to(path: Path, value: float, *, key: str = "cells") -> None:
    """Set every cell's topology distance in the JSON file ``path`` to ``value``."""
    document = json.loads(path.read_text())
    for cell in document[key]:
        cell["distance"] = value
    path.write_text(json.dumps(document))


@pytest.mark.parametrize("value", [1e308, -1.7e308])
def test_an_extreme_protocol_distance_leaves_its_points_out_not_the_page(
    runs: dict[str, Path], tmp_path: Path, value: float
) -> None:
    run = _copy(runs["protocol"], tmp_path)
    _distances_set_to(run / "expert" / "report.json", value)
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert "3 point(s) not drawn: values beyond ±1e+300" in out.read_text()


def test_an_extreme_e3_distance_leaves_its_points_out_not_the_page(
    experiments: dict[str, Path], tmp_path: Path
) -> None:
    run = _copy(experiments["e3"], tmp_path)
    _distances_set_to(run / "results.json", 1e308)
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    assert "point(s) not drawn: values beyond ±1e+300" in out.read_text()


@pytest.mark.parametrize("fit", [{"slope": None, "spearman": None}, {"slope": "x"}, 7])
def test_an_undefined_protocol_fit_is_shown_as_a_dash(
    runs: dict[str, Path], tmp_path: Path, fit: object
) -> None:
    """Audit 12B F3: a rank correlation of a constant R is written as null; the page says
    "-" for it (and for a hand-edited value that is no number) instead of failing."""
    run = _copy(runs["protocol"], tmp_path)
    path = run / "expert" / "report.json"
    report = json.loads(path.read_text())
    report["score_vs_distance"]["0"] = fit
    path.write_text(json.dumps(report))
    out = tmp_path / "r.html"
    assert main(["report", str(run), "--out", str(out)]) == 0
    dash = r'<td class="num">-</td>'
    cells = r'<td class="key">expert</td><td class="num">0\.125</td>' + dash * 2
    assert re.search(cells, out.read_text())
