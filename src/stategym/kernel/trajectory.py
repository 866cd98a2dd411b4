"""The versioned trajectory log: the single source of truth for every score.

One episode is one :class:`Trajectory`; a run directory holds them as JSON Lines, one per
line. Every score, report and protocol figure is computed from these records and the task,
which is regenerated from ``(domain, seed, knobs)``. Field-by-field documentation:
``docs/trajectory.md``. :func:`replay` feeds a trajectory's actions to a fresh environment
and reproduces the world exactly (equal state digest); the digest covers the world and the
user's state only, and :func:`stategym.kernel.verify.verify` compares the rest of the log
(call results, user turns, outcome) with the replay.

Version 2 types what version 1 left in ``meta``: a round's :class:`ModelTurn` (what the model
generated: text, token ids, log-probabilities, finish reason, usage), the round's ``error``
text (what the agent was told about an unusable action) and the trajectory's
:class:`RunRecord` (which sample, for what role, which probe: the probe decides the task a
trajectory is scored against). Version 1 lines still read: :func:`loads` moves those keys out
of ``meta`` into the typed fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import pydantic

from stategym.kernel.counterfactual import played_task
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.files import open_regular
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import JSON, Action, CallBatch, Say, ToolCall
from stategym.kernel.provenance import Origin
from stategym.kernel.task import SEED_LIMIT, Task
from stategym.kernel.tools import Effect
from stategym.kernel.user import UserTurn
from stategym.kernel.world import Charge

if TYPE_CHECKING:
    from stategym.kernel.env import Env

TRAJECTORY_VERSION = 2
READABLE_VERSIONS = (1, 2)
"""Versions :func:`loads` reads; older lines are upgraded to the current shape."""


class RoundKind(StrEnum):
    CALLS = "calls"
    SAY = "say"
    INVALID = "invalid"


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call as executed.

    Attributes:
        id: call id.
        name: tool name as the agent wrote it (a name that is not a string: its
            description in ``<...>``, which names no tool).
        arguments: decoded arguments; for a call that decoded to no JSON object, the text the
            environment saw, which replay sends again and which is rejected again in the same
            words (a rejected value or an over-long text is kept as its rejection text:
            :func:`stategym.kernel.validation.rejection_text`).
        effect: the tool's declared effect (``None`` for ``finish`` and unknown tools).
        content: the result (``None`` on error).
        error: the error shown to the agent, if any.
        error_kind: ``tool`` or a format-error kind.
        sources: for each argument, where its value first appeared (``None``: ungrounded).
    """

    id: str
    name: str
    arguments: dict[str, Any] | str
    effect: Effect | None
    content: JSON
    error: str | None
    error_kind: str | None
    sources: dict[str, Origin | None]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model request cost.

    Attributes:
        prompt_tokens: tokens of the prompt (``None``: the endpoint did not say).
        completion_tokens: tokens generated (``None``: the endpoint did not say).
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class TokenSpan:
    """Where a round sits in its episode's token stream (token-in-token-out agents).

    The stream is round 0's ``prompt_token_ids``, then per round its ``token_ids`` and
    ``appended``; round ``k``'s prompt is the stream's first ``start`` tokens.

    Attributes:
        start: position of the round's first sampled token (the length of its prompt).
        end: position after its last sampled token.
        appended: the tokens fed after the sampled ones, up to the next round's prompt (the
            observation's segment from the renderer, and an end-of-turn marker the model
            did not reach).
        mask: one letter per token of the round, sampled then appended: ``p`` the policy
            sampled it (carries loss), ``o`` observation or template, ``u`` the user's words.
        prompt_mask: round 0 only: the first prompt's mask letters.
    """

    start: int
    end: int
    appended: tuple[int, ...] = ()
    mask: str = ""
    prompt_mask: str | None = None


