"""``stategym topology``: print (and draw) a domain's or a task's topology, or the pairwise
distance matrix over domains.

Examples::

    stategym topology travel --draw travel.svg
    stategym topology synth:chain2+fanout3+askgate --task 3
    stategym topology --matrix
    stategym topology --matrix --domains travel,synth:base,synth:chain2+fanout3 --json m.json
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from stategym.topology.graph import Topology

NAME = "topology"
BUDGET_HELP = "edit-distance search budget in expanded states (default: 10,000)"
"""Help of ``--budget``; a test pins its figure to ``EXPANSION_BUDGET``, which is not
imported here because it would pull networkx into every ``stategym`` start."""
HELP = "Show a domain's tool topology (names erased), draw it, or print the distance matrix."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options

    parser.add_argument("domain", nargs="?", help="domain name (synth:<spec> for a synthetic one)")
    parser.add_argument(
        "--task",
        type=options.non_negative_int,
        default=None,
        help="show the topology of this task seed instead of the domain's (default: the domain)",
    )
    options.add_knobs(parser)
    parser.add_argument(
        "--draw",
        type=_drawing,
        default=None,
        help="write a drawing (.svg always; .png/.pdf need matplotlib) (default: none)",
    )
    parser.add_argument(
        "--matrix", action="store_true", help="print the pairwise distance matrix over domains"
    )
    parser.add_argument(
        "--domains",
        type=options.names,
        default=[],
        help="comma-separated domains for --matrix, registered or synth:<spec>, each once "
        "(default: every registered)",
    )
    parser.add_argument(
        "--budget",
        type=options.positive_int,
        default=None,
        help=BUDGET_HELP,
    )
    parser.add_argument(
        "--json",
        type=options.output_path,
        default=None,
        help="also write the result as JSON (default: none)",
    )


def _drawing(text: str) -> Path:
    """A path ``--draw`` can write, refused in one line before anything is computed: its
    parent a folder (:func:`~stategym.commands.options.output_path`) and its suffix a format
    the drawing writes (:func:`~stategym.topology.draw.drawable`), so the path printed after
    drawing is the file written."""
    from stategym.commands import options
    from stategym.topology.draw import drawable

    try:
        return drawable(options.output_path(text))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from stategym.kernel.errors import UsageError

    console = Console()
    if args.matrix:
        return _matrix(console, args)
    if not args.domain:
        raise UsageError("give a DOMAIN, or --matrix")
    return _show(console, args)


def _show(console: Console, args: argparse.Namespace) -> int:
    import orjson
    from rich.markup import escape
    from rich.table import Table

    from stategym.kernel.errors import UsageError
    from stategym.registry import get_domain
    from stategym.topology import describe, domain_topology, task_topology, wl_hash
    from stategym.topology.draw import draw

    domain = get_domain(args.domain)
    topology = (
        task_topology(domain.generate(args.task, args.knobs))
        if args.task is not None
        else domain_topology(domain, args.knobs)
    )
    graph = topology.graph
    table = Table(
        title=f"{topology.source}: {graph.number_of_nodes()} nodes, "
        f"{graph.number_of_edges()} edges, WL hash {wl_hash(topology)[:12]}"
    )
    table.add_column("node")
    table.add_column("role")
    table.add_column("out-edges")
    for node, label in graph.nodes(data="label"):
        out = ", ".join(
            f"{lab} -> {topology.names[v]}" for _, v, lab in graph.out_edges(node, data="label")
        )
        table.add_row(topology.names[node], label, out)
    console.print(table)
    console.print("roles: " + ", ".join(f"{k}={v}" for k, v in topology.labels().items()))
    if args.draw is not None:
        try:
            console.print(escape(f"drew {draw(topology, args.draw)}"))
        except RuntimeError as error:  # a format that needs matplotlib, which is missing
            raise UsageError(str(error)) from None
    if args.json is not None:
        args.json.write_bytes(
            orjson.dumps(
                {
                    "source": topology.source,
                    "wl_hash": wl_hash(topology),
                    "lines": describe(topology),
                    "labels": topology.labels(),
                },
                option=orjson.OPT_INDENT_2,
            )
        )
    return 0


def _matrix(console: Console, args: argparse.Namespace) -> int:
    import orjson
    from rich.table import Table

    from stategym.commands.options import domains
    from stategym.registry import all_domains, get_domain
    from stategym.topology import distance_matrix, domain_topology, wl_distance, wl_hash
    from stategym.topology.distance import EXPANSION_BUDGET

    names = domains(args.domains) if args.domains else list(all_domains())
    topologies: list[Topology] = [domain_topology(get_domain(n), args.knobs) for n in names]
    budget = args.budget or EXPANSION_BUDGET
    rows = distance_matrix(topologies, budget)
    table = Table(title="Normalised graph edit distance (~: budget reached, upper bound)")
    table.add_column("")
    for name in names:
        table.add_column(_short(name), justify="right")
    for name, row in zip(names, rows, strict=True):
        table.add_row(_short(name), *(f"{'' if d.exact else '~'}{d.normalised:.2f}" for d in row))
    console.print(table)
    proxy = Table(title="WL-kernel proxy distance (1 - cosine)")
    proxy.add_column("")
    for name in names:
        proxy.add_column(_short(name), justify="right")
    for name, a in zip(names, topologies, strict=True):
        proxy.add_row(_short(name), *(f"{wl_distance(a, b):.2f}" for b in topologies))
    console.print(proxy)
    if args.json is not None:
        report: dict[str, Any] = {
            "domains": names,
            "knobs": args.knobs.describe(),
            "budget": budget,
            "wl_hash": [wl_hash(t) for t in topologies],
            "size": [t.size for t in topologies],
            "ged": [[d.normalised for d in row] for row in rows],
            "ged_cost": [[d.cost for d in row] for row in rows],
            "exact": [[d.exact for d in row] for row in rows],
            "wl": [[wl_distance(a, b) for b in topologies] for a in topologies],
        }
        args.json.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return 0


def _short(name: str) -> str:
    return name.removeprefix("synth:")
