"""Demonstrations for supervised training: who plays, on which tasks, and their tokens.

- Demonstrators: one scripted agent (``expert``, the privileged ``oracle``, a styled agent,
  the guard teacher ``ask-p0.3``) or a weighted mixture ``expert:0.7,oracle:0.3``
  (:func:`parse_mixture`). :func:`assign` gives every task seed one demonstrator: the
  counts follow the weights exactly (largest remainder), and which seeds each gets is a
  shuffle seeded by the run's seed, so a mixture's agents play comparable tasks.
- Episodes: :func:`play_demonstrations` plays them through the rollout engine (one knob
  setting or a schedule per seed, as a :class:`~stategym.train.tasks.TaskFamily` gives);
  :func:`run_demonstrations` reads any run directory's ``trajectories.jsonl``.
- Tokens: :func:`sequences` lays each episode out as the token stream a live policy playing
  it would have made (:func:`stategym.train.streams.demonstration`: the renderer's first
  prompt and observation segments, cut from the chat template, so the observation ids equal
  a live ``hf:`` agent's), with loss on the assistant turns only.
- Tokenizer: :func:`train_tokenizer` trains the tiny model's byte-level BPE
  (:func:`stategym.llm.tiny.train_tokenizer`) on the episodes rendered both ways, so one
  tokenizer serves the ``messages`` and the ``compact`` rendering.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.rendering import RENDERINGS, make_renderer
from stategym.rendering.tokens import ChatTemplate

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

    from stategym.llm.local import ChatTokenizer
    from stategym.rollout.spec import KnobSchedule
    from stategym.train.batching import Sample
    from stategym.train.policy import Chat

Mixture = tuple[tuple[str, float], ...]
"""``(agent, weight)`` pairs, in the order written."""
Demonstration = tuple[Trajectory, Task]
"""A played or logged episode and its task."""


def parse_mixture(spec: str) -> Mixture:
    """``NAME[:WEIGHT],...`` as ``(name, weight)`` pairs (a missing weight is 1).

    >>> parse_mixture("expert:0.7,oracle:0.3")
    (('expert', 0.7), ('oracle', 0.3))

    Raises:
        ValueError: an empty name, a weight that is not a number or is negative, no positive
            weight, or a name given twice.
    """
    pairs: list[tuple[str, float]] = []
    for item in spec.split(","):
        name, sep, weight = item.strip().rpartition(":")
        if not sep:
            name, weight = weight, ""
        try:
            value = float(weight) if weight else 1.0
        except ValueError:
            raise ValueError(f"bad weight in {item!r}; use NAME[:WEIGHT],...") from None
        if not name or value < 0 or not math.isfinite(value):
            raise ValueError(f"bad demonstrator {item!r}; use NAME[:WEIGHT],...")
        pairs.append((name.strip(), value))
    if sum(w for _, w in pairs) <= 0:
        raise ValueError(f"no positive weight in {spec!r}")
    if len({n for n, _ in pairs}) != len(pairs):
        raise ValueError(f"a demonstrator is named twice in {spec!r}")
    return tuple(pairs)


def counts(mixture: Mixture, episodes: int) -> tuple[int, ...]:
    """Episodes per agent, proportional to the weights (largest remainder, ties to the
    earlier agent), summing to ``episodes``.

    >>> counts((("expert", 0.7), ("oracle", 0.3)), 8)
    (6, 2)
    """
    total = sum(w for _, w in mixture)
    exact = [episodes * w / total for _, w in mixture]
    out = [int(x) for x in exact]
    order = sorted(range(len(mixture)), key=lambda i: (-(exact[i] - out[i]), i))
    for i in order[: episodes - sum(out)]:
        out[i] += 1
    return tuple(out)


def assign(mixture: Mixture, seeds: Sequence[int], seed: int = 0) -> list[tuple[int, str]]:
    """Each task seed's demonstrator: exact counts, seeds dealt by a shuffle seeded by ``seed``.

    The same arguments always give the same assignment; a pure mixture gives every seed
    its one agent.
    """
    agents = [
        name
        for (name, _), n in zip(mixture, counts(mixture, len(seeds)), strict=True)
        for _ in range(n)
    ]
    random.Random(f"stategym.train.data:{seed}").shuffle(agents)
    return list(zip(seeds, agents, strict=True))


def play_demonstrations(
    domain: str,
    agents: str | Mixture,
    seeds: Sequence[int],
    knobs: KnobSchedule = None,
    *,
    seed: int = 0,
) -> list[Demonstration]:
    """Play the demonstrators on ``seeds`` (in seed order) through the rollout engine.

    Args:
        domain: domain name or ``synth:<spec>``.
        agents: a mixture, as text (:func:`parse_mixture`) or parsed.
        seeds: task seeds, one episode each.
        knobs: one setting, or each seed's (a family's schedule:
            :func:`~stategym.rollout.spec.knobs_for`); default all on.
        seed: seeds the assignment of demonstrators to task seeds.
    """
    from stategym.rollout import Agents, EpisodeSpec, play_in_order, spec_task
    from stategym.rollout.spec import knobs_for

    mixture = parse_mixture(agents) if isinstance(agents, str) else agents
    setting = knobs_for(knobs)
    specs = [
        EpisodeSpec(domain, task_seed, name, setting(task_seed))
        for task_seed, name in assign(mixture, seeds, seed)
    ]
    return [(t, spec_task(spec)) for spec, t in play_in_order(specs, Agents())]


def run_demonstrations(run: Path) -> list[Demonstration]:
    """A run directory's logged episodes (``RUN/trajectories.jsonl``) with their tasks.

    The log is only read, never rewritten (it is another run's, perhaps still being
    appended to): a cut last line is left in place and skipped, with a warning on stderr.

    Each episode is paired with the task it was played on
    (:func:`~stategym.kernel.trajectory.task_of`: a probe's flipped task; an episode played on
    a task given to ``Env.reset`` is refused, as ``score`` refuses it, since no log can
    regenerate that task: it was learned against the seed's task, audit 16D F4).

    Raises:
        UsageError: no log in ``run``, an unreadable line, a duplicated episode, or an
            episode played on a given task.
    """
    import sys

    from stategym.kernel.errors import TrajectoryError, UsageError
    from stategym.kernel.trajectory import GIVEN_TASK, task_of
    from stategym.rollout import read_log, refuse_duplicates

    path = Path(run) / "trajectories.jsonl"
    if not path.exists():  # a FIFO or a folder is refused by read_log, as what it is
        raise UsageError(f"no trajectories.jsonl in {run} to learn from")
    log = read_log(path)
    refuse_duplicates(path, log.trajectories)
    if log.cut_line is not None:
        print(f"warning: ignored {path}:{log.cut_line}, a cut last line", file=sys.stderr)
    demonstrations: list[Demonstration] = []
    for number, trajectory in enumerate(log.trajectories, start=1):
        try:
            demonstrations.append((trajectory, task_of(trajectory)))
        except TrajectoryError as error:
            if trajectory.meta.get("task") != GIVEN_TASK:
                raise UsageError(f"{path}: episode {number}: {error}") from None
            raise UsageError(
                f"{path}: episode {number} ({trajectory.domain}, seed {trajectory.seed}) played "
                "a task given to Env.reset, which no log can regenerate, so it cannot be "
                "learned from; learn from a log without it"
            ) from None
    return demonstrations


def sequences(
    demonstrations: Iterable[Demonstration],
    chat: ChatTemplate | ChatTokenizer,
    rendering: str,
    max_length: int | None = None,
) -> list[Sample]:
    """Training samples: each episode's token stream, loss on its assistant tokens only.

    Args:
        demonstrations: the episodes.
        chat: the policy's chat template and tokenizer.
        rendering: ``messages`` or ``compact``.
        max_length: cut each stream to this many tokens.
    """
    from stategym.train.streams import demonstration, to_sample

    return [
        to_sample(demonstration(t, task, chat, rendering), max_length=max_length)
        for t, task in demonstrations
    ]


def tokenizer_chats(
    demonstrations: Iterable[Demonstration], renderings: Sequence[str] = RENDERINGS
) -> list[Chat]:
    """Every episode as a conversation in each rendering (system prompt first)."""
    from stategym.registry import get_domain
    from stategym.train.streams import episode_chat

    chats = []
    for t, task in demonstrations:
        for kind in renderings:
            renderer = make_renderer(get_domain(t.domain), t.knobs, kind)
            chats.append(episode_chat(t, task, renderer))
    return chats


def train_tokenizer(
    demonstrations: Iterable[Demonstration], vocab_size: int = 1024
) -> PreTrainedTokenizerFast:
    """The tiny model's tokenizer, trained on the episodes in both renderings.

    Deterministic: the same episodes and size give the same vocabulary and merges
    (``tokenizers`` trains BPE without randomness).
    """
    from stategym.llm.tiny import train_tokenizer as train_bpe

    return train_bpe(tokenizer_chats(demonstrations), vocab_size)


__all__ = [
    "Demonstration",
    "Mixture",
    "assign",
    "counts",
    "parse_mixture",
    "play_demonstrations",
    "run_demonstrations",
    "sequences",
    "tokenizer_chats",
    "train_tokenizer",
]
