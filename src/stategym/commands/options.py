"""Argument types and option groups that every ``stategym`` command shares.

One convention across commands: an option that takes one value is singular (``--domain``,
``--agent``), one that takes a comma list is plural (``--domains``, ``--agents``); knobs are
written the same way everywhere (``NAME=on|off,...``, ``all_off``, and ``mixed`` where a
command plays many tasks), each knob once; a comma list names each entry once and at least
one, with no empty entry (:func:`comma_items`, :func:`names`), and every domain name is
checked by :func:`domains`. A path is never the empty string (:func:`output_path`,
:func:`given_path`); a file a command replaces whole must not exist as anything but a
regular file (:func:`output_file`: a device, a FIFO or a socket would be renamed over; a
folder is the command's to refuse), and a run folder must not exist as anything but a
folder (:func:`output_dir`). A type here raises
:class:`argparse.ArgumentTypeError`, so a bad value is argparse's one-line error naming the
option and the expected form::

    stategym run: error: argument --episodes: expected a whole number >= 1, got 'abc'
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from stategym.kernel.knobs import Knobs
from stategym.kernel.task import SEED_LIMIT

LLM_OPTIONS = ("base_url", "temperature", "max_tokens", "device", "concurrency")
"""Options passed to the agent resolver when given; scripted agents ignore them."""
KNOBS_HELP = "NAME=on|off,... (e.g. dynamics=off,hidden_info=off) or all_off"

T = TypeVar("T")


def _whole(text: str, least: int) -> int:
    """A whole number in ``[least, SEED_LIMIT)``: every option is written into the run's
    config, and a JSON line holds integers of at most 64 bits (``--bootstrap-seed 2**64``
    once failed after ``scores.jsonl`` was rewritten, leaving the scorecard of the run
    before)."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1  # refused below with the same message as a too-small number
    if not least <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= {least} and below 2**64, got {text!r}"
        )
    return value


def positive_int(text: str) -> int:
    """A whole number of at least 1 (episodes, budgets, resamples, token limits)."""
    return _whole(text, 1)


def non_negative_int(text: str) -> int:
    """A whole number of at least 0 (seeds, task numbers)."""
    return _whole(text, 0)


def non_negative_float(text: str) -> float:
    """A finite number of at least 0 (a sampling temperature)."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value >= 0 and math.isfinite(value)):  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def repeated(items: Sequence[T]) -> T | None:
    """The first item given a second time in ``items``, if any."""
    return next((item for i, item in enumerate(items) if item in items[:i]), None)


def whole_numbers(text: str, what: str = "whole numbers") -> tuple[int, ...]:
    """A comma list of distinct whole numbers >= 0, like ``0,1,3,8`` (``what`` they are, for
    the message: a number given twice would play its episodes twice, as in :func:`names`;
    an empty item is refused as there, :func:`comma_items`)."""
    try:
        values = tuple(non_negative_int(x) for x in comma_items(text))
    except argparse.ArgumentTypeError:
        values = ()
    if not values:
        raise argparse.ArgumentTypeError(f"expected whole numbers >= 0 like 0,1,3,8, got {text!r}")
    twice = repeated(values)
    if twice is not None:
        raise argparse.ArgumentTypeError(
            f"expected distinct {what}, got {text!r} ({twice} is given twice)"
        )
    return values


def comma_items(text: str) -> list[str]:
    """The items of a comma list, spaces around each trimmed; an empty item (``a,,b``, a
    trailing comma, ``,``) is refused, as a list of nothing is: the list says less than it
    seems to, and a slip (a name left out between two commas) would pass unseen.

    Raises:
        argparse.ArgumentTypeError: an empty item, or no item at all.
    """
    items = [item.strip() for item in text.split(",")]
    if not any(items):
        raise argparse.ArgumentTypeError(
            f"expected one or more comma-separated items, got {text!r}"
        )
    if not all(items):
        raise argparse.ArgumentTypeError(
            f"{text!r} has an empty item (two commas in a row, or one at an end); "
            "name each item once"
        )
    return items


def names(text: str) -> list[str]:
    """A comma list of names (domains, agents), each given once (:func:`comma_items`: spaces
    trimmed, an empty item refused).

    A list that names nothing is refused (leave the option out for its default), and so is
    a name given twice: every episode would be played, logged and counted once per copy, and
    dropping the copy silently would hide the slip.
    """
    found = comma_items(text)
    twice = repeated(found)
    if twice is not None:
        raise argparse.ArgumentTypeError(f"{twice!r} is given twice in {text!r}; give it once")
    return found


def domains(given: Sequence[str]) -> list[str]:
    """The domains named on the command line, by their canonical names: the one check of
    domain names for every command, so each accepts what ``stategym run`` accepts, a
    registered name or ``synth:<spec>[@<surface>]``.

    Two spellings of one synthetic domain (``synth:fanout3+chain2`` is
    ``synth:chain2+fanout3``) are one domain, so giving both is a name given twice.

    Raises:
        UnknownDomainError: a name that is neither (its message names it).
        UsageError: two names of one domain.
    """
    from stategym.kernel.errors import UsageError
    from stategym.registry import get_domain

    spelled: dict[str, str] = {}
    for name in given:
        canonical = get_domain(name).name
        if canonical in spelled:
            raise UsageError(
                f"{spelled[canonical]!r} and {name!r} are the same domain ({canonical}); "
                "give it once"
            )
        spelled[canonical] = name
    return list(spelled)


def seed_range(first: int, episodes: int) -> range:
    """Seeds ``first .. first + episodes - 1``, checked whole before anything plays (one
    past the largest seed would stop the run half-way).

    Raises:
        UsageError: the range runs past the largest seed, ``2**64 - 1``.
    """
    from stategym.kernel.errors import UsageError
    from stategym.kernel.task import SEED_LIMIT

    last = first + episodes - 1
    if last >= SEED_LIMIT:
        raise UsageError(
            f"--seed {first} with --episodes {episodes} runs to seed {last}, past the largest "
            f"seed 2**64 - 1 = {SEED_LIMIT - 1}; lower --seed or --episodes"
        )
    return range(first, first + episodes)


def knobs(text: str) -> Knobs:
    """One knob setting: ``NAME=on|off,...``, ``all_off`` or ``default``."""
    try:
        return Knobs.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def knob_spec(text: str) -> str:
    """A knob setting or ``mixed`` (the eval mix, :data:`stategym.metrics.taskset.MIXED`),
    checked here and kept as text for :func:`~stategym.metrics.taskset.knob_schedule`."""
    if text.strip() != "mixed":
        knobs(text)
    return text.strip()


def output_path(text: str) -> Path:
    """A file or folder this command will write: refused now, before anything is played,
    if it is empty (it would mean the current folder) or a parent of it is a file rather
    than a folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path to write, got ''")
    path = Path(text)
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(
                    f"cannot write {text!r}: {str(parent)!r} is a file, not a folder"
                )
            break
    return path


