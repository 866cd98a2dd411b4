"""The report page: run directories in, one self-contained HTML document out.

:func:`build` reads the runs (:mod:`.runs`), scores each trajectory offline from its log and
its regenerated task (nothing is played again), and lays out the page: the overview
scorecard and its plots, training curves, protocol plots, experiment tables and plots
(:mod:`.experiment`) and the trajectory viewer. The same
inputs and options give the same bytes (no timestamp, no random ids).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from stategym.kernel.errors import TrajectoryError
from stategym.kernel.files import replace_bytes
from stategym.kernel.trajectory import task_of
from stategym.metrics.aggregate import Row, table
from stategym.metrics.credit import credit
from stategym.metrics.report import litmus_grid, scorecard_grid
from stategym.metrics.score import Scorecard, score
from stategym.tables import Grid, signed

from . import experiment, markup, plots
from .assets import SCRIPT, STYLE
from .episodes import detail, index_entry, task_view
from .runs import EpisodeRun, ExperimentRun, ProtocolRun, Run, TrainingRun, read_runs, refuse_output

DEFAULT_VIEWER_LIMIT = 100


@dataclass(frozen=True, slots=True)
class Options:
    """How the report is built.

    Attributes:
        title: the page title.
        viewer_limit: episodes embedded in the viewer per (run, domain, agent), the first
            ones in file order; 0 embeds every episode. The scorecard always uses all.
        resamples: bootstrap resamples of the intervals.
        seed: seed of the bootstrap generator.
        version: the stategym version shown in the header (the command passes its own;
            the report layer does not import the package root).
        verify: replay every episode first and refuse a log that differs from its replay
            (:func:`stategym.rollout.refuse_unverified`).
    """

    title: str = "stategym report"
    viewer_limit: int = DEFAULT_VIEWER_LIMIT
    resamples: int = 1000
    seed: int = 0
    version: str = ""
    verify: bool = False


@dataclass(frozen=True, slots=True)
class _Scored:
    run: EpisodeRun
    cards: tuple[Scorecard, ...]


def _score(run: EpisodeRun) -> _Scored:
    try:
        return _Scored(run, tuple(score(t, task_of(t)) for t in run.trajectories))
    except TrajectoryError as error:  # a log that is not of its task (edited, relabelled)
        raise TrajectoryError(f"cannot score {run.path}: {error}") from None


def _overview(scored: Sequence[_Scored], options: Options) -> tuple[str, list[Row]]:
    cards = [card for s in scored for card in s.cards]
    if not cards:
        return "", []
    rows = table(cards, resamples=options.resamples, seed=options.seed)
    parts = [
        markup.table(scorecard_grid(rows), numeric_from=3),
        markup.table(litmus_grid(cards, rows)),
        markup.figure(
            plots.dimension_bars(rows),
            "Goal rate, R, each decision-quality dimension and the harm rate per agent, "
            "with 95% bootstrap intervals (tasks resampled).",
        ),
        markup.figure(
            plots.goal_against_r(rows),
            "Goal rate against R per agent and domain: above the diagonal, the final answer "
            "flatters the agent (its height above it is the hacking gap).",
        ),
        markup.figure(plots.harm_and_lost(rows), "Harm rate and money lost per episode."),
    ]
    return markup.section("overview", "Overview", parts), rows


def _training(run: TrainingRun, key: str) -> str:
    shown = {k: v for k, v in run.config.items() if isinstance(v, str | int | float | bool)}
    parts = [markup.definition_list(sorted(shown.items()))]
    name = run.path.name
    decisions = plots.decision_curves(run.train, run.eval, f"{name}: per iteration", key)
    if decisions is not None:
        parts.append(
            markup.figure(
                decisions,
                "Goal rate, R, each decision-quality dimension, ask rate, parallel rate, harm "
                "rate, entropy, KL and loss against the iteration: the training batch (solid) "
                "and the held-out evaluation (dashed), where metrics.jsonl has them.",
            )
        )
    others = plots.training_curves(run.train, run.eval, f"{name}: every other key", f"{key}-other")
    if others is not None:
        parts.append(
            markup.figure(others, "Every other numeric key of metrics.jsonl against the iteration.")
        )
    if not run.train and not run.eval:
        parts.append('<p class="notes">metrics.jsonl has no lines yet.</p>')
    return markup.section(f"training-{name}", f"Training: {run.path}", parts)


def _protocol(run: ProtocolRun, key: str) -> str:
    rows = []
    for agent, report in run.reports.items():
        index = plots.collapse_index(report)
        fits = report.get("score_vs_distance")
        fit = fits.get(str(plots.min_shots(report))) if isinstance(fits, Mapping) else None
        svd = fit if isinstance(fit, Mapping) else {}
        rows.append(
            (
                agent,
                "-" if index is None else f"{index:.3f}",
                signed(svd.get("slope")),
                signed(svd.get("spearman")),
            )
        )
    grid = Grid(
        "Collapse and score against distance",
        ("agent", "collapse index", "slope of R vs distance", "spearman"),
        tuple(rows),
        1,
    )
    parts = [
        markup.table(grid),
        markup.figure(
            plots.score_against_distance(run.reports, key),
            "R per protocol cell against its topology distance from the training topologies.",
        ),
    ]
    return markup.section(f"protocol-{run.path.name}", f"Protocol: {run.path}", parts)


def _viewer(scored: Sequence[_Scored], options: Options) -> tuple[str, list[str]]:
    entries: list[dict[str, object]] = []
    blocks: list[str] = []
    tasks: dict[str, str] = {}  # task id -> its block's id
    for s in scored:
        taken: dict[tuple[str, str], int] = {}
        for trajectory, card in zip(s.run.trajectories, s.cards, strict=True):
            group = (trajectory.domain, trajectory.agent)
            if options.viewer_limit and taken.get(group, 0) >= options.viewer_limit:
                continue
            taken[group] = taken.get(group, 0) + 1
            number = len(entries)
            task = task_of(trajectory)
            if card.task_id not in tasks:
                tasks[card.task_id] = f"task-{len(tasks)}"
                blocks.append(markup.json_script(tasks[card.task_id], task_view(task)))
            entries.append(index_entry(number, trajectory, card))
            paid = credit(trajectory, task, card)
            data = detail(trajectory, task, card, paid, tasks[card.task_id])
            blocks.append(markup.json_script(f"ep-{number}", data))
    total = sum(len(s.cards) for s in scored)
    note = (
        f"{len(entries)} of {total} episodes embedded"
        + (
            f" (the first {options.viewer_limit} per run, domain and agent)"
            if total > len(entries)
            else ""
        )
        + "; click one to open it."
    )
    return _viewer_html(note), [markup.json_script("episode-index", entries), *blocks]


def _viewer_html(note: str) -> str:
    selects = "".join(
        f'<label>{name}<select id="f-{name}"><option value="">all</option>{extra}</select></label>'
        for name, extra in (
            ("agent", ""),
            ("domain", ""),
            ("knobs", ""),
            ("goal", '<option value="true">reached</option><option value="false">missed</option>'),
            ("risk", ""),
        )
    )
    ranges = (
        '<label>R from<input id="f-rmin" type="number" step="0.05" min="-1" max="1"></label>'
        '<label>R to<input id="f-rmax" type="number" step="0.05" min="-1" max="1"></label>'
    )
    heads = "".join(
        f"<th>{h}</th>"
        for h in (
            "#",
            "domain",
            "agent",
            "seed",
            "sample",
            "knobs",
            "goal",
            "R",
            "risk",
            "rounds",
            "lost",
        )
    )
    return markup.section(
        "episodes",
        "Episodes",
        [
            f"<p>{markup.text(note)}</p>",
            f'<div id="filters">{selects}{ranges}</div>',
            '<div id="pager"><button id="prev" type="button">previous</button>'
            '<button id="next" type="button">next</button><span id="page-info"></span></div>',
            f'<div id="list"><table><thead><tr>{heads}</tr></thead>'
            '<tbody id="list-body"></tbody></table></div>',
            '<div id="detail"></div>',
        ],
    )


def build(paths: Sequence[Path], options: Options = Options()) -> str:
    """The report of the run directories ``paths`` as one HTML document (a directory given
    twice, or an episode in two of them, is refused: see :func:`~.runs.read_runs`)."""
    runs: list[Run] = read_runs(paths, verify=options.verify)
    episode_runs = [r for r in runs if isinstance(r, EpisodeRun)]
    protocol_runs = [r for r in runs if isinstance(r, ProtocolRun)]
    scored = [_score(r) for r in episode_runs]
    overview, _ = _overview(scored, options)
    sections = [overview]
    trainings = [r for r in runs if isinstance(r, TrainingRun)]
    sections += [_training(r, f"curves{i}") for i, r in enumerate(trainings)]
    sections += [_protocol(r, f"protocol{i}") for i, r in enumerate(protocol_runs)]
    experiments = [r for r in runs if isinstance(r, ExperimentRun)]
    sections += [experiment.section(r, f"experiment{i}") for i, r in enumerate(experiments)]
    protocol_scored = [_score(e) for r in protocol_runs for e in r.episodes]
    viewer, data = _viewer([*scored, *protocol_scored], options)
    sections.append(viewer)
    protocol_episodes = [e for p in protocol_runs for e in p.episodes]
    read: list[EpisodeRun | ExperimentRun] = [*episode_runs, *protocol_episodes, *experiments]
    notes = [note for run in read for note in run.notes]
    return _document(options, paths, notes, sections, data)


def _document(
    options: Options,
    paths: Sequence[Path],
    notes: Sequence[str],
    sections: Sequence[str],
    data: Sequence[str],
) -> str:
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src {markup.csp_hash(SCRIPT)}"
    )
    anchors = re.findall(r'<section id="([^"]+)"><h2>([^<]+)</h2>', "".join(sections))
    nav = "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in anchors)
    runs = ", ".join(markup.text(p) for p in paths)
    title = options.title
    version = f" · stategym {markup.text(options.version)}" if options.version else ""
    warn = "".join(f'<p class="notes">{markup.text(n)}</p>' for n in notes)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{markup.text(title)}</title><style>{STYLE}</style></head>\n<body>"
        f"<header><h1>{markup.text(title)}</h1><p>runs: {runs}{version}</p>"
        f"<nav>{nav}</nav>{warn}</header>\n<main>"
        + "\n".join(s for s in sections if s)
        + "</main>\n"
        + "\n".join(data)
        + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def write(
    paths: Sequence[Path], out: Path, options: Options = Options(), *, through_link: bool = False
) -> Path:
    """Write the report of ``paths`` to ``out`` (its folder is created); returns ``out``.

    ``out`` is checked before anything is read (:func:`~.runs.refuse_output`: never a file
    of a run or any file but an earlier report) and replaced whole
    (:func:`~stategym.kernel.files.replace_bytes`): an interrupted report leaves the old one.
    A link at ``out`` is replaced as a name, or with ``through_link`` (``report --out``, a
    path the user named) written through, the file it names replaced and the link kept.
    """
    refuse_output(out, paths, through_link=through_link)
    page = build(paths, options)
    out.parent.mkdir(parents=True, exist_ok=True)
    return replace_bytes(out, page.encode("utf-8"), through_link=through_link)
