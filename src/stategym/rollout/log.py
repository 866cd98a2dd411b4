"""The one strict reader of a trajectories file, and the file's append rule.

Trajectories are flushed one by one as episodes end, so an interrupted run keeps every
finished episode and at most a cut last line. :func:`read_log` is the one reader of such a
file for every command (``run``, ``eval`` and the engine when they resume, ``score``): a cut
last line, one that does not end in a newline, is dropped (and reported by its line
number); any other unreadable line is an error naming ``FILE:LINE``, and so are two copies
of one episode (:func:`~stategym.rollout.spec.trajectory_key`). :func:`load_log` also
rewrites the file without the cut line, so the next append starts on a line of its own.
A complete run puts its log in request order (:func:`put_in_order`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from stategym.kernel.errors import StateGymError, TrajectoryError, UsageError
from stategym.kernel.files import open_regular, read_regular, replace_bytes
from stategym.kernel.trajectory import Trajectory, dumps, loads
from stategym.rollout.spec import Key, key_words, trajectory_key

T = TypeVar("T")

SHOWN_DUPLICATES = 5
"""How many duplicated episodes an error message names."""


@dataclass(frozen=True, slots=True)
class Log:
    """What :func:`read_log` found in a trajectories file.

    Attributes:
        trajectories: every readable episode, in file order.
        cut_line: the line number of a cut last line that was dropped, or ``None``.
    """

    trajectories: list[Trajectory]
    cut_line: int | None


def read_log(path: Path) -> Log:
    """Read a trajectories file strictly, except for a cut last line (:class:`LogReader`).

    Raises:
        UsageError: ``FILE:LINE: why`` for an unreadable line that is not a cut last line.
    """
    reader = LogReader(path)
    kept = [trajectory for _, trajectory in reader]
    return Log(kept, reader.cut_line)


class LogReader:
    """A trajectories file read one episode at a time: iterating yields ``(line number,
    trajectory)`` and holds one line in memory, never the file (:func:`map_log` reads a log
    of any length so).

    A last line that does not end in a newline, cannot be read and starts as every line
    stategym writes starts (``{``) is what an interrupted append leaves: it is dropped and
    its number kept in :attr:`cut_line`. Any other unreadable line is corruption, not an
    interruption, and is never dropped: a log is rewritten without its cut line, so a last
    line of someone else's text (a file of notes a link named ``trajectories.jsonl`` led
    to) would be lost.

    Raises (while iterating):
        NotAFile: the path is a FIFO or a folder, refused in one line, never waited on.
        UsageError: ``FILE:LINE: why`` for an unreadable line that is not a cut last line.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cut_line: int | None = None
        """The number of the cut last line dropped, once iterating has reached it."""

    def __iter__(self) -> Iterator[tuple[int, Trajectory]]:
        with open_regular(self.path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:  # read without its newline, so a JSON error reads as it always did
                    trajectory = loads(line[:-1] if line.endswith(b"\n") else line)
                except TrajectoryError as error:
                    # only the file's last line can lack its newline
                    if not line.endswith(b"\n") and line.lstrip().startswith(b"{"):
                        self.cut_line = number
                        return
                    raise UsageError(f"{self.path}:{number}: {error}") from None
                yield number, trajectory


def refuse_duplicates(path: Path, trajectories: Iterable[Trajectory]) -> None:
    """Raise if two trajectories are copies of one episode (a file appended twice).

    Raises:
        UsageError: naming the first duplicated episodes and how many copies each has.
    """
    _refuse_repeated(path, Counter(trajectory_key(t) for t in trajectories))


def _refuse_repeated(path: Path, counts: Counter[Key]) -> None:
    repeated = [(key, n) for key, n in counts.items() if n > 1]
    if not repeated:
        return
    named = "; ".join(f"{key_words(key)} ({n} copies)" for key, n in repeated[:SHOWN_DUPLICATES])
    more = (
        f" and {len(repeated) - SHOWN_DUPLICATES} more" if len(repeated) > SHOWN_DUPLICATES else ""
    )
    raise UsageError(
        f"{path} holds {len(repeated)} duplicated episode(s) (same domain, seed, knobs, agent "
        f"and sample): {named}{more}; remove the extra lines or start afresh"
    )


def refuse_unverified(path: Path, trajectories: Sequence[Trajectory]) -> None:
    """Replay each trajectory of ``path`` (:func:`stategym.kernel.verify.verify`, one replay
    each) and refuse the file at the first whose log is not what its replay gives (an
    edited outcome, call result or user turn, a relabelled domain).

    Raises:
        TrajectoryError: ``FILE:LINE: episode ... does not replay: first difference``.
    """
    # read_log skips blank lines and keeps the others in order: the n-th trajectory is the
    # n-th line that is not blank
    lines = [n for n, line in enumerate(read_regular(path).split(b"\n"), 1) if line.strip()]
    for line, trajectory in zip(lines, trajectories, strict=False):
        _refuse_unverified(path, line, trajectory)


def _refuse_unverified(path: Path, line: int, trajectory: Trajectory) -> None:
    from stategym.kernel.verify import verify

    found = verify(trajectory)
    if found:
        episode = f"{trajectory.domain} seed {trajectory.seed} sample {trajectory.run.sample}"
        raise TrajectoryError(f"{path}:{line}: episode {episode} does not replay: {found[0]}")


def map_log(
    path: Path,
    read: Callable[[Trajectory], T],
    *,
    verify: bool = False,
    cut: Callable[[int], None] | None = None,
) -> tuple[list[T], int | None]:
    """``read`` of each episode of ``path``, in file order, and the number of a cut last line
    dropped (or ``None``): :func:`read_log`, :func:`refuse_duplicates` and, with ``verify``,
    :func:`refuse_unverified`, with one episode in memory at a time rather than the file.
    ``cut`` is told the cut line's number once the file is read, before any refusal, so its
    warning comes first as it did when the file was read whole (audit 18B F2).

    The refusals keep their order: duplicated episodes (a property of the whole file) are
    refused first, then the first episode, in file order, that does not replay or that
    ``read`` raised a :class:`~stategym.kernel.errors.StateGymError` on; after that episode
    nothing more is replayed or read, only each episode's key counted.

    Raises:
        UsageError: an unreadable line (not a cut last line), or duplicated episodes.
        StateGymError: what the first replay or ``read`` that failed raised.
    """
    reader = LogReader(path)
    counts: Counter[Key] = Counter()
    results: list[T] = []
    failed: StateGymError | None = None
    for line, trajectory in reader:
        counts[trajectory_key(trajectory)] += 1
        if failed is not None:
            continue
        try:
            if verify:
                _refuse_unverified(path, line, trajectory)
            results.append(read(trajectory))
        except StateGymError as error:
            failed = error
    if cut is not None and reader.cut_line is not None:
        cut(reader.cut_line)
    _refuse_repeated(path, counts)
    if failed is not None:
        raise failed
    return results, reader.cut_line


def load_log(path: Path) -> Log:
    """:func:`read_log` and :func:`refuse_duplicates`; rewrites the file without a cut line.

    A missing file is an empty log. A file whose last line lacks its newline is rewritten
    (atomically) so that the next append starts on a line of its own.
    """
    if not path.exists():
        return Log([], None)
    log = read_log(path)
    refuse_duplicates(path, log.trajectories)
    if not _ends_a_line(path):  # read again only then; every other line kept byte for byte
        data = read_regular(path)
        ended = data[: data.rfind(b"\n") + 1] if log.cut_line is not None else data + b"\n"
        replace_bytes(path.resolve(), ended)  # through a link, the file it names
    return log


def _ends_a_line(path: Path) -> bool:
    """Whether the file is empty or its last byte is a newline (read alone, not the file)."""
    with open_regular(path) as handle:
        if handle.seek(0, 2) == 0:
            return True
        handle.seek(-1, 2)
        return handle.read(1) == b"\n"


class Appender:
    """Appends trajectories to a file, one flushed line each (created on first write)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, trajectory: Trajectory) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as handle:  # closed, so flushed, before the next episode
            handle.write(dumps(trajectory) + b"\n")


def put_in_order(path: Path, log: Sequence[Trajectory], first: Sequence[Trajectory]) -> None:
    """Rewrite the log ``path``, which holds ``log`` one line each in that order, in the
    order a request lists its episodes: by domain, then agent, in the order ``first`` (the
    command's requested episodes, in request order) names them (any others after, as the log
    first has them), then by seed and sample; ties keep their order. Each line is moved as
    written, byte for byte (a field this version does not read, an older version's line, is
    kept), the file replaced whole (through a link, the file it names), and not at all when
    it is in that order already or does not hold one line per episode of ``log``.

    Episodes are appended as they end, which for LLM agents playing concurrently is the
    order they happened to finish in, and a resumed run appends the missing ones after the
    rest: put in order at the end of a complete run, the same command writes the same
    bytes whatever its concurrency or interruptions, and the requested episodes (a scores
    file in request order) come in the log's order.
    """
    domains: dict[str, int] = {}
    agents: dict[str, int] = {}
    for trajectory in (*first, *log):
        domains.setdefault(trajectory.domain, len(domains))
        agents.setdefault(trajectory.agent, len(agents))

    def place(index: int) -> tuple[int, int, int, int]:
        t = log[index]
        return domains[t.domain], agents[t.agent], t.seed, t.run.sample

    order = sorted(range(len(log)), key=place)
    if order == list(range(len(log))):
        return
    target = path.resolve()
    lines = [line for line in read_regular(target).splitlines(keepends=True) if line.strip()]
    if len(lines) != len(log) or not all(line.endswith(b"\n") for line in lines):
        return  # not the file ``log`` was read from: left as it is
    replace_bytes(target, b"".join(lines[i] for i in order))
