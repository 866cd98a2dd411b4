"""What a training run writes: its config, one JSON line per iteration, a progress bar.

``RUN/config.json`` is the config the run was started with; re-running the command with
the same settings resumes the run (a different setting is refused, except ``iterations``,
which may grow, and ``progress``; ``out`` is where the run is, not a setting, so a moved or
copied run resumes). ``RUN/metrics.jsonl`` holds one object per iteration (``"iteration"``
first; ``"eval"`` lines for held-out evaluations); on resume the lines after the
checkpoint's iteration are dropped, so the file ends as an uninterrupted run's, and the
lines before it must all be there (:func:`resumed_metrics`): a file deleted, emptied or cut
short since the checkpoint is refused, naming the lines it lacks, never continued with its
history lost. It is read strictly (:func:`read_metrics`, also the report's reader): only a
cut last line, what an interrupted append leaves, is dropped; any other unreadable line is
an error naming ``FILE:LINE``, never a reason to cut the file short. Both files are
rewritten atomically (a temporary file renamed over them, never over a folder, a device or
a FIFO, and over a link as a name, never through it: :func:`stategym.kernel.files.replace_bytes`),
and every line is strict JSON: a number that is not finite is written ``null`` (an ask rate
with no must-ask slot to count); older files' ``NaN`` still read. A fresh run that fails
before its first checkpoint removes what it wrote (:func:`holding`); one that holds
training output but no checkpoint is not started again over it (:func:`refuse_restart`).
Every file of the run is read only as a regular file
(:func:`~stategym.kernel.files.read_regular`): a FIFO or a folder in a file's place is
refused in one line naming it, never waited on.

:func:`episode_metrics` is the decision-quality summary of a set of scorecards, the same
numbers ``stategym eval`` aggregates (:func:`stategym.metrics.aggregate.row` means) plus the
trainer's rates: goal rate, R and each dimension, the ask rate on must-ask slots, rounds
against the critical path, the parallel-call rate, harm rate, money lost and the
lucky-success rate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from stategym.kernel.errors import UsageError
from stategym.kernel.files import (
    NotJSON,
    json_value,
    read_regular,
    refuse_non_files,
    remove_entry,
    replace_bytes,
)
from stategym.kernel.task import Task
from stategym.kernel.trajectory import RoundKind, Trajectory
from stategym.metrics.gold import gold_of
from stategym.metrics.litmus import litmus
from stategym.metrics.score import Scorecard
from stategym.train.config import Config, to_json

CONFIG = "config.json"
METRICS = "metrics.jsonl"
MUTABLE = frozenset({"iterations", "progress"})
"""Settings a resumed run may change."""
LOCATION = "out"
"""Where the run is: saved with the settings but never compared (a moved run resumes)."""


def open_run(config: Config) -> Path:
    """Create the run directory, or check that it was started with the same settings.

    Raises:
        UsageError: ``config.json`` holds other settings, or cannot be read; it,
            ``metrics.jsonl`` or ``start.json`` is there but is not a regular file (a
            folder, a FIFO...: :func:`~stategym.kernel.files.refuse_non_file`).
    """
    from stategym.train.start import START

    run = Path(config.out)
    path = run / CONFIG
    refuse_non_files(run, (CONFIG, METRICS, START))  # a FIFO would block, a rename replace
    if path.exists():
        old = read_object(path, "the run's settings")
        if old.get("kind") not in ("sft", "grpo") and not _trained(run):
            raise UsageError(
                f"{run} is not a training run directory (its {CONFIG} holds no run's "
                "settings: a model folder?); use another --out"
            )
        new = json.loads(to_json(config))
        ignored = MUTABLE | {LOCATION}
        if "tiny" not in (old.get("init"), new.get("init")):
            # a start model's path: its spelling may differ (relative, moved); a resume
            # checks what it holds (stategym.train.checkpoint.load_start)
            ignored |= {"init"}
        changed = sorted(
            k
            for k in set(old) | set(new)
            if k not in ignored and _compared(k, old.get(k)) != _compared(k, new.get(k))
        )
        if changed:
            shown = "; ".join(
                f"{k} {_shown(old.get(k))} there, {_shown(new.get(k))} now" for k in changed
            )
            hint = (
                f"; --rendering left out is the start model's: give --rendering "
                f"{old['rendering']} to resume"
                if "rendering" in changed and isinstance(old.get("rendering"), str)
                else ""
            )
            raise UsageError(
                f"{run} was started with other settings ({', '.join(changed)}): {shown}; "
                f"use another --out or the same settings to resume{hint}"
            )
    run.mkdir(parents=True, exist_ok=True)
    replace_text(path, to_json(config))
    return run


def _compared(key: str, value: object) -> object:
    """A setting as a resume compares it: knobs by what they switch, not by how they were
    spelt ("default", "dynamics=off", or the long text a ``Knobs`` object is kept as), so a
    run started from Python resumes from the command line."""
    if key != "knobs" or not isinstance(value, str):
        return value
    from stategym.kernel.knobs import Knobs

    try:
        return Knobs.parse(value)
    except ValueError:
        return value


def _shown(value: object) -> str:
    """A setting's value in a refusal: its JSON, cut to 40 characters."""
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _trained(run: Path) -> bool:
    """``run`` holds what a run writes besides its settings (metrics or checkpoints)."""
    from stategym.train.checkpoint import CHECKPOINTS

    return (run / METRICS).exists() or (run / CHECKPOINTS).exists()


