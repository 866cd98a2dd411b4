"""Merge a measured held-out question set into the simulated user's training data.

How v1 to v17 became training data; from v18 on, measured sets stay held out instead
(``HELD_OUT`` in ``benchmarks/user_understanding.py``: v18's questions made the matcher worse).

The blind-set protocol (docs/environment.md, "The simulated user"): a held-out set is measured
once by ``benchmarks/user_understanding.py``; then its questions become labelled training data
and a new blind set takes its place. This script does the merge: each domain's slot questions
go to that domain's ``questions.json``; the priority, open and unclear questions go to the
kernel's ``understanding/questions.json`` (an open question is the agent's choice handed over
when it asks which option to take, otherwise a request for everything; a question labelled
or dropped there before keeps its label or stays out). It prints the open
questions' split for a check by eye, and points each file's ``about`` line at the new blind
set (its history of merged sets is edited by hand).

    python scripts/merge_heldout.py tests/fixtures/heldout_questions_v6.json \\
        --blind tests/fixtures/heldout_questions_v7.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "src" / "stategym" / "kernel" / "understanding" / "questions.json"
DOMAINS = ROOT / "src" / "stategym" / "domains"
CHOOSING = re.compile(
    r"(?:^|[.?!;,\u2014\u2013]\s*)which\b|\bchoose one\b|\bpick one\b|\bwhich answer\b"
    r"|\bwould you like to choose\b|\byour call\b"
    r"|^\s*(?:should|shall) i (?:go (?:ahead )?with|book|order|buy|delete|pay)\b[^?]*\bor\b",
    re.I,
)
"""An open question that hands the agent's choice to the user: which option ("I found two;
which do you prefer?", "Here are three, which one works?"), or "should I book X or Y"
("should I go with the first option or the second?").
("Should I give you the answer now?" asks what comes next.)"""
_ABOUT = re.compile(r"tests/fixtures/heldout_questions_v\d+\.json is the blind one")


def _write(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _append(target: list[str], questions: list[str]) -> None:
    target.extend(q for q in questions if q not in target)


def _about(text: str, blind: str) -> str:
    return _ABOUT.sub(f"{blind} is the blind one", text)


def merge(fixture: Path, blind: str) -> None:
    held = json.loads(fixture.read_text(encoding="utf-8"))
    kernel = json.loads(KERNEL.read_text(encoding="utf-8"))
    intents = kernel["intents"]
    for domain, spec in held["domains"].items():
        path = DOMAINS / domain / "questions.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        for slot, questions in spec["slots"].items():
            kept = [q for q in questions if q not in data.get("dropped", {})]
            _append(data["slots"].setdefault(slot, []), kept)
        data["about"] = _about(data["about"], blind)
        _write(path, data)
        _append(intents["priorities"], spec.get("priorities", []))
        for question in spec.get("open", []):
            intent = "?choice" if CHOOSING.search(question) else "?overview"
            if question in intents["?choice"] or question in intents["?overview"]:
                continue  # labelled by an earlier set: one label for one question
            print(f"{intent:<10} {question}")
            _append(intents[intent], [question])
    dropped = kernel.get("dropped", {})
    _append(intents["?nothing"], [q for q in held.get("unclear", []) if q not in dropped])
    kernel["about"] = _about(kernel["about"], blind)
    _write(KERNEL, kernel)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fixture", type=Path, help="the measured held-out set")
    parser.add_argument("--blind", required=True, help="the set that is blind from now on")
    args = parser.parse_args()
    merge(args.fixture, args.blind)


if __name__ == "__main__":
    main()
