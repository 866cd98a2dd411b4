"""A complete run leaves its log in request order (audit 12B F1, F4).

Episodes are appended as they end: a resumed run appends the missing seeds after the ones
played before, and LLM agents playing concurrently append in the order they happened to
finish. At the end of a complete ``run`` or ``eval`` the log is put in request order, so the
same command writes the same bytes however it got there, and ``eval``'s ``scores.jsonl``
follows the log line for line (``score`` of the folder then prints ``eval``'s own tables).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from stategym.cli import main
from stategym.kernel.trajectory import read_jsonl


def _run(out: Path, first: int, episodes: int, index: Path) -> None:
    argv = ["run", "--domain", "bank", "--agent", "serial", "--seed", str(first)]
    argv += ["--episodes", str(episodes), "--out", str(out), "--index", str(index)]
    assert main(argv) == 0


def test_a_run_resumed_from_later_seeds_is_written_as_one_played_at_once(tmp_path: Path) -> None:
    index = tmp_path / "index.sqlite"
    _run(tmp_path / "once", 0, 8, index)
    _run(tmp_path / "resumed", 5, 3, index)  # seeds 5-7 first
    _run(tmp_path / "resumed", 0, 8, index)  # then 0-7: 0-4 appended after them
    once = (tmp_path / "once" / "trajectories.jsonl").read_bytes()
    assert (tmp_path / "resumed" / "trajectories.jsonl").read_bytes() == once


def _eval(out: Path, first: int, episodes: int) -> None:
    argv = ["eval", "--domains", "shop,bank", "--agents", "serial,expert", "--seed", str(first)]
    argv += ["--episodes", str(episodes), "--resamples", "50", "--out", str(out)]
    assert main(argv) == 0


def test_an_eval_resumed_from_later_seeds_writes_the_files_of_one_played_at_once(
    tmp_path: Path,
) -> None:
    _eval(tmp_path / "once", 0, 6)
    _eval(tmp_path / "resumed", 3, 3)
    _eval(tmp_path / "resumed", 0, 6)
    for name in ("trajectories.jsonl", "scores.jsonl", "scorecard.json", "scorecard.md"):
        once = (tmp_path / "once" / name).read_bytes()
        assert (tmp_path / "resumed" / name).read_bytes() == once, name


def test_eval_scores_follow_the_log_line_for_line(tmp_path: Path) -> None:
    """Played in two goes (seeds 2-3 of each pair first), the log and the scores are in
    request order, line for line; a later request of fewer seeds leaves the log as it is
    and scores its episodes in the log's order."""
    out = tmp_path / "out"
    _eval(out, 2, 2)
    _eval(out, 0, 6)
    log = list(read_jsonl(out / "trajectories.jsonl"))
    scores = [orjson.loads(line) for line in (out / "scores.jsonl").read_bytes().splitlines()]
    assert len(scores) == len(log) == 24
    for trajectory, card in zip(log, scores, strict=True):
        assert (card["domain"], card["agent"], card["seed"]) == (
            trajectory.domain,
            trajectory.agent,
            trajectory.seed,
        )
    before = (out / "trajectories.jsonl").read_bytes()
    _eval(out, 2, 2)
    assert (out / "trajectories.jsonl").read_bytes() == before
    scores = [orjson.loads(line) for line in (out / "scores.jsonl").read_bytes().splitlines()]
    assert [(s["domain"], s["agent"], s["seed"]) for s in scores] == [
        (t.domain, t.agent, t.seed) for t in log if t.seed in (2, 3)
    ]


def test_putting_a_log_in_order_moves_its_lines_as_written(tmp_path: Path) -> None:
    """Audit 12C F4: the log was rewritten from the trajectories read back, which dropped
    what this version does not read (a field a later version or a user added); its lines
    are now moved byte for byte, through a link to the file it names, and so is a cut last
    line dropped."""
    index = tmp_path / "index.sqlite"
    store = tmp_path / "store"
    _run(store, 0, 3, index)
    log = store / "trajectories.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    annotated = lines[2].replace(b'{"version"', b'{"annotation":"mine","version"', 1)
    assert annotated != lines[2]
    log.write_bytes(annotated + lines[0] + b'{"version": 2, "domain": "ba')  # seed 1 lost, cut
    (tmp_path / "run").mkdir()
    link = tmp_path / "run" / "trajectories.jsonl"
    link.symlink_to(log)
    _run(tmp_path / "run", 0, 3, index)
    assert link.is_symlink()
    again = log.read_bytes().splitlines(keepends=True)
    assert again == [lines[0], lines[1], annotated]  # seed 1 played again, in its place