@dataclass(frozen=True, slots=True)
class ModelTurn:
    """What a model generated for one round (LLM agents only; scripted rounds have none).

    Attributes:
        text: the raw generated text, before tool calls were parsed out of it (local
            models; ``None`` where the endpoint returns a parsed message).
        token_ids: the generated token ids, end-of-turn token included if reached.
        logprobs: log-probability of each generated token.
        tokens: the generated tokens as strings (from the endpoint).
        prompt_token_ids: the prompt's token ids (only when asked for: large).
        finish_reason: ``stop``, ``tool_calls`` or ``length``, as the backend reported it.
        usage: the request's token counts.
        span: where the round sits in the episode's token stream (token-in-token-out
            agents: the local ``hf:`` agent), else ``None``.
    """

    text: str | None = None
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    tokens: tuple[str, ...] | None = None
    prompt_token_ids: tuple[int, ...] | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    span: TokenSpan | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What a run played an episode for; the probe decides which task is scored.

    Attributes:
        sample: which of the ``n`` samples of its task this episode is (resume key), from 0
            (a log line with a negative one is refused).
        role: what the episode is for in a protocol run (``plan``, ``reference``, ``agent``,
            ``probe``); ``None`` in a plain run.
        probe: for a counterfactual probe, which task of the pair was played
            (``original`` or the probe's name, whose task is the flipped one); ``None``
            otherwise. Scoring regenerates the task accordingly.
    """

    sample: Annotated[int, pydantic.Field(ge=0)] = 0
    role: str | None = None
    probe: str | None = None


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One round: what the agent did, what happened, and what the clock read.

    Attributes:
        index: round number from 0.
        clock: clock at the start of the round.
        latency: ticks the round took (a batch costs its slowest call).
        kind: calls, say, or invalid (no usable action).
        calls: the calls of a tool round.
        say: the agent's message in a say round.
        user: how the user read that message and what it replied.
        notice: words the user volunteered after a tool round (a change of mind).
        notice_values: slot values the notice revealed.
        events: indices into ``task.events`` that fired at the end of this round.
        charges: money moved by this round.
        format_errors: format-error kinds in this round.
        raw: the unusable action, for invalid rounds.
        error: what the agent was told about an invalid round (the observation's error).
        model: what the model generated for this round (LLM agents), else ``None``.
        meta: anything else the runner adds (a refusal); not used for scoring.
    """

    index: int
    clock: int
    latency: int
    kind: RoundKind
    calls: tuple[CallRecord, ...] = ()
    say: str | None = None
    user: UserTurn | None = None
    notice: str | None = None
    notice_values: tuple[tuple[str, Any], ...] = ()
    events: tuple[int, ...] = ()
    charges: tuple[Charge, ...] = ()
    format_errors: tuple[str, ...] = ()
    raw: JSON = None
    error: str | None = None
    model: ModelTurn | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def action(self) -> Action:
        """The action that produced this round (for replay)."""
        if self.kind is RoundKind.SAY:
            return Say(self.say or "")
        return CallBatch(tuple(ToolCall(c.name, c.arguments, c.id) for c in self.calls))


@dataclass(frozen=True, slots=True)
class Outcome:
    """The final-answer view of an episode.

    Attributes:
        goal_reached: the world ends committed to a best option (or to nothing when doing
            nothing is best); in stateless tasks, the answer names a best option.
        committed: options the world is committed to at the end.
        answer: the ``finish`` answer, if any.
        spent: money paid out of the user's account.
        refunded: money paid back into it.
        lost: money spent on anything but the one right commitment (fees, wrong bookings).
    """

    goal_reached: bool
    committed: tuple[str, ...]
    answer: str | None
    spent: int
    refunded: int
    lost: int


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One episode, replayable and re-scorable offline.

    Attributes:
        version: log format version (:data:`TRAJECTORY_VERSION`).
        domain: domain name.
        seed: task seed, a plain integer in ``[0, 2**64)`` (``check_seed``; a line that
            spells it ``true``, ``1.0`` or out of range is no trajectory).
        knobs: task knobs.
        agent: agent name.
        rounds: every round in order.
        terminated: ended by ``finish`` or by the user.
        truncated: ended by the round limit.
        outcome: final-answer view (``None`` while the episode is running).
        digest: state digest at the end.
        run: which sample, role and probe the run played this episode as.
        meta: anything else the runner adds (model name, total usage); not used for scoring.
    """

    version: int
    domain: str
    seed: Annotated[int, pydantic.Strict(), pydantic.Field(ge=0, lt=SEED_LIMIT)]
    knobs: Knobs
    agent: str
    rounds: tuple[RoundRecord, ...]
    terminated: bool
    truncated: bool
    outcome: Outcome | None
    digest: str
    run: RunRecord = field(default_factory=RunRecord)
    meta: dict[str, Any] = field(default_factory=dict)


_ADAPTER = pydantic.TypeAdapter(Trajectory)


def dumps(trajectory: Trajectory) -> bytes:
    """One JSON line (without the newline)."""
    return orjson.dumps(trajectory)


def loads(line: bytes | str) -> Trajectory:
    """Parse and validate one JSON line.

    orjson decides what JSON is (integers of at most 64 bits, no NaN: what :func:`dumps` can
    write back), then every field is checked strictly, as the JSON types it: ``"0"`` is no
    round index, ``"no"`` no boolean (lax, pydantic took them, and ``--verify`` passed a line
    edited so). A version 1 line is upgraded, then checked the same way.

    Raises:
        TrajectoryError: broken JSON, missing or mistyped fields, or an unknown version.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise TrajectoryError(f"not JSON: {error}") from None
    version = data.get("version") if isinstance(data, dict) else None
    # type(): true and 1.0 equal 1, but a line that spells its version so is no version 1 line
    if not isinstance(data, dict) or type(version) is not int or version not in READABLE_VERSIONS:
        raise TrajectoryError(f"unsupported trajectory version {version!r}")
    if version == 1:
        line = orjson.dumps(_upgrade_v1(data))
    try:
        return _ADAPTER.validate_json(line, strict=True)
    except pydantic.ValidationError as error:
        raise TrajectoryError(f"invalid trajectory: {_problems(error)}") from None


def _problems(error: pydantic.ValidationError, shown: int = 3) -> str:
    """What a line lacks, one clause per field: ``rounds.1.calls.0.arguments: Input should be
    a valid dictionary or Input should be a valid string``. The alternatives of a field that
    takes several types are joined under the field (pydantic names each in the path, and
    links its docs: neither is the line's problem)."""
    found: dict[str, list[str]] = {}
    for problem in error.errors(include_url=False):
        path = ".".join(str(part) for part in problem["loc"] if not _alternative(part))
        said = found.setdefault(path or "(the line)", [])
        if problem["msg"] not in said:
            said.append(problem["msg"])
    clauses = [f"{path}: {' or '.join(said)}" for path, said in found.items()]
    more = f"; and {len(clauses) - shown} more" if len(clauses) > shown else ""
    return "; ".join(clauses[:shown]) + more


def _alternative(part: object) -> bool:
    """A path part that names one type of a union (``dict[str,any]``, ``str``), not a field."""
    return isinstance(part, str) and (part in _TYPE_NAMES or "[" in part)


_TYPE_NAMES = frozenset({"str", "int", "float", "bool", "list", "dict", "none", "tuple"})


MODEL_META_KEYS = {
    "text": "text",
    "completion_token_ids": "token_ids",
    "logprobs": "logprobs",
    "tokens": "tokens",
    "prompt_token_ids": "prompt_token_ids",
    "finish_reason": "finish_reason",
    "usage": "usage",
}
"""Per-round keys a backend reports (and version 1 kept in round ``meta``) -> the
:class:`ModelTurn` field that holds them in version 2."""
_V1_RUN = ("sample", "role", "probe")
"""Version 1 trajectory ``meta`` keys that version 2 keeps in :class:`RunRecord`."""


def _upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A version 1 line in the version 2 shape: token fields and run keys leave ``meta``.

    Version 1 did not log an invalid round's error text: ``error`` stays null there.

    Raises:
        TrajectoryError: ``rounds``, a round or a ``meta`` is not of its type: the shape the
            upgrade moves keys within is checked first, the rest by the validation after it.
    """
    rounds = _v1_field(data, "rounds", list, None)
    if rounds is None:
        raise TrajectoryError("missing rounds")
    upgraded = []
    for number, record in enumerate(rounds):
        if not isinstance(record, dict):
            raise TrajectoryError(f"rounds[{number}] must be an object, got {_kind(record)}")
        meta = dict(_v1_field(record, "meta", dict, {}, f"rounds[{number}]."))
        turn = {new: meta.pop(old) for old, new in MODEL_META_KEYS.items() if old in meta}
        upgraded.append({**record, "meta": meta, "model": turn or None})
    meta = dict(_v1_field(data, "meta", dict, {}))
    run = {key: meta.pop(key) for key in _V1_RUN if key in meta}
    return {**data, "version": TRAJECTORY_VERSION, "rounds": upgraded, "run": run, "meta": meta}


def _v1_field(data: dict[str, Any], key: str, kind: type, default: Any, where: str = "") -> Any:
    """``data[key]`` if it is a ``kind`` (``default`` when absent); anything else, null
    included, is a broken line (the version 1 writer always wrote a ``kind``)."""
    if key not in data:
        return default
    value = data[key]
    if not isinstance(value, kind):
        raise TrajectoryError(f"{where}{key} must be {_KINDS[kind]}, got {_kind(value)}")
    return value


_KINDS: dict[type, str] = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    type(None): "null",
}
"""What each JSON value's Python type is called in an error message (else a number)."""


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), "a number")


