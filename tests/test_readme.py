"""What the README says about set-up and the CLI holds.

Its Python examples run, and its quoted commands parse, in ``tests/test_docs.py`` with every
other page's.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from stategym.cli import COMMANDS, build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PYTHON = [code for language, code in BLOCK.findall(README) if language == "python"]
SET_UP = README.split("## Set-up: two commands", 1)[1].split("\n## ", 1)[0]
BASH = [code for language, code in BLOCK.findall(SET_UP) if language == "bash"]
"""The two set-up commands: the main job, then the tests."""


def test_readme_has_examples() -> None:
    assert len(PYTHON) >= 4
    assert len(BASH) == 2  # the two set-up commands


def test_main_job_command_is_the_run_default() -> None:
    command = BASH[0].strip()
    install, _, job = command.partition(" && ")
    assert install == "pip install -e ."
    words = shlex.split(job)
    assert words[:2] == ["stategym", "run"]
    parser = build_parser()
    assert vars(parser.parse_args(words[1:])) == vars(parser.parse_args(["run"]))
    assert BASH[1].strip() == "bash scripts/test.sh"
    assert (ROOT / "scripts" / "test.sh").exists()


def test_commands_named_in_the_readme_exist() -> None:
    named = set(re.findall(r"`stategym (\w[\w-]*)", README)) - {"COMMAND"}
    assert named, "the README names no command"
    assert named <= set(COMMANDS)


def test_relative_links_resolve() -> None:
    links = re.findall(r"\]\(([^)#:]+)\)", README)
    assert links
    for link in links:
        assert (ROOT / link).exists(), link
