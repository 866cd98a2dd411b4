"""Hardening of the command line, from a fifth outside audit: bad input is one line and loses
nothing, a run directory never ends holding duplicated episodes, results stay deterministic.

Regressions: a name repeated in a comma list (every episode played and counted once per
copy), an empty list that played nothing, ``stategym report a a`` pooling one run twice, two
runs appending to one ``--out`` at once, a seed range past ``2**64 - 1`` or an unusable
``--index`` stopping a run with a traceback, and ``eval`` refusing the ``synth:`` domains
``run`` accepts.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from one_line_error import fails
from stategym.cli import main
from stategym.commands.options import names
from stategym.kernel.errors import UsageError
from stategym.kernel.task import SEED_LIMIT
from stategym.kernel.trajectory import loads
from stategym.report.runs import read_runs
from stategym.rundir import LOCK, locked

SYNTH = "synth:chain2+fanout3"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def seeds(out: str) -> list[int]:
    return [loads(line).seed for line in Path(out, "trajectories.jsonl").read_bytes().splitlines()]


def evaluate(out: str, *options: str) -> list[str]:
    return ["eval", "--domains", "travel", "--agents", "expert", "--out", out, *options]


# 1. a comma list names each entry once, and names something


@pytest.mark.parametrize(
    ("argv", "repeated"),
    [
        (["eval", "--domains", "travel,travel", "--agents", "expert"], "'travel'"),
        (["eval", "--domains", "travel", "--agents", "expert, random,expert"], "'expert'"),
        (["protocol", "--agents", "expert", "--train-on", "travel,travel"], "'travel'"),
        (["protocol", "--agents", "expert,expert", "--train-on", "travel"], "'expert'"),
        (["topology", "--matrix", "--domains", "bank,travel,bank"], "'bank'"),
    ],
)
def test_a_name_given_twice_is_refused_before_anything_plays(
    argv: list[str], repeated: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fails([*argv, "--episodes", "2", "--out", "out"], capsys, repeated, "given twice")
    assert not Path("out").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--domains", "travel", "--agents", ""],
        ["eval", "--domains", "", "--agents", "expert"],  # not every domain: the default is
        ["eval", "--domains", " , ", "--agents", "expert"],
        ["protocol", "--agents", "", "--train-on", "travel"],
        ["protocol", "--agents", "expert", "--train-on", ""],
    ],
)
def test_an_empty_list_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    fails([*argv, "--episodes", "2", "--out", "out"], capsys, "expected one or more")
    assert not Path("out").exists()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["protocol", "--agents", "expert", "--shots", "0,0", "--out", "out"], ("0 is given",)),
        (["experiment", "e3", "--smoke", "--shots", "1,3,1"], ("1 is given twice",)),
        (["experiment", "e0", "--smoke", "--seeds", "0,0"], ("distinct seeds",)),
        (
            ["experiment", "e0", "--smoke", "--llm-agent", "openai:m", "--llm-agent", "openai:m"],
            ("--llm-agent openai:m is given twice",),
        ),
    ],
)
def test_a_number_or_an_llm_agent_given_twice_is_refused(
    argv: list[str], words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    fails(argv, capsys, *words)
    assert not Path("out").exists() and not Path("runs").exists()


def test_spaces_are_trimmed_and_empty_items_refused() -> None:
    """Empty items were once dropped; audit 14b (F6) made them an error, as an empty list
    is (``travel,,`` said less than it seemed to)."""
    assert names(" travel , bank") == ["travel", "bank"]
    with pytest.raises(argparse.ArgumentTypeError, match="empty item"):
        names(" travel, ,bank,")


def test_two_spellings_of_one_synthetic_domain_are_one_domain(
    capsys: pytest.CaptureFixture[str],
) -> None:
    given = f"{SYNTH},synth:fanout3+chain2"
    fails(["eval", "--domains", given, "--episodes", "1", "--out", "out"], capsys, "same domain")
    assert not Path("out").exists()


# 2. a report reads each run once and each episode once


@pytest.fixture
def run_a() -> Path:
    assert main(evaluate("a", "--agents", "expert,random", "--episodes", "3")) == 0
    return Path("a")


@pytest.mark.parametrize("second", ["a", "./a", "../{tmp}/a", "link"])
def test_a_report_refuses_one_directory_given_twice(
    run_a: Path, second: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("link").symlink_to("a")
    second = second.format(tmp=tmp_path.name)
    fails(["report", "a", second, "--out", "r.html"], capsys, "same run directory")
    assert not Path("r.html").exists()


def test_a_report_refuses_a_copy_or_an_overlapping_run(
    run_a: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree("a", "copy")
    fails(["report", "a", "copy", "--out", "r.html"], capsys, "a and copy", "6 of the same")
    assert main(evaluate("later", "--seed", "2", "--episodes", "3")) == 0  # seed 2 again
    fails(["report", "a", "later"], capsys, "a and later hold 1 of the same", "seed 2")
    assert not Path("r.html").exists() and not Path("report.html").exists()


def test_runs_that_share_no_episode_are_read_together(run_a: Path) -> None:
    assert main(evaluate("b", "--seed", "3", "--episodes", "2")) == 0
    runs = read_runs([Path("a"), Path("b")])
    assert [len(getattr(run, "trajectories", ())) for run in runs] == [6, 2]
    with pytest.raises(UsageError, match="same run directory"):
        read_runs([Path("b"), Path("b")])


# 3. one run at a time writes a run directory


@contextmanager
def held_elsewhere(folder: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``folder``'s lock until the block ends (its stdin closes)."""
    script = (
        "import sys\nfrom pathlib import Path\nfrom stategym.rundir import locked\n"
        f"with locked(Path({folder!r})):\n    print('held', flush=True)\n    sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:  # closes the pipes and waits for the child on the way out
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield child


@pytest.mark.parametrize(
    "argv",
    [
        evaluate("out", "--episodes", "2"),
        ["run", "--out", "out", "--episodes", "2", "--index", "index.sqlite"],
    ],
)
def test_a_second_run_on_one_directory_is_refused_and_the_first_finishes(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with held_elsewhere("out") as other:
        fails(argv, capsys, "out is in use by another run", f"(pid {other.pid})")
        assert not Path("out/trajectories.jsonl").exists()
    assert main(argv) == 0  # the holder is gone: the directory is free again
    assert seeds("out") == [0, 1]
    assert not Path("out", LOCK).exists()  # released and deleted: only the run's files stay


def test_the_lock_of_a_killed_run_blocks_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with held_elsewhere("out") as other:
        other.send_signal(signal.SIGKILL)  # the kernel drops its flock; its file stays
        other.wait()
        assert Path("out", LOCK).read_text().strip() == str(other.pid)
        assert main(evaluate("out", "--episodes", "2")) == 0
    assert seeds("out") == [0, 1]
    assert not Path("out", LOCK).exists()


def test_one_process_cannot_take_a_directory_twice() -> None:
    with locked(Path("out")):
        assert Path("out", LOCK).read_text().strip() == str(os.getpid())
        held = rf"in use by another run \(pid {os.getpid()}\)"
        with pytest.raises(UsageError, match=held), locked(Path("out")):
            pass
    with locked(Path("out")):  # released: free again
        pass


# 4. a seed range past 2**64 - 1 and an unusable index are refused before anything plays

LAST = str(SEED_LIMIT - 1)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--seed", LAST, "--episodes", "2", "--out", "out", "--index", "i.sqlite"],
        evaluate("out", "--seed", LAST, "--episodes", "2"),
        ["protocol", "--agents", "expert", "--train-on", "travel", "--seed", LAST, "--out", "out"],
    ],
)
def test_a_seed_range_past_the_largest_seed_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    fails(argv, capsys, "past the largest seed 2**64 - 1", "--episodes")
    assert not Path("out").exists() and not Path("i.sqlite").exists()


