"""The reference tables of the docs name what the code has, and the figures agree (audit 14c).

A field table is checked against the dataclass it documents, a function table against the
module's public functions, so a field added, renamed or removed fails here instead of leaving
a page that describes code that no longer exists (``extra`` on ``Domain``, audit 14c F2) or
leaves out what does (``UserTurn.open``, F3). Tables are found by the line that introduces
them, and a row's names are the backticked names of its first cell. Beside them: the prompt
version the LLM page names (F4), one dense-reward cost ratio in the README and the
performance page that fits the README's table (F6), the instruction table's arithmetic (a
guard: the counts themselves take callgrind minutes, F1), and the OpenEnv benchmark ending
without a server traceback in either mode (F5).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import stategym.generation
import stategym.kernel.trajectory
from stategym.agents.style import Style
from stategym.kernel.domain import Domain
from stategym.kernel.task import GroundTruth, Task
from stategym.kernel.understanding.labelled import with_questions
from stategym.registry import all_domains, get_domain
from stategym.rendering import PROMPT_VERSION

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NAME = re.compile(r"`(\w+)")


def page(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def table_after(text: str, anchor: str) -> list[list[str]]:
    """The body rows of the first markdown table from ``anchor``'s line on, as cells."""
    lines = text[text.rindex("\n", 0, text.index(anchor)) + 1 :].splitlines()
    rows: list[list[str]] = []
    for line in lines:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # the header and the rule under it


def first_cell_names(rows: list[list[str]]) -> list[str]:
    """Every backticked name of each row's first cell (``order_matters`` of its signature)."""
    return [name for row in rows for name in NAME.findall(row[0])]


def field_names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


# ---- docs/adding-a-domain.md (F2) ---------------------------------------------------------

ADDING = "docs/adding-a-domain.md"


@pytest.mark.parametrize(
    ("anchor", "cls"),
    [
        ("## The Domain object", Domain),
        ("The `Task` (see", Task),
        ("`GroundTruth` is computed once", GroundTruth),
        ("Every baseline and pathological agent is", Style),
    ],
    ids=["Domain", "Task", "GroundTruth", "Style"],
)
def test_a_field_table_names_every_field_and_no_other(anchor: str, cls: type) -> None:
    listed = first_cell_names(table_after(page(ADDING), anchor))
    assert sorted(listed) == sorted(set(listed)), f"a {cls.__name__} field is listed twice"
    assert set(listed) == field_names(cls)


def test_the_generation_table_names_every_public_helper() -> None:
    module = stategym.generation
    helpers = {
        name
        for name, value in vars(module).items()
        if inspect.isfunction(value)
        and value.__module__ == module.__name__
        and not name.startswith("_")
    }
    listed = first_cell_names(table_after(page(ADDING), "`stategym.generation` holds what"))
    assert set(listed) == helpers


def test_the_page_says_how_a_domains_questions_are_read() -> None:
    """``questions.json`` reaches the user's model only through ``with_questions``: the page
    says so, and every registered domain that has the file builds its phrases that way."""
    assert "slot_phrases=with_questions(__name__, SLOT_PHRASES)" in page(ADDING)
    for name in all_domains():
        package = f"stategym.domains.{name}"
        if not resources.files(package).joinpath("questions.json").is_file():
            continue
        phrases = importlib.import_module(package).SLOT_PHRASES
        assert dict(get_domain(name).slot_phrases) == with_questions(package, phrases), name


# ---- docs/trajectory.md (F3) --------------------------------------------------------------


def trajectory_sections() -> list[tuple[str, str]]:
    """Each ``## Name`` section of the page that documents a type of the trajectory module."""
    text = page("docs/trajectory.md")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    return [
        (title, body)
        for title, _, body in (section.partition("\n") for section in sections)
        if hasattr(stategym.kernel.trajectory, title.strip())
    ]


@pytest.mark.parametrize(
    ("title", "body"), trajectory_sections(), ids=[t for t, _ in trajectory_sections()]
)
def test_a_trajectory_record_table_names_every_field(title: str, body: str) -> None:
    cls = getattr(stategym.kernel.trajectory, title.strip())
    listed = first_cell_names(table_after(body, "| field |"))
    assert set(listed) == field_names(cls)


def test_every_record_a_trajectory_holds_has_its_table() -> None:
    titles = {title.strip() for title, _ in trajectory_sections()}
    assert {"Trajectory", "RoundRecord", "CallRecord", "UserTurn", "Charge", "Outcome"} <= titles


# ---- docs/llm.md (F4) ---------------------------------------------------------------------


def test_the_prompt_heading_names_the_current_version() -> None:
    headings = re.findall(r"^## The prompt \(version (\d+)\)$", page("docs/llm.md"), re.M)
    assert headings == [str(PROMPT_VERSION)]


# ---- README.md and docs/performance.md (F6, F1) -------------------------------------------

DENSE_COST = re.compile(r"(\d) to (\d) times\s+the\s+outcome\s+reward's")


def test_the_dense_reward_ratio_is_one_range_that_fits_the_readme_table() -> None:
    readme, performance = page("README.md"), page("docs/performance.md")
    stated = {DENSE_COST.findall(readme)[0], DENSE_COST.findall(performance)[0]}
    assert len(stated) == 1, stated  # the README and the page say the same thing
    low, high = (int(n) for n in stated.pop())
    medians = [
        float(row[1])
        for row in table_after(readme, "| figure | median |")
        if row[0].startswith("dense reward:")
    ]
    assert medians and all(low <= round(m) <= high for m in medians), medians


def test_the_instruction_table_covers_every_domain_and_adds_up() -> None:
    """A guard: one row per registered domain and interface, each change its counts' ratio."""
    rows = table_after(page("docs/performance.md"), "| domain, interface |")
    expected = {f"{name} {mode}" for name in all_domains() for mode in ("typed", "gym")}
    assert {row[0] for row in rows} == expected
    for label, before, after, change in rows:
        old, new = (int(n.replace(",", "")) for n in (before, after))
        assert float(change.rstrip("%")) == pytest.approx(100 * (new / old - 1), abs=0.06), label


# ---- benchmarks/openenv_speed.py (F5) -----------------------------------------------------


@pytest.mark.parametrize("where", [["--in-process"], []], ids=["in-process", "child"])
def test_the_openenv_benchmark_ends_without_a_server_traceback(where: list[str]) -> None:
    """OpenEnv's client sends ``close`` and shuts its socket; the server closing after it
    logged "Exception in ASGI application" on every connection (in a thread it shares this
    stderr; a child's log is passed on), figures printed all the same."""
    command = [sys.executable, "benchmarks/openenv_speed.py", "--domains", "lookup"]
    done = subprocess.run(
        [*command, "--episodes", "2", *where],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "lookup:" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