def output_file(text: str) -> Path:
    """A file this command replaces whole (a report, an SQLite index): :func:`output_path`,
    and not an existing device, FIFO or socket, which the rename would replace
    (:func:`~stategym.kernel.files.not_a_file`), nor a link that cannot be written through
    (a dangling link into a missing folder, a loop:
    :func:`~stategym.kernel.files.written_path`). An existing folder is left to the command,
    which refuses it in its own words (``--out X is a folder``, ``run index X is a folder``)."""
    from stategym.kernel.errors import UsageError
    from stategym.kernel.files import not_a_file, written_path

    path = output_path(text)
    try:
        written_path(path)
    except (UsageError, OSError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    kind = not_a_file(path)
    if kind not in (None, "a folder"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is {kind}, not a regular file, which this command writes; give a file path"
        )
    return path


def _default_file(path: Path, option: str) -> Path:
    """``option``'s default ``path``, checked as :func:`output_file` checks a given one
    (a FIFO there made SQLite fail with ``disk I/O error`` once the run had started).

    Raises:
        UsageError: naming the path and ``option``.
    """
    from stategym.kernel.errors import UsageError

    try:
        return output_file(str(path))
    except argparse.ArgumentTypeError as error:
        raise UsageError(f"{option} (default {path}): {error}") from None


def output_dir(text: str) -> Path:
    """A run folder: :func:`output_path`, and not an existing file (or device, FIFO...)."""
    from stategym.kernel.files import not_a_file

    path = output_path(text)
    kind = not_a_file(path)
    if path.exists() and kind != "a folder":
        raise argparse.ArgumentTypeError(f"{text!r} is {kind or 'a file'}, not a folder")
    return path


def given_path(text: str) -> Path:
    """A path to read (a run directory, a model folder): not the empty string, which would
    mean the current folder without saying so."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got ''")
    return Path(text)


def add_knobs(parser: argparse.ArgumentParser, *, mixed: bool = False) -> None:
    """``--knobs``: one setting (a :class:`Knobs`), or with ``mixed`` also the eval mix (text)."""
    if mixed:
        parser.add_argument(
            "--knobs",
            type=knob_spec,
            default="default",
            help=f"{KNOBS_HELP}, or 'mixed' (seeds cycle through every single-knob-off "
            "setting and all_off) (default: all on)",
        )
    else:
        parser.add_argument(
            "--knobs", type=knobs, default=Knobs(), help=f"{KNOBS_HELP} (default: all on)"
        )


def add_bootstrap_options(parser: argparse.ArgumentParser, *, seed: bool = True) -> None:
    """``--resamples`` (and ``--bootstrap-seed``) for the commands that print intervals."""
    parser.add_argument(
        "--resamples",
        type=positive_int,
        default=1000,
        help="bootstrap resamples for the intervals (default: 1000)",
    )
    if seed:
        parser.add_argument(
            "--bootstrap-seed",
            type=non_negative_int,
            default=0,
            help="seed of the bootstrap generator (default: 0)",
        )


def add_llm_options(parser: argparse.ArgumentParser, *, concurrency: bool = True) -> None:
    """The LLM agents' option group; read it back with :func:`llm_options`."""
    llm = parser.add_argument_group("LLM agents (ignored by scripted agents)")
    llm.add_argument(
        "--base-url",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 "
        "(default: OPENAI_BASE_URL or OpenAI's)",
    )
    llm.add_argument(
        "--temperature",
        type=non_negative_float,
        help="sampling temperature (default: the model's or server's)",
    )
    llm.add_argument(
        "--max-tokens",
        type=positive_int,
        help="completion token limit per round (default: the model's or server's)",
    )
    llm.add_argument(
        "--device",
        help="torch device of a local hf:PATH model, e.g. cuda (default: cpu); "
        "openai:MODEL agents refuse it",
    )
    if concurrency:
        llm.add_argument(
            "--concurrency", type=positive_int, help="episodes in flight at once (default: 8)"
        )


def add_spread_options(parser: argparse.ArgumentParser) -> None:
    """``--workers`` and ``--ray``: where scripted episodes play; read back with
    :func:`spread_of`. Results are the same bytes wherever they play."""
    group = parser.add_argument_group("every core and Ray (scripted agents; same results)")
    group.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="worker processes for scripted agents' episodes; LLM agents play in this "
        "process, --concurrency at a time (default: this machine's cores, at most one per "
        "1000 episodes)",
    )
    group.add_argument(
        "--ray",
        nargs="?",
        const="",
        default=None,
        metavar="ADDRESS",
        help="play scripted agents' episodes as Ray tasks on the cluster at ADDRESS "
        "(alone: RAY_ADDRESS or a new local instance; needs stategym[ray]) (default: no Ray)",
    )