@contextmanager
def holding(config: Config) -> Iterator[Path]:
    """The run directory ``config.out``, held (:func:`stategym.kernel.locks.locked`) while the
    block trains it: a second trainer on it stops at once with a one-line error.

    A run started here that fails in any way (refused, a loader's or a library's error,
    interrupted) before its first checkpoint leaves the folder as it found it: what it wrote
    (:func:`_unwrite`) is removed, and the directory if this call made it, so the corrected
    command can start it there (a kill, which no cleanup follows, is
    :func:`refuse_restart`'s case).
    """
    from stategym.kernel.locks import locked

    run = Path(config.out)
    made = not run.exists()
    try:
        with locked(run):
            found = {name for name in _written() if (run / name).exists()}
            try:
                yield run
            except BaseException:
                _unwrite(run, found)
                raise
    except BaseException:
        if made:
            with suppress(OSError):  # not empty: something the run wrote is kept
                run.rmdir()
        raise


def _written() -> tuple[str, ...]:
    """What a run writes before its first checkpoint: its settings, its metrics, its start
    record and the checkpoints folder (an interrupted first save's ``.partial``)."""
    from stategym.train.checkpoint import CHECKPOINTS
    from stategym.train.start import START

    return (CONFIG, METRICS, START, CHECKPOINTS)


def _unwrite(run: Path, found: set[str]) -> None:
    """After a failure, remove what the run wrote that was not there before (``found``),
    unless it saved a checkpoint (then it resumes)."""
    from stategym.train.checkpoint import latest

    try:
        saved = latest(run) is not None
    except UsageError:  # checkpoints/ or its last entry no folder: refused before training
        saved = False
    if saved:
        return
    for name in _written():
        (run / f"{name}.partial").unlink(missing_ok=True)  # an interrupted rewrite's
        if name not in found:
            with suppress(OSError):  # removed as a name: never opened, never followed
                remove_entry(run / name)


def refuse_restart(run: Path, config: Config) -> None:
    """Refuse to start ``run`` afresh over what a run that got past its first checkpoint
    wrote: its final ``model/``, or metric lines after the first checkpoint's iteration
    (its checkpoints deleted). Lines up to that iteration are what a run stopped before its
    first checkpoint leaves (a kill no cleanup runs after): starting afresh loses nothing.

    Raises:
        UsageError: naming what the run holds.
    """
    from stategym.train.checkpoint import CHECKPOINTS
    from stategym.train.start import FINAL

    first = min(config.save_every, config.iterations)
    held = [f"{FINAL}/"] if (run / FINAL).exists() else []
    last = max((m["iteration"] for m in read_metrics(run)), default=0)
    if last > first:
        held.append(f"{METRICS} up to iteration {last}")
    if held:
        raise UsageError(
            f"{run} holds {' and '.join(held)} but no checkpoint to resume from (its "
            f"{CHECKPOINTS}/ deleted?); use another --out, or delete {run} to train it again"
        )


@contextmanager
def at_iteration(iteration: int) -> Iterator[None]:
    """Name the iteration in a :class:`~stategym.llm.engine.NonFiniteLogits` raised inside:
    the policy diverged there (its logits overflowed while its weights stayed finite)."""
    from stategym.llm.engine import NonFiniteLogits

    try:
        yield
    except NonFiniteLogits as error:
        raise NonFiniteLogits(f"iteration {iteration}: {error}") from None