def jsonl_bytes(trajectories: Iterable[Trajectory]) -> bytes:
    """The trajectories as the text of a JSON Lines file (one line each, as
    :func:`write_jsonl` writes them), to be written whole."""
    return b"".join(dumps(trajectory) + b"\n" for trajectory in trajectories)


def write_jsonl(path: Path, trajectories: Iterable[Trajectory], *, append: bool = False) -> int:
    """Write trajectories one per line; returns how many were written."""
    count = 0
    with path.open("ab" if append else "wb") as handle:
        for trajectory in trajectories:
            handle.write(dumps(trajectory) + b"\n")
            count += 1
    return count


def read_jsonl(path: Path, *, strict: bool = True) -> Iterator[Trajectory]:
    """Read a JSONL file of trajectories.

    Args:
        path: the file.
        strict: raise on the first broken line; if ``False``, skip broken lines (an
            interrupted run leaves at most a cut last line) and keep the rest.

    Raises:
        TrajectoryError: with the file and line number of a broken line (strict mode).
    """
    with open_regular(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield loads(line)
            except TrajectoryError as error:
                if strict:
                    raise TrajectoryError(f"{path}:{number}: {error}") from None


GIVEN_TASK = "given"
"""``meta["task"]`` of an episode played on a task given to ``Env.reset`` that its
``(domain, seed, knobs)`` do not generate (nor their probe): the log cannot regenerate it."""


def task_of(trajectory: Trajectory) -> Task:
    """The task ``trajectory`` was played on: the one of its ``(domain, seed, knobs)``, or,
    for a counterfactual probe, the flipped task ``run.probe`` names (:func:`played_task`);
    the task it is scored against and replayed on.

    Raises:
        TrajectoryError: the episode played a task given to ``Env.reset``
            (``meta["task"]`` is :data:`GIVEN_TASK`), which no log can regenerate.
    """
    if trajectory.meta.get("task") == GIVEN_TASK:
        raise TrajectoryError(
            f"this {trajectory.domain} episode (seed {trajectory.seed}) played a task given "
            "to Env.reset (options['task']) that its domain, seed and knobs do not generate; "
            "score or replay it with that task: score(trajectory, task), "
            "replay(trajectory, task=task)"
        )
    return played_task(trajectory.domain, trajectory.seed, trajectory.knobs, trajectory.run.probe)


def replay(trajectory: Trajectory, env: Env | None = None, task: Task | None = None) -> Env:
    """Feed the trajectory's actions to a fresh environment; returns the environment.

    The episode is replayed on the task it was played on: the one of ``(domain, seed,
    knobs)``, or, for a counterfactual probe, the flipped task ``run.probe`` names
    (:func:`~stategym.kernel.counterfactual.played_task`), or ``task`` if given (an episode
    played on a task given to ``Env.reset``, which the log cannot regenerate). The returned
    environment's
    ``state_key()`` equals ``trajectory.digest`` when the environment is deterministic (it
    is: this is tested for every domain). The digest covers the world and the user's state
    only, not the logged results, user turns or outcome the metrics read:
    :func:`stategym.kernel.verify.verify` compares those too.

    Raises:
        TrajectoryError: the trajectory's user read messages with another reader
            (``meta["reader"]``, an LLM) than ``env`` does: replayed with the rule-based
            reader, its say rounds would be read differently. Pass an environment made
            with the same reader (its cached answers replay the episode exactly). Also:
            ``env`` plays another domain or other knobs than the trajectory's, ``task``
            is not of the trajectory's domain, seed and knobs, or the episode played a
            given task and ``task`` is not passed (:func:`task_of`).
    """
    from stategym.kernel.env import Env

    reader = trajectory.meta.get("reader")
    if reader != (env.reader_name if env is not None else None):
        raise TrajectoryError(
            f"this trajectory's user read messages with {reader or 'the rule-based reader'}; "
            "replay it on an environment made with the same reader "
            "(Env(domain, knobs=..., reader=...))"
        )
    logged = f"{trajectory.domain} / {trajectory.knobs.describe()}"
    if env is not None and (env.domain.name, env.knobs) != (trajectory.domain, trajectory.knobs):
        raise TrajectoryError(
            f"the environment given plays {env.domain.name} / {env.knobs.describe()}; this "
            f"trajectory is {logged}: replay it on Env(domain, knobs=...) of its own"
        )
    if task is not None and (task.domain, task.seed, task.knobs) != (
        trajectory.domain,
        trajectory.seed,
        trajectory.knobs,
    ):
        raise TrajectoryError(
            f"the task given is {task.id}; this trajectory is seed {trajectory.seed} of {logged}"
        )
    env = env or Env(trajectory.domain, knobs=trajectory.knobs)
    env.reset(options={"task": task if task is not None else task_of(trajectory)})
    for record in trajectory.rounds:
        if record.kind is RoundKind.INVALID:
            env.step(CallBatch(()))
        else:
            env.step(record.action())
    return env


def summarise_rounds(rounds: Iterable[RoundRecord]) -> Mapping[str, int]:
    """Counts a results table shows: rounds, asks, tool calls, format errors."""
    totals = {"rounds": 0, "asks": 0, "calls": 0, "format_errors": 0}
    for record in rounds:
        totals["rounds"] += 1
        totals["asks"] += record.kind is RoundKind.SAY
        totals["calls"] += len(record.calls)
        totals["format_errors"] += len(record.format_errors)
    return totals