def test_a_first_seed_past_the_largest_is_refused_as_a_number(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--seed 2**64`` is refused by the option itself, as any whole-number option past what a
    run's config can hold (it was refused by the seed-range check, in its words, before)."""
    fails(evaluate("out", "--seed", str(SEED_LIMIT), "--episodes", "1"), capsys, "--seed", "2**64")
    assert not Path("out").exists()


def test_the_largest_seed_itself_plays() -> None:
    assert main(evaluate("out", "--seed", LAST, "--episodes", "1")) == 0
    assert seeds("out") == [SEED_LIMIT - 1]


def _foreign_table(path: Path) -> None:
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE runs (x)")
        connection.commit()


def _newer_schema(path: Path) -> None:
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA user_version = 99")


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: p.write_text("garbage\n"), ("not a usable", "file is not a database")),
        (lambda p: p.mkdir(), ("is a folder",)),
        (_foreign_table, ("runs table with columns (x)",)),
        (_newer_schema, ("schema 99",)),
    ],
)
def test_an_unusable_index_is_refused_before_the_run_starts(
    make: object, words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    index = Path("index.sqlite")
    make(index)  # type: ignore[operator]
    before = index.read_bytes() if index.is_file() else None
    argv = ["run", "--episodes", "2", "--out", "out", "--index", str(index)]
    fails(argv, capsys, "run index index.sqlite", *words)
    assert not Path("out").exists()  # nothing played, nothing half-written
    assert (index.read_bytes() if index.is_file() else None) == before  # and left as it was


# 5. every command accepts the domain names run accepts


def test_eval_and_protocol_accept_a_synthetic_domain() -> None:
    assert main(["eval", "--domains", SYNTH, "--agents", "expert", "--episodes", "1"]) == 0
    assert loads(Path("runs/eval/trajectories.jsonl").read_bytes()).domain == SYNTH
    argv = ["protocol", "--agents", "expert", "--train-on", SYNTH, "--episodes", "1"]
    assert main([*argv, "--probes", "0", "--compositions", "0", "--out", "p"]) == 0


def test_a_synthetic_domain_spelled_otherwise_is_resumed_as_itself() -> None:
    argv = ["run", "--domain", "synth:fanout3+chain2", "--episodes", "2", "--index", "i.sqlite"]
    assert main([*argv, "--out", "out"]) == 0
    first = Path("out/trajectories.jsonl").read_bytes()
    assert main([*argv, "--out", "out"]) == 0  # resumed: the log holds the canonical name
    assert Path("out/trajectories.jsonl").read_bytes() == first
    assert {loads(line).domain for line in first.splitlines()} == {SYNTH}


def test_a_protocol_from_the_largest_seed_searches_no_seed_past_it(tmp_path: Path) -> None:
    # the probe search reads seeds after --seed; it stops at the last seed there is
    argv = ["protocol", "--seed", LAST, "--episodes", "1", "--probes", "1"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 0
