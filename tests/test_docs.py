"""The docs are true: every Python snippet in README.md and docs/*.md runs as written, the
commands they quote parse, and the figures a cheap command reproduces are today's figures.

Snippets of one page run in order in one namespace, as a reader pasting them would. A block
opts out only with ``<!-- no-run: reason -->`` on the line before its fence, and
:data:`OPTED_OUT` lists every such block, so the exceptions stay few and visible.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from stategym.cli import build_parser, main
from stategym.kernel.understanding import RulesBreakTies
from stategym.llm.reading import LLMReading

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)
NO_RUN = re.compile(r"<!-- no-run: (.+?) -->\s*$")

OPTED_OUT = {
    ("docs/adding-a-domain.md", "a template for a domain that does not exist (mydomain)"),
    ("docs/llm.md", "needs an OpenAI-compatible server at 127.0.0.1:8000"),
    (
        "docs/integrations.md",
        "needs the verl extra, which has an environment of its own (scripts/test-verl.sh)",
    ),
}
"""Every block that does not run, with its reason. Add to it only what cannot run offline."""


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    language: str
    code: str
    skip: str | None


def blocks(path: Path) -> list[Block]:
    """The page's fenced blocks, dedented, with the no-run reason written above each."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        indent, language, body = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NO_RUN.search(before)
        code = "\n".join(row.removeprefix(indent) for row in body.split("\n"))
        page = path.relative_to(ROOT).as_posix()
        found.append(Block(page, line, language, code, reason.group(1) if reason else None))
    return found


BLOCKS = [block for page in PAGES for block in blocks(page)]
PYTHON_PAGES = sorted({b.page for b in BLOCKS if b.language == "python"})


def test_the_pages_have_snippets() -> None:
    assert {"README.md", "docs/environment.md", "docs/metrics.md", "docs/trajectory.md"} <= set(
        PYTHON_PAGES
    )
    assert sum(b.language == "python" and b.skip is None for b in BLOCKS) >= 9


def test_only_the_listed_blocks_opt_out() -> None:
    assert {(b.page, b.skip) for b in BLOCKS if b.skip is not None} == OPTED_OUT


