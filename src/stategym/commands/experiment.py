"""``stategym experiment``: run one of issue 12's experiments and write its run directory.

Examples::

    stategym experiment e0 --quick --seeds 0,1,2 --out runs/e0
    stategym experiment e3 --smoke --seeds 0 --out runs/e3-smoke
    stategym experiment e3 --llm-agent openai:MODEL --base-url URL --shots 0,1,3,8

One budget flag picks the configuration (:mod:`stategym.experiments.configs`): ``--smoke``
(seconds, proves every file is written; never quote its numbers), ``--quick`` (the default,
a laptop CPU), ``--standard``, ``--full``. The run directory holds ``results.json``,
``raw.json``, ``table.md`` and ``plots/``; the CPU time of the run is in ``results.json``.
E2 trains its arms with :mod:`stategym.train` (run directories under ``OUT/runs``, resumed
on a re-run with the same configuration; another configuration in the same ``--out`` is
refused before anything trains: :func:`stategym.experiments.output.claim`), as do E1, E4
and E3's fine-tuning arm. A file of the run directory that exists as anything but a regular
file (a folder, a FIFO, a device), and with ``--report`` an ``OUT/report.html`` that is no
earlier report, is refused before anything plays. Every ``--seeds`` value is checked first:
one whose derived task seeds pass the last task seed (``2**64 - 1``) is refused in one line
naming the largest seed the experiment takes (each experiment's ``largest_task_seed``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

NAME = "experiment"
HELP = "Run an experiment of the project's claims (e0-e4): tables, intervals and plots."


def _seeds(text: str) -> tuple[int, ...]:
    from stategym.commands.options import whole_numbers

    return whole_numbers(text, "seeds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from stategym.commands import options
    from stategym.experiments import EXPERIMENTS

    parser.add_argument("name", choices=EXPERIMENTS, help="which experiment")
    budget = parser.add_mutually_exclusive_group()
    for name, what in (
        ("smoke", "seconds; proves the pipeline, numbers never quoted"),
        ("quick", "laptop CPU, at most 30 minutes (default)"),
        ("standard", "at most 90 minutes of CPU"),
        ("full", "the largest task counts"),
    ):
        budget.add_argument(
            f"--{name}",
            dest="budget",
            action="store_const",
            const=name,
            help=what,
        )
    parser.set_defaults(budget="quick")
    parser.add_argument(
        "--seeds",
        type=_seeds,
        default=(0, 1, 2),
        help="comma-separated seeds: independent task-seed blocks (default: 0,1,2)",
    )
    parser.add_argument(
        "--out",
        type=options.output_dir,
        default=None,
        help="run directory (default: runs/NAME)",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="also write OUT/report.html (stategym report of this run)",
    )
    model = parser.add_argument_group("the trained arms' model (e1, e2, e3's fine-tuning, e4)")
    model.add_argument(
        "--model",
        default=None,
        metavar="ID",
        help="start model: a Hugging Face id or folder instead of the tiny one (a GPU run)",
    )
    model.add_argument("--device", default=None, help="torch device (cpu, cuda)")
    model.add_argument("--dtype", choices=("float32", "bfloat16"), default=None)
    kshot = parser.add_argument_group("LLM agents (e0's rows, e3's k-shot arm)")
    kshot.add_argument(
        "--llm-agent",
        action="append",
        default=[],
        metavar="SPEC",
        help="an LLM agent (openai:MODEL, hf:PATH): e0 plays it beside the scripted agents, "
        "e3 with k demonstrations in context; repeatable (default: none)",
    )
    kshot.add_argument(
        "--shots",
        type=options.whole_numbers,
        default=None,
        help="comma-separated demonstration counts (default: 0,1,3,8)",
    )
    kshot.add_argument("--base-url", default=None, help="the openai: agents' endpoint")


def main(args: argparse.Namespace) -> int:
    import time

    from rich.console import Console

    from stategym.experiments.pending import NEEDS_TRAINING
    from stategym.kernel.errors import UsageError

    if args.name in NEEDS_TRAINING:
        raise UsageError(NEEDS_TRAINING[args.name])
    overrides = _overrides(args)
    try:
        import matplotlib  # noqa: F401
        import scipy  # noqa: F401
    except ImportError:
        raise UsageError(
            "stategym experiment needs matplotlib and scipy: pip install 'stategym[experiments]'"
        ) from None
    out: Path = args.out or Path("runs") / args.name
    _refuse_non_files(out, args.report)
    console = Console()
    start = time.process_time()
    with console.status(f"{args.name} ({args.budget}): playing"):
        written = _run(args.name, args.budget, args.seeds, out, start, overrides)
    console.print(f"{args.name}: CPU {time.process_time() - start:.1f} s; wrote {out}")
    for path in written:
        console.print(f"  {path}")
    if args.report:
        from stategym.commands.report import REPORT_FILE, write_report

        print(f"report: {write_report([out], out / REPORT_FILE)}")  # a path never wrapped
    return 0


def _refuse_non_files(out: Path, report: bool) -> None:
    """Refuse, before anything plays or trains, a file the run writes in ``out`` that exists
    as anything but a regular file (a folder, a FIFO, a device: it would be replaced, or a
    FIFO wait forever): its records and tables, and the figures an earlier run left in
    ``plots/`` (which a re-run writes again) or a ``plots`` that is no folder; and with
    ``report`` an ``OUT/report.html`` that is no earlier report
    (:func:`stategym.commands.report.check_report`)."""
    from stategym.experiments.output import PLOTS, RAW, RECORD, RESULTS, TABLE
    from stategym.kernel.files import refuse_non_files

    refuse_non_files(out, (RECORD, RESULTS, RAW, TABLE))
    plots = out / PLOTS
    drawn = sorted(plots.iterdir()) if plots.is_dir() else []
    refuse_non_files(plots, [path.name for path in drawn if path.suffix in (".png", ".svg")])
    if report:
        from stategym.commands.report import check_report

        check_report(out)


@dataclass(frozen=True, slots=True)
class Overrides:
    """What the command line changes in the budget's configuration.

    Attributes:
        llm: E0's and E3's LLM-agent fields (``llm_agents``, ``shots``, ``llm_options``).
        model: the trained arms' :class:`~stategym.experiments.arms.Recipe` fields
            (``init``, ``device``, ``dtype``).
    """

    llm: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)


def _overrides(args: argparse.Namespace) -> Overrides:
    """The command line's overrides, refused where they do not apply; an LLM agent is
    checked before anything plays (a missing model folder, an endpoint that does not answer).

    Raises:
        UsageError: an option for another experiment, or an agent that cannot play.
    """
    from stategym.commands.options import repeated
    from stategym.kernel.errors import UsageError
    from stategym.llm import check_agent

    if args.name not in ("e0", "e3") and (args.llm_agent or args.base_url):
        raise UsageError("--llm-agent and --base-url belong to e0 and e3")
    if args.name != "e3" and args.shots is not None:
        raise UsageError("--shots belongs to e3's k-shot arm")
    if args.shots is not None and not args.llm_agent:
        raise UsageError("--shots needs an LLM agent (--llm-agent openai:MODEL)")
    twice = repeated(args.llm_agent)
    if twice is not None:  # its rows would be played and counted twice
        raise UsageError(f"--llm-agent {twice} is given twice; give it once")
    options = {} if args.base_url is None else {"base_url": args.base_url}
    for spec in args.llm_agent:
        kind, sep, target = spec.partition(":")
        if not sep:
            raise UsageError(
                f"--llm-agent takes an LLM agent (openai:MODEL, hf:PATH), not {spec!r}"
            )
        check_agent(kind, target, **options)
    llm: dict[str, Any] = {"llm_agents": tuple(args.llm_agent)} if args.llm_agent else {}
    if args.shots is not None:
        llm["shots"] = tuple(args.shots)
    if options:
        llm["llm_options"] = tuple(options.items())
    given = (("init", args.model), ("device", args.device), ("dtype", args.dtype))
    model = {key: value for key, value in given if value is not None}
    if model and args.name == "e0":
        raise UsageError("--model, --device and --dtype belong to the experiments that train")
    return Overrides(llm, model)


def _run(
    name: str,
    budget: str,
    seeds: tuple[int, ...],
    out: Path,
    start: float,
    overrides: Overrides | None = None,
) -> list[Path]:
    """Run experiment ``name`` at the budget's configuration (with the command line's
    overrides) and write its run directory; every seed is checked before anything plays."""
    import time

    from stategym.experiments.arms import check_recipe
    from stategym.experiments.output import claim

    config = _configuration(name, budget, overrides or Overrides())
    _check_seeds(name, config, seeds)
    recipe = getattr(config, "recipe", None)
    if recipe is not None and (name != "e3" or config.finetune):
        check_recipe(recipe)  # before a folder is claimed
    if name == "e0":
        from stategym.experiments import e0

        claim(out, "e0", config, keeps_arms=False)
        return e0.write(e0.run(config, seeds), out, time.process_time() - start)
    if name == "e3":
        from stategym.experiments import e3, e3_finetune

        run = e3_finetune.run(config, seeds, out)
        return e3.write(run, out, time.process_time() - start)
    trained = _module(name)  # E1, E2 or E4: run(config, seeds, out), then write
    result = trained.run(config, seeds, out)
    return trained.write(result, out, time.process_time() - start)


def _configuration(name: str, budget: str, given: Overrides) -> Any:
    """The budget's configuration of ``name`` with the command line's overrides: the LLM
    agents (E0, E3) and the trained arms' model settings (every experiment but E0)."""
    from typing import cast

    from stategym.experiments import configs

    level = cast(configs.Budget, budget)  # argparse allows only the four budget names
    if name == "e0":
        return replace(configs.E0[level], **given.llm)
    table: dict[str, Any] = {"e1": configs.E1, "e2": configs.E2, "e3": configs.E3, "e4": configs.E4}
    config = table[name][level]
    if name == "e3":
        config = replace(config, **given.llm)
    model = given.model
    return replace(config, recipe=replace(config.recipe, **model)) if model else config


