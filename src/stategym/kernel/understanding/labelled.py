"""Labelled questions beside a domain's phrase table, which the user's intent model trains on.

A domain's phrase table lists the ways of naming a slot ("my budget", "price cap"); its
labelled questions (``questions.json`` in the domain's package) are whole questions as people
and LLM agents ask them ("Before I search, could you tell me roughly how much you'd like to
spend?"), taken from held-out sets once they had been measured. The model learns from both.
The first phrase of each slot stays first: the user names the slot by it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources


def with_questions(
    package: str, phrases: Mapping[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """``phrases`` with the labelled questions in ``package``'s ``questions.json`` appended
    to each slot's (the table unchanged where the package has none).

    Example:
        >>> table = with_questions("stategym.domains.travel", {"budget": ("my budget",)})
        >>> table["budget"][0], len(table["budget"]) > 1
        ('my budget', True)
    """
    resource = resources.files(package).joinpath("questions.json")
    labelled: dict[str, list[str]] = {}
    if resource.is_file():
        labelled = json.loads(resource.read_text(encoding="utf-8"))["slots"]
    return {slot: tuple(names) + tuple(labelled.get(slot, ())) for slot, names in phrases.items()}
