"""``stategym list``: the registered domains, agents and knobs."""

from __future__ import annotations

import argparse
from dataclasses import fields

NAME = "list"
HELP = "List domains, scripted agents and knobs."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def main(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from stategym.agents import agent_names
    from stategym.kernel.knobs import Knobs
    from stategym.registry import all_domains

    console = Console()
    domains = Table(title="Domains")
    for column in ("name", "gymnasium id", "tools", "description"):
        domains.add_column(column)
    for domain in all_domains().values():
        domains.add_row(domain.name, domain.env_id, str(len(domain.tools)), domain.title)
    console.print(domains)
    console.print("Agents: " + ", ".join(agent_names()))
    console.print(
        "  and ask-pP, P in [0, 1]: the expert asking each must-ask fact with probability P "
        "(ask-p0.3; the exploration-guard teacher)"
    )
    knobs = Table(title="Knobs (--knobs NAME=on|off,... or all_off)")
    knobs.add_column("knob")
    knobs.add_column("default")
    for field in fields(Knobs):
        knobs.add_row(field.name, "on" if getattr(Knobs(), field.name) else "off")
    console.print(knobs)
    return 0
