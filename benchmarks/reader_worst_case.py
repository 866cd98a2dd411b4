"""How long the simulated user takes to read the worst messages an agent can send.

Usage::

    python benchmarks/reader_worst_case.py            # every shape at the size cap (a few CPU-min)
    python benchmarks/reader_worst_case.py --quick    # fewer shapes, a quarter of the cap

The user reads a message with regular expressions (``stategym.kernel.understanding``,
``stategym.kernel.proposals``), and a rule that lets whitespace or a mark match in two places
next to each other backtracks over every way of sharing a run between them: before the runs
were made short where a message comes in (``understanding.spacing.compact``), one message of
16,000 spaces took a minute, and a run inside a sentence that weighs wishes about half an
hour (audit 7a). This screens for that class: every pair of pieces below repeated up to the
size cap (``MAX_TEXT``), inside each template (alone, inside a question, inside a sentence
that weighs wishes, after a proposal, after a report; and as the ``finish`` answer, which the
metric reads as the last report), one step each on a fresh travel episode, then
``metrics.score`` of it (the false-report rule reads reports and denials: a 16 KB word in a
denial reader took 5.8 s to score, audit 19B F7). It prints the slowest shapes and the ratio
of the slowest to an ordinary question.

One process, one core; time is this process's CPU time. A shape is timed once by default
(``--repeat`` for the median of more: the screen is for shapes thousands of times too slow,
not for a few per cent); the ordinary question is the
median of 50 steps, each a new text (the reader caches what it read).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time

from stategym import CallBatch, Env, Say, ToolCall
from stategym.kernel.boundary import MAX_TEXT
from stategym.metrics import score

PIECES = (
    *(" ", "\t", "\n", "\u3000", "*", "_", "-", "\u2013", "\u2014", ".", ",", ";", ":"),
    *("?", "!", "(", ")", "|", "#", '"', "'", "a", "1", "AQ449", "and ", "also, ", "or "),
    *("e.g. ", "what ", "- ", "1. ", "** ", "x-", "the following "),
)
"""What a run is made of: one piece, or two in turn."""

TEMPLATES = (
    "{run}",
    "What is your budget{run}?",
    "Which matters more to you{run}x, the price or the time?",
    "I propose AQ449.{run}ok",
    "Done! {run}",
    "finish: {run}",
    "finish: I could not book {run}",
)
"""Where the run sits: alone, in a question, in a sentence that weighs wishes (the reader's
comparing path), after a proposal (the proposal reader's go-ahead patterns), after a report
(the metric's report and denial readers); a template opening with ``finish:`` is the
``finish`` answer instead of a message."""
FINISH = "finish: "

ORDINARY = "What is your budget for flight {}, and do you need a refundable fare?"
"""An ordinary question, numbered so that no step reads it from the reader's cache."""


def _run(pair: tuple[str, str], size: int) -> str:
    unit = pair[0] + pair[1]
    return (unit * (size // len(unit) + 1))[:size]


def _step_seconds(env: Env, text: str) -> float:
    """CPU seconds of one step of ``text`` and the scoring of the episode it ends."""
    env.reset(seed=0)
    if text.startswith(FINISH):
        action: Say | CallBatch = CallBatch((ToolCall("finish", {"answer": text[len(FINISH) :]}),))
    else:
        action = Say(text)
    start = time.process_time()
    env.step(action)
    score(env.trajectory, env.task)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer shapes, a quarter size")
    parser.add_argument("--top", type=int, default=12, help="how many of the slowest to print")
    parser.add_argument("--repeat", type=int, default=1, help="steps per shape (the median)")
    args = parser.parse_args(argv)
    pieces = PIECES[::3] if args.quick else PIECES
    size = MAX_TEXT // 4 if args.quick else MAX_TEXT
    env = Env("travel")
    ordinary = statistics.median(_step_seconds(env, ORDINARY.format(i)) for i in range(50))
    timed: list[tuple[float, str, tuple[str, str]]] = []
    for template, pair in itertools.product(TEMPLATES, itertools.product(pieces, repeat=2)):
        text = template.format(run=_run(pair, size - len(template)))[:size]
        seconds = statistics.median(_step_seconds(env, text) for _ in range(args.repeat))
        timed.append((seconds, template, pair))
    timed.sort(reverse=True)
    print(f"{len(timed)} shapes of {size} characters, one travel step and score each (CPU time)")
    print(f"ordinary question: {ordinary * 1e3:.2f} ms (median of 50)")
    print(f"median shape: {statistics.median(t for t, _, _ in timed) * 1e3:.2f} ms")
    for seconds, template, pair in timed[: args.top]:
        print(f"{seconds * 1e3:9.1f} ms  {template!r:58}  {pair!r}")
    slowest = timed[0][0]
    print(f"slowest / ordinary: {slowest / ordinary:.0f}x ({slowest:.3f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