@pytest.mark.parametrize("page", PYTHON_PAGES)
def test_python_snippets_run_as_written(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # snippets may write files
    namespace: dict[str, object] = {"__name__": "__doc_snippet__"}
    for block in BLOCKS:
        if block.page == page and block.language == "python" and block.skip is None:
            # the page and line in the traceback point a failure at the snippet
            code = "\n" * (block.line) + block.code
            exec(compile(code, block.page, "exec"), namespace)


def _commands() -> list[tuple[str, str]]:
    """Every ``stategym ...`` command in a bash block, continuation lines joined."""
    commands = []
    for block in BLOCKS:
        if block.language != "bash":
            continue
        for line in block.code.replace("\\\n", " ").splitlines():
            command = line.split(" #", 1)[0].strip().removesuffix("&").strip()
            if command.startswith("stategym ") and " [" not in command:  # "[...]": a synopsis
                commands.append((f"{block.page}:{block.line}", command))
    return commands


@pytest.mark.parametrize(("where", "command"), _commands(), ids=[w for w, _ in _commands()])
def test_quoted_commands_parse(where: str, command: str) -> None:
    build_parser().parse_args(shlex.split(command)[1:])


def test_stategym_list_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("travel", "meetings", "shop", "bank", "cloud", "lookup", "expert"):
        assert name in out


# --- figures the docs state ---------------------------------------------------------------

MATRIX_COMMAND = "stategym topology --matrix"
SLOW_PAIRS = {frozenset({"cloud", "shop"})}
"""Pairs left out of the recomputation: cloud-shop alone costs ~6 CPU seconds (its search
runs out of budget); the other fourteen cost ~5 together."""


def _table(text: str, header: str) -> list[list[str]]:
    """The cells of the first Markdown table in ``text`` whose header row starts with
    ``header``, the header first."""
    lines = text[text.index(header) :].split("\n\n", 1)[0].splitlines()
    return [[c.strip() for c in row.strip("|").split("|")] for row in lines if "---" not in row]


def _printed_matrix() -> tuple[list[str], dict[tuple[str, str], str]]:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split(f"`{MATRIX_COMMAND}`", 1)[1]
    header, *rows = _table(section, "|          |")
    names = header[1:]
    cells = {}
    for name, *values in rows:
        cells.update({(name, other): v for other, v in zip(names, values, strict=True)})
    return names, cells


def test_protocol_distance_matrix_is_todays() -> None:
    from stategym.kernel.knobs import Knobs
    from stategym.registry import all_domains, get_domain
    from stategym.topology import domain_topology
    from stategym.topology.distance import edit_distance

    names, printed = _printed_matrix()
    assert names == list(all_domains())  # the page shows every registered domain
    topologies = {n: domain_topology(get_domain(n), Knobs()) for n in names}
    for i, a in enumerate(names):
        assert printed[a, a] == "0.00"
        for b in names[i + 1 :]:
            assert printed[a, b] == printed[b, a]
            if frozenset({a, b}) in SLOW_PAIRS:
                assert printed[a, b].startswith("~"), (a, b)  # a bound, and said to be one
                continue
            d = edit_distance(topologies[a], topologies[b])
            assert printed[a, b] == f"{'' if d.exact else '~'}{d.normalised:.2f}", (a, b)


PROTOCOL_AGENTS = ("expert", "serial", "all-parallel", "ask-nothing")


@pytest.mark.slow
def test_the_protocol_table_is_todays(tmp_path: Path) -> None:
    """docs/protocol.md's "Measured" table is what its command prints (17 CPU seconds, so
    in the slow set: audit 12B found it behind the metric's rules)."""
    argv = ["protocol", "--agents", ",".join(PROTOCOL_AGENTS), "--episodes", "20"]
    page = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    assert f"`stategym {' '.join(argv)}`" in page
    assert main([*argv, "--out", str(tmp_path / "p")]) == 0
    header, *rows = _table(page.split("### Measured", 1)[1], "| split |")
    assert tuple(header[1:]) == PROTOCOL_AGENTS
    for split, *cells in rows:
        for agent, printed in zip(PROTOCOL_AGENTS, cells, strict=True):
            report = json.loads((tmp_path / "p" / agent / "report.json").read_text())
            m = report["splits"]["0"][split]
            today = (
                f"{m['success']:.2f} / {m['composite']:+.2f} / "
                f"{m['serialisation']:.2f} / {m['unsafe_parallel']:.2f}"
            )
            assert printed == today, (split, agent)


LLM_READINGS = ROOT / "benchmarks" / "readings" / "session-subagent.sqlite"
"""The LLM readings docs/environment.md reports (v16 to v25 read by the session's subagents)."""


def _replayed(
    tmp_path: Path, opening: str, readers: dict[str, str], novel: bool = False
) -> tuple[dict[str, list[str]], dict[str, list[Any]]]:
    """The docs/environment.md table whose header opens with ``opening`` (its cells by row),
    and today's figures (benchmark ``Summary``s, one per set of the header) of the rows
    ``readers`` names: row -> ``"rules"``, ``"llm"`` (the recorded readings, offline, from a
    copy: reading opens the cache for writing) or ``"llm+rules"`` (the rules breaking its
    ties); ``novel``: without the questions a training set holds."""
    from understood import benchmark

    page = (ROOT / "docs" / "environment.md").read_text(encoding="utf-8")
    header, *rows = _table(page, opening)
    reading = LLMReading("session-subagent", shutil.copy(LLM_READINGS, tmp_path), offline=True)
    sources = {"rules": None, "llm": reading, "llm+rules": RulesBreakTies(reading)}
    bench = benchmark()
    leave_out = bench.trained_questions() if novel else frozenset()
    figures: dict[str, list[Any]] = {name: [] for name in readers}
    for version in header[1:]:
        fixture = json.loads(bench.set_path(int(version.removeprefix("v"))).read_text())
        for name, source in readers.items():
            results = bench.measure(fixture, sources[source], leave_out)
            figures[name].append(bench.summary(results))
    return {r[0]: r[1:] for r in rows}, figures


def test_the_recorded_llm_readings_are_todays(tmp_path: Path) -> None:
    """Today's prompt replays them offline to the page's figures: the cache still fits the
    prompt and phrase tables (a changed one misses it and raises), and the benchmark counts as
    it did."""
    readers = {
        "the session's subagents, prompt version 2 (now)": "llm",
        "the same, the rules breaking its ties": "llm+rules",
    }
    cells, figures = _replayed(tmp_path, "| reader | v16 |", readers)
    for name in readers:
        assert [s.cell() for s in figures[name]] == cells[name], name


def test_the_figures_on_new_questions_are_todays(tmp_path: Path) -> None:
    """docs/environment.md's table of the held-out sets without the questions a training set
    holds: how many slot questions are left, and what the rules and the recorded LLM readings
    measure on them (``user_understanding.py --novel``)."""
    readers = {
        "rules (now)": "rules",
        "the session's subagents, prompt version 2": "llm",
        "the same, the rules breaking its ties": "llm+rules",
    }
    opening = "| reader, questions no training set holds | v18 |"
    cells, figures = _replayed(tmp_path, opening, readers, novel=True)
    for name in readers:
        assert [s.cell() for s in figures[name]] == cells[name], name
    left = [str(s.slot_questions) for s in figures["rules (now)"]]
    assert left == cells["slot questions left, of 711"]


def test_the_missing_matplotlib_hint_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    assert main(["topology", "travel", "--draw", str(tmp_path / "t.png")]) != 0
    err = " ".join(capsys.readouterr().err.split())  # undo any wrapping
    assert "pip install 'stategym[plot]'" in err


def test_the_dense_reward_cost_is_stated_once() -> None:
    stated = {
        page.relative_to(ROOT).as_posix(): re.findall(r"[+~]?\d+ [µu]s per step", text)
        for page in PAGES
        if (text := page.read_text(encoding="utf-8"))
    }
    assert [page for page, figures in stated.items() if figures] == ["docs/metrics.md"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/metrics.md#speed" in readme  # the README points at the one figure


def test_the_tiny_model_build_time_is_stated_once() -> None:
    from stategym.llm.tiny import TinyConfig

    help_text = str(TinyConfig.__doc__)
    seconds = re.findall(r"(\d[\d,]*) s\b", help_text)
    assert len(seconds) == 1, help_text
    llm = (ROOT / "docs" / "llm.md").read_text(encoding="utf-8")
    assert f"{seconds[0]} s" in llm
    for stale in ("about a minute", "3-4 min", "430 s"):
        assert stale not in help_text + llm