def require_finite(iteration: int, loss: float, model: Any = None) -> None:
    """Stop a run whose loss (or, given ``model``, a weight) is not finite, before it is
    logged or saved: a checkpoint of NaN weights would only spread the damage.

    Raises:
        UsageError: naming the iteration.
    """
    import math

    bad = not math.isfinite(loss)
    if not bad and model is not None:
        import torch

        checks = [torch.isfinite(p).all() for p in model.parameters()]
        bad = bool(checks) and not bool(torch.stack(checks).all())
    if bad:
        what = f"the loss is {loss}" if not math.isfinite(loss) else "the weights are not finite"
        raise UsageError(
            f"iteration {iteration}: {what}; the run stopped before saving it (try a smaller "
            "--lr, or other loss coefficients)"
        )


def read_object(path: Path, what: str) -> dict[str, Any]:
    """A JSON object read from ``path`` (:func:`~stategym.kernel.files.json_value`).

    Raises:
        UsageError: ``FILE: why`` when the file is not valid UTF-8 JSON holding an object
            (nesting too deep and huge integers included), or is not a regular file (a
            FIFO, a folder: :class:`~stategym.kernel.files.NotAFile`, never a hang).
    """
    try:
        data = json_value(read_regular(path))
    except NotJSON as error:
        where = f"line {error.line}: " if error.line is not None else ""
        raise UsageError(f"{path}: unreadable ({where}{error}); it should hold {what}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: holds a {type(data).__name__}, not {what}")
    return data