def add_reader_options(parser: argparse.ArgumentParser) -> None:
    """How the simulated user reads the agent's messages; read back with :func:`reader_of`."""
    group = parser.add_argument_group(
        "the simulated user's reading (default: its rules, no LLM; docs/environment.md)"
    )
    group.add_argument(
        "--reader",
        metavar="openai:MODEL",
        help="an LLM behind an OpenAI-compatible endpoint reads the agent's messages for the "
        "user (which slots they ask); every answer is cached (needs stategym[llm])",
    )
    group.add_argument(
        "--reader-base-url",
        help="the reader's endpoint (default: OPENAI_BASE_URL or OpenAI's)",
    )
    group.add_argument(
        "--reader-cache",
        type=output_file,
        help="SQLite file of the reader's answers (default: OUT/readings.sqlite)",
    )
    group.add_argument(
        "--reader-offline",
        action="store_true",
        help="read only from --reader-cache: a message it does not hold stops the run",
    )
    group.add_argument(
        "--reader-rules-break-ties",
        action="store_true",
        help="where the reader finds a message between two facts, the user answers the one its "
        "rules read, if they read one of the two, instead of asking which was meant",
    )


def reader_of(args: argparse.Namespace, out: Path) -> Any:
    """The :class:`~stategym.llm.reading.LLMReading` that ``--reader`` asks for (``None``:
    the rules; with ``--reader-rules-break-ties``, wrapped in
    :class:`~stategym.kernel.understanding.RulesBreakTies`); its endpoint is checked now,
    before anything is played.

    Raises:
        UsageError: not ``openai:MODEL``, the ``llm`` extra missing, the endpoint unreachable.
    """
    from stategym.kernel.errors import UsageError

    spec = getattr(args, "reader", None)
    if spec is None:
        return None
    kind, _, model = spec.partition(":")
    if kind != "openai" or not model:
        raise UsageError(f"--reader takes openai:MODEL, got {spec!r}")
    try:
        from stategym.llm.openai_agent import check_endpoint
        from stategym.llm.reading import LLMReading
    except ImportError as error:
        raise UsageError(f"--reader needs pip install 'stategym[llm]' ({error})") from None
    if not args.reader_offline:
        check_endpoint(model, args.reader_base_url)
    cache = args.reader_cache or _default_file(out / "readings.sqlite", "--reader-cache")
    reading = LLMReading(model, cache, base_url=args.reader_base_url, offline=args.reader_offline)
    if args.reader_rules_break_ties:
        from stategym.kernel.understanding import RulesBreakTies

        return RulesBreakTies(reading)
    return reading


def spread_of(args: argparse.Namespace) -> Any:
    """The :class:`~stategym.rollout.workers.Spread` that ``--workers``/``--ray`` ask for; a
    ``--ray`` that could not be joined is refused here, so a command calls this before it
    creates or changes anything (:func:`stategym.rollout.ray.check_reachable`)."""
    from stategym.rollout.workers import Spread

    address = getattr(args, "ray", None)
    if address is not None:
        from stategym.rollout.ray import check_reachable

        check_reachable(address or None)
    return Spread(getattr(args, "workers", None), address is not None, address or None)


def llm_options(args: argparse.Namespace) -> dict[str, Any]:
    """The LLM options given on the command line (unset ones are left out)."""
    return {k: getattr(args, k) for k in LLM_OPTIONS if getattr(args, k, None) is not None}