def _module(name: str) -> Any:
    """The module that runs experiment ``name`` (E3's: its fine-tuning arm's, which plays
    the zero-shot arm too); each has ``largest_task_seed(config, seed)``."""
    from stategym.experiments import e0, e1, e2, e3_finetune, e4

    return {"e0": e0, "e1": e1, "e2": e2, "e3": e3_finetune, "e4": e4}[name]


def _check_seeds(name: str, config: Any, seeds: tuple[int, ...]) -> None:
    """Refuse, before anything plays, a seed whose derived task seeds pass the last one.

    Each experiment derives its task seeds from a ``--seeds`` value (seed blocks, training
    tasks); its own ``largest_task_seed`` says the largest, computed by the functions the
    run itself uses, so the check and the run cannot disagree.

    Raises:
        UsageError: naming the seed, the task seed it would reach and the largest seed the
            experiment takes at this budget.
    """
    from stategym.kernel.errors import UsageError
    from stategym.kernel.task import SEED_LIMIT

    largest = _module(name).largest_task_seed
    for seed in seeds:
        reached = largest(config, seed)
        if reached >= SEED_LIMIT:
            most = _largest_allowed(lambda s: largest(config, s), SEED_LIMIT)
            raise UsageError(
                f"--seeds {seed}: {name} --{config.budget} would play task seeds up to "
                f"{reached}, past the last task seed (2**64 - 1); the largest seed it takes "
                f"is {most}"
            )


def _largest_allowed(reached: Any, limit: int) -> int:
    """The largest seed ``s`` with ``reached(s) < limit`` (``reached`` grows with ``s``;
    -1 when even seed 0 passes it), by bisection."""
    low, high = -1, limit  # reached(low) < limit (or low is -1); reached(high) >= limit
    while high - low > 1:
        middle = (low + high) // 2
        if reached(middle) < limit:
            low = middle
        else:
            high = middle
    return low