def replace_text(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (an interruption leaves the old file)."""
    replace_bytes(path, text.encode())


def read_metrics(run: Path) -> list[dict[str, Any]]:
    """The run's metric lines, read strictly except for a cut last line.

    A last line that does not end in a newline and cannot be read is what an interrupted
    append leaves: it is dropped. Any other unreadable line, or a line that is not an object
    with an integer ``"iteration"``, is damage, and cutting the file there would lose the
    lines after it.

    Raises:
        UsageError: ``FILE:LINE: why`` for such a line; the file is not a regular file (a
            FIFO, a folder: :class:`~stategym.kernel.files.NotAFile`, never a hang).
    """
    path = run / METRICS
    if not path.exists():
        return []
    data = read_regular(path)
    lines = data.split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    out = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            out.append(metrics_line(line))
        except ValueError as error:
            if index == last and not data.endswith(b"\n"):
                break
            raise UsageError(f"{path}:{index + 1}: {error}") from None
    return out


def metrics_line(line: bytes) -> dict[str, Any]:
    """One line of ``metrics.jsonl`` (a ``ValueError`` says why it is not one: every way
    the parse fails is one, :func:`~stategym.kernel.files.json_value`)."""
    value = json_value(line)
    if not isinstance(value, dict):
        raise ValueError(f"a {type(value).__name__}, not a metrics object")
    iteration = value.get("iteration")
    if not isinstance(iteration, int) or isinstance(iteration, bool) or iteration < 0:
        raise ValueError(f'"iteration" is {iteration!r}, not an iteration number')
    return value


def truncate_metrics(run: Path, iteration: int, eval_every: int = 0) -> None:
    """Cut ``metrics.jsonl`` back to the checkpoint after ``iteration``
    (:func:`resumed_metrics`; starting afresh, ``iteration`` 0, keeps nothing)."""
    kept = resumed_metrics(run, iteration, eval_every)
    replace_text(run / METRICS, "".join(metrics_text(m) for m in kept))


def resumed_metrics(run: Path, iteration: int, eval_every: int = 0) -> list[dict[str, Any]]:
    """The lines a resume from the checkpoint after ``iteration`` keeps: those of iterations
    ``<= iteration`` (what the checkpoint covers, its evaluation included: a checkpoint is
    saved after it), less the end-of-run evaluation of a shorter run (an uninterrupted run
    has none there). Starting afresh (``iteration`` 0) keeps nothing, so the old file is not
    read at all.

    Every kept line must be there: a training line for each iteration ``1..iteration`` and
    an evaluation line at each multiple of ``eval_every`` up to it, all written before the
    checkpoint was saved. A file deleted, emptied or cut short since would otherwise be
    continued silently, and the run's history before the checkpoint lost for good.

    Raises:
        UsageError: a damaged line (:func:`read_metrics`), or lines the checkpoint covers
            that are missing (naming them and what to do).
    """
    if not iteration:
        return []
    kept = [
        m
        for m in read_metrics(run)
        if m["iteration"] < iteration
        or (m["iteration"] == iteration and "eval" not in m)
        or ("eval" in m and eval_every and m["iteration"] % eval_every == 0)
    ]
    kept = [m for m in kept if m["iteration"] <= iteration]
    missing = _missing_lines(kept, iteration, eval_every)
    if missing:
        from stategym.train.checkpoint import folder_of

        state = "is missing" if not (run / METRICS).exists() else f"has no line of {missing}"
        raise UsageError(
            f"{run / METRICS} {state}, which the checkpoint {folder_of(run, iteration)} covers "
            "(the file deleted, emptied or cut short since?): resuming would lose the run's "
            "history up to it; restore the file, or start the run again in another --out"
        )
    return kept


def _missing_lines(kept: Sequence[Mapping[str, Any]], iteration: int, eval_every: int) -> str:
    """Which of the lines a checkpoint after ``iteration`` covers are not in ``kept``, in
    words (``iterations 1-3 and the evaluation at iteration 2``); empty when none is."""
    trained = {m["iteration"] for m in kept if "eval" not in m}
    evaluated = {m["iteration"] for m in kept if "eval" in m}
    lost = [i for i in range(1, iteration + 1) if i not in trained]
    every = range(eval_every, iteration + 1, eval_every) if eval_every else range(0)
    lost_evals = [i for i in every if i not in evaluated]
    parts = []
    if lost:
        parts.append(f"iteration{'s' if len(lost) > 1 else ''} {_spans(lost)}")
    if lost_evals:
        many = "s" if len(lost_evals) > 1 else ""
        parts.append(f"the evaluation{many} at iteration{many} {_spans(lost_evals)}")
    return " and ".join(parts)


def _spans(numbers: Sequence[int]) -> str:
    """Sorted numbers as runs, ``1-3, 5``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def append_metrics(run: Path, line: Mapping[str, Any]) -> None:
    """Append one line to ``metrics.jsonl``."""
    with (run / METRICS).open("a") as handle:
        handle.write(metrics_text(line))


def metrics_text(line: Mapping[str, Any]) -> str:
    """One line of ``metrics.jsonl``, strict JSON: a number that is not finite (an old
    file's NaN ask rate, rewritten on resume) is written ``null``, as a rate with nothing to
    count is."""
    return json.dumps(_finite(dict(line)), sort_keys=True, allow_nan=False) + "\n"


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth, replaced by ``None``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def episode_metrics(
    cards: Sequence[Scorecard], trajectories: Sequence[Trajectory], tasks: Sequence[Task]
) -> dict[str, float | None]:
    """The decision-quality summary of some episodes (module docstring), all means; the
    ask rate is ``None`` (``null`` in ``metrics.jsonl``) when the episodes had no must-ask
    slot to count."""
    if not cards:
        return {}
    n = len(cards)
    rows = [c.row() for c in cards]
    out: dict[str, float | None] = {key: sum(r[key] for r in rows) / n for key in rows[0]}
    out["goal_rate"] = out.pop("success")
    out["harm_rate"] = out.pop("harmful")
    asked = sum(c.clarification.tp for c in cards)
    must = sum(c.clarification.tp + c.clarification.fn for c in cards)
    out["ask_rate"] = asked / must if must else None
    out["critical_path"] = sum(gold_of(t).depth for t in tasks) / n
    tool_rounds = [r for t in trajectories for r in t.rounds if r.kind is RoundKind.CALLS]
    parallel = sum(len([c for c in r.calls if c.name != "finish"]) > 1 for r in tool_rounds)
    out["parallel_rate"] = parallel / len(tool_rounds) if tool_rounds else 0.0
    out["lucky_rate"] = litmus(cards).lucky_success_rate
    out["format_errors"] = sum(len(r.format_errors) for t in trajectories for r in t.rounds) / n
    return {k: None if v is None else round(v, 6) for k, v in sorted(out.items())}


@contextmanager
def progress_bar(total: int, done: int, enabled: bool, label: str) -> Iterator[Any]:
    """A rich progress bar on stderr; yields ``advance(text)`` (a no-op when disabled)."""
    if not enabled:
        yield lambda text="": None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),
        transient=False,
    ) as progress:
        task = progress.add_task("", total=total, completed=done)

        def advance(text: str = "") -> None:
            progress.update(task, advance=1, description=text)

        yield advance


__all__ = [
    "CONFIG",
    "METRICS",
    "append_metrics",
    "episode_metrics",
    "holding",
    "open_run",
    "progress_bar",
    "read_metrics",
    "refuse_restart",
    "require_finite",
    "resumed_metrics",
    "truncate_metrics",
]
