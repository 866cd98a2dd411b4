"""The environment: rounds, the clock, dynamics, provenance and the trajectory log.

:class:`Env` is domain-independent. One ``step`` plays one round: a batch of tool calls run
against the same world (no call sees another's result; the batch costs its slowest call's
latency), or one message to the simulated user. Scheduled events fire as the clock passes
their time. Agent output never raises: every value passes the boundary rule of
:mod:`stategym.kernel.boundary`, and a batch is checked whole before any call runs
(:mod:`stategym.kernel.validation`). Malformed or unknown calls become structured error
results and logged format errors, a round with one runs none of its calls, and the world is
untouched. The outcome, the reward hook and snapshots have modules of their own
(:mod:`~stategym.kernel.outcome`, :mod:`~stategym.kernel.reward`,
:mod:`~stategym.kernel.snapshot`). Before the first ``reset`` there is no episode: every
public entry that reads one (``step``, ``step_message``, ``trajectory``, ``outcome`` ...)
raises ``RuntimeError("call reset() first")``, the one misuse of the API it does not turn
into an observation.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from stategym.kernel.boundary import decode_message, raw_text
from stategym.kernel.domain import Commitment, Domain, installed_registry, lookup
from stategym.kernel.errors import AgentFormatError
from stategym.kernel.frozen import quick_constructor
from stategym.kernel.knobs import Knobs, KnobsGiven, as_knobs
from stategym.kernel.outcome import judge
from stategym.kernel.protocol import (
    EMPTY_ACTION,
    EPISODE_OVER,
    FINISH,
    JSON,
    Action,
    Observation,
    StepResult,
    ToolResult,
    action_from_message,
)
from stategym.kernel.provenance import Origin, Provenance, Source
from stategym.kernel.reset_options import named_as, read_options
from stategym.kernel.reward import OutcomeReward, RewardFn, RoundReward, outcome_reward
from stategym.kernel.snapshot import Ending, EnvSnapshot, rounds_to_restore
from stategym.kernel.task import SEED_LIMIT, EventKind, Task, Value, check_seed
from stategym.kernel.tools import Tool
from stategym.kernel.trajectory import (
    GIVEN_TASK,
    TRAJECTORY_VERSION,
    CallRecord,
    Outcome,
    RoundKind,
    RoundRecord,
    RunRecord,
    Trajectory,
)
from stategym.kernel.understanding import ReaderSource
from stategym.kernel.user import SimulatedUser, UserTurn
from stategym.kernel.validation import (
    NOT_RUN,
    Call,
    Ready,
    check_call,
    read_action,
    rejected,
    run_ready,
)

USER_LATENCY = 1
"""Clock ticks one message to the user costs."""
GIVE_UP_AFTER = 3
"""The user ends the conversation after this many messages in a row it cannot understand."""


class Played(NamedTuple):
    """What a round handler returns. The round's record is made from it once the round has
    ended (the clock, the events, the charges and the user's notice are known only then)."""

    kind: RoundKind
    latency: int
    """Ticks the round costs."""
    calls: tuple[CallRecord, ...]
    say: str | None
    """The agent's message (a say round)."""
    turn: UserTurn | None
    """How the user read that message (a say round)."""
    format_errors: tuple[str, ...]
    raw: JSON
    """The unusable action (an invalid round)."""
    results: tuple[ToolResult, ...]
    """The observation's tool results."""
    user: str | None
    """The user's words."""
    error: str | None
    """A round-level error (an invalid round): the observation's, and the record's."""


# Made on every round and every call: frozen records built the quick way (kernel/frozen.py).
_new_record = quick_constructor(RoundRecord)
_new_observation = quick_constructor(Observation)
_new_result = quick_constructor(ToolResult)
_new_origin = quick_constructor(Origin)


class Env:
    """A stategym environment for one domain.

    Args:
        domain: a domain, or its name (resolved by the registry ``import stategym``
            installs: :func:`stategym.kernel.domain.lookup`).
        knobs: which properties generated tasks have: :class:`Knobs`, their text or a
            mapping (:func:`~stategym.kernel.knobs.as_knobs`); ``None``: the defaults.
        reward: per-round reward function (default: sparse outcome reward).
        agent: the agent's name, stamped on trajectories.
        reader: what reads the agent's messages for the simulated user; ``None`` (the
            default): the rule-based intent model. Another reader (an LLM:
            :class:`stategym.llm.reading.LLMReading`) is named in every trajectory's
            ``meta["reader"]``, and :func:`~stategym.kernel.trajectory.replay` refuses such a
            trajectory unless given an environment that reads the same way.

    Example:
        >>> env = Env("travel")
        >>> observation, info = env.reset(seed=0)
        >>> observation.user is not None
        True
    """

    def __init__(
        self,
        domain: str | Domain,
        *,
        knobs: KnobsGiven = None,
        reward: RewardFn = outcome_reward,
        agent: str = "",
        reader: ReaderSource | None = None,
    ) -> None:
        self.domain = lookup(domain) if isinstance(domain, str) else domain
        self.reader_name = reader.name if reader is not None else None
        self._reader = reader.reader(self.domain.slot_phrases) if reader is not None else None
        self.knobs = as_knobs(knobs)
        self.reward_fn = reward
        self._pay: RoundReward = OutcomeReward()
        self.agent = agent  # checked by the property: a trajectory's agent is a str
        self._next_seed = 0
        self._episode = ""
        """The episode's token, drawn at each reset and shared by copies of the environment
        (``copy.deepcopy``, pickle): a snapshot restores only into the episode it was taken
        in. Random, and never logged: trajectories and state keys do not depend on it."""
        self._tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] = []
        self._set_tools(self.knobs)
        self._task: Task | None = None

    # -- set-up ---------------------------------------------------------------------------

    def _set_tools(self, knobs: Knobs) -> None:
        tools = self.domain.available_tools(knobs)
        self._tool_knobs = knobs
        self._tools = {t.name: t for t in tools}
        self._schemas = self.domain.tool_schemas(knobs)

    @property
    def agent(self) -> str:
        """The agent's name, stamped on trajectories.

        Raises:
            TypeError: (when set) not a ``str``; a trajectory naming its agent otherwise could
                not be read back.
        """
        return self._agent

    @agent.setter
    def agent(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"an agent's name must be a str, got {type(name).__name__} {name!r}")
        self._agent = name

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools offered this episode, in OpenAI function format (``finish`` last): the
        environment's own list (as ``reset``'s ``info["tools"]``), to read; copy it to edit
        (``Domain.tool_schemas`` gives a new one)."""
        return self._schemas

    @property
    def task(self) -> Task:
        """The episode's task.

        Raises:
            RuntimeError: before the first :meth:`reset` (:meth:`_require_episode`).
        """
        return self._require_episode()

    def _require_episode(self) -> Task:
        """The episode's task; refuses to touch the episode's state before the first
        :meth:`reset`.

        The world, the user, the rounds and the ending only exist once an episode has
        started; every public entry that reads them calls this first, so a call made too
        early says what to do instead of failing on a missing private field.

        Raises:
            RuntimeError: ``call reset() first``.
        """
        if self._task is None:
            raise RuntimeError("call reset() first")
        return self._task

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode.

        Args:
            seed: task seed, an integer in ``[0, 2**64)`` (any integer type: ``numpy.int64``
                becomes a plain ``int``, so the trajectory can be written); ``None`` takes the
                next seed after the previous episode's.
            options: ``{"task": Task}`` plays a given task (of this domain) instead of
                generating one; ``None``, ``{}`` and ``{"task": None}`` generate one.
                ``{"max_rounds": N}`` stops the episode after its N-th round, as a limit
                from outside does (Gymnasium's ``max_episode_steps``): that round is
                truncated, so the reward settles there (the dense rewards sum to R, the
                outcome reward pays the outcome), and R is that of the episode stopped
                there from outside (:meth:`stopped_trajectory`): the task's own budget
                still prices the rounds not played. ``None``: the task's budget alone.

        Raises:
            TypeError: the seed (or the given task's) is not an integer, or is a bool;
                ``options`` is not a mapping, its ``task`` not a :class:`Task`, or its
                ``max_rounds`` not an integer.
            ValueError: the seed (or the given task's) is outside ``[0, 2**64)``;
                ``options`` has another key than ``task`` and ``max_rounds``, the task is
                another domain's, or ``max_rounds`` is below 1.
            Each is raised before anything changes: the previous episode stays as it was.
        """
        task, stop_after = read_options(options, self.domain.name)
        played_as: tuple[str | None, bool] = (None, False)
        if task is None:
            seed = check_seed(self._next_seed if seed is None else seed)
            task = installed_registry().cached_task(self.domain.name, seed, self.knobs)
        elif type(task.seed) is not int or check_seed(task.seed) != task.seed:
            raise TypeError(f"a given task's seed must be a plain int, got {task.seed!r}")
        else:
            played_as = named_as(task, self.domain)
        # Everything a task can be refused for is built before anything changes (a hand-made
        # task's events on a table its world lacks: audit 16E F3).
        world = self.domain.new_world(task)
        type(world).check_events(task.events)  # a hand-made task fails here, not mid-episode
        user = SimulatedUser(
            task, self.domain.slot_phrases, judges=not self.domain.read_only, reader=self._reader
        )
        pay = self.reward_fn(task)
        limit = task.max_rounds if stop_after is None else min(task.max_rounds, stop_after)
        judges = self.domain.judges_answer(task.knobs)
        provenance = Provenance()
        request_origin = Origin(Source.REQUEST, -1, "")
        for value in (*task.request.given.values(), *task.request.implied):
            provenance.observe(value, request_origin)  # an unhashable value fails here
        if task.knobs != self._tool_knobs:
            self._set_tools(task.knobs)
        self._task = task
        self._episode = uuid.uuid4().hex
        self._probe, self._given = played_as
        self._round_limit = limit
        self._judges = judges
        self._pay = pay
        self._next_seed = (task.seed + 1) % SEED_LIMIT
        self.world = world
        self.user = user
        self.provenance = provenance
        self.rounds: list[RoundRecord] = []
        self._fired = 0
        self._confused = 0
        self._terminated = False
        self._truncated = False
        self._answer: str | None = None
        observation = Observation(-1, 0, user=task.request.text)
        return observation, {"task_id": task.id, "tools": self._schemas}

    # -- stepping -------------------------------------------------------------------------

    def step(self, action: Action) -> StepResult:
        """Play one round. Never raises on agent output.

        The action is read into plain values first (:func:`~stategym.kernel.validation.read_action`:
        an action that cannot be, or a message to the user longer than
        :data:`~stategym.kernel.boundary.MAX_TEXT` characters, is an invalid round, and so is
        an object that is neither a :class:`~stategym.kernel.protocol.CallBatch` nor a
        :class:`~stategym.kernel.protocol.Say`, told what it sent and what to send instead:
        a bare ``ToolCall`` is told to wrap it with ``calls(...)``), then a batch is checked
        whole before any call runs: if one call is malformed, none runs.
        """
        try:
            read = read_action(action)
        except AgentFormatError as error:
            return self._play(self._invalid, error.kind, f"{error.kind}: {error}", None)
        if read is None:
            return self._play(self._invalid, "empty_action", EMPTY_ACTION, None)
        if type(read) is str:
            return self._play(self._say, read)
        return self._play(self._calls, read)

    def step_message(
        self, message: Mapping[str, Any] | str
    ) -> tuple[list[dict[str, str]], float, bool, bool, dict[str, Any]]:
        """Play one round from an OpenAI-style assistant message, or its JSON text.

        Returns:
            The new messages (tool results, then the user's words), the reward,
            ``terminated``, ``truncated`` and the info dict, as :meth:`step`.
        """
        try:
            action: Action = action_from_message(decode_message(message))
        except AgentFormatError as error:
            result = self._play(
                self._invalid, error.kind, f"{error.kind}: {error}", raw_text(message)
            )
        else:
            result = self.step(action)
        return (
            result.observation.to_messages(),
            result.reward,
            result.terminated,
            result.truncated,
            result.info,
        )

    def _play(self, play: Callable[..., Played], *args: Any) -> StepResult:
        """Run one round with ``play(index, *args)`` and do the bookkeeping every round shares.

        Raises:
            RuntimeError: before the first :meth:`reset` (misuse of the API, not agent
                output: :meth:`step` never raises on what the agent sent).
        """
        self._require_episode()
        if self._terminated or self._truncated:
            observation = Observation(len(self.rounds) - 1, self.world.clock, error=EPISODE_OVER)
            return StepResult(
                observation,
                0.0,
                self._terminated,
                self._truncated,
                {"format_errors": ("episode_over",)},
            )
        index = len(self.rounds)
        world = self.world
        world.round = index
        charges_before = len(world.charges)
        played = play(index, *args)
        record = self._end_round(index, played, charges_before)
        self.rounds.append(record)
        if not self._terminated and index + 1 >= self._round_limit:
            self._truncated = True
        done = self._terminated or self._truncated
        paid = self._pay(record, self.outcome() if done else None)
        user = played.user if record.notice is None else _join(played.user, record.notice)
        observation = _new_observation(index, world.clock, played.results, user, played.error)
        info: dict[str, Any] = dict(paid.info)
        if record.format_errors:
            info["format_errors"] = record.format_errors
        return StepResult(observation, paid.reward, self._terminated, self._truncated, info)

    def _say(self, index: int, text: str) -> Played:
        done = [c.option for c in self.domain.commitments(self.world)]
        turn = self.user.respond(text, done)
        origin = Origin(Source.USER, index, ",".join(turn.asked))
        for _, value in turn.values:
            self.provenance.observe(value, origin)
        self._confused = 0 if turn.understood else self._confused + 1
        reply = turn.reply
        if self._confused >= GIVE_UP_AFTER:
            reply += " I'll handle this myself. Goodbye."
            self._terminated = True
        return Played(RoundKind.SAY, USER_LATENCY, (), text, turn, (), None, (), reply, None)

    def _calls(self, index: int, batch: tuple[Call, ...]) -> Played:
        tools, judges, provenance = self._tools, self._judges, self.provenance
        checked = [
            check_call(call, call.id or f"c{index}_{position}", tools, judges, provenance)
            for position, call in enumerate(batch)
        ]
        ready = [c for c in checked if type(c) is Ready]
        if len(ready) < len(checked):  # some call is malformed: nothing runs
            records = rejected(checked)
            errors = tuple(r.error_kind or "" for r in records if r.error_kind != NOT_RUN)
            results = tuple(
                _new_result(r.id, r.name, r.content, r.error, r.error_kind) for r in records
            )
            return Played(
                RoundKind.CALLS, 1, records, None, None, errors, None, results, None, None
            )
        world, latency, finish = self.world, 1, None
        records = tuple([run_ready(call, world) for call in ready])
        for call, record in zip(ready, records, strict=True):
            if call.tool is None:  # finish, which cannot fail once checked
                finish = finish or record
            else:
                latency = max(latency, call.tool.latency)
        # Observed once every call has run, as the agent sees the results.
        for record in records:
            if record.error is None and record.name != FINISH:
                provenance.observe(record.content, _new_origin(Source.TOOL, index, record.id))
        results = tuple(
            [_new_result(r.id, r.name, r.content, r.error, r.error_kind) for r in records]
        )
        if finish is not None:
            self._terminated = True
            self._answer = finish.content.get("answer") if finish.content else None
        return Played(RoundKind.CALLS, latency, records, None, None, (), None, results, None, None)

    def _invalid(self, index: int, kind: str, message: str, raw: str | None) -> Played:
        # The error text is logged so a transcript shows the round as the agent saw it.
        return Played(RoundKind.INVALID, 1, (), None, None, (kind,), raw, (), None, message)

    def _end_round(self, index: int, played: Played, charges_before: int) -> RoundRecord:
        """Advance the clock, fire due events, and make the round's record."""
        world = self.world
        clock = world.clock
        world.clock = clock + played.latency
        fired: list[int] = []
        events = self.task.events
        while self._fired < len(events) and events[self._fired].at <= world.clock:
            event = events[self._fired]
            if event.kind is EventKind.SET:
                world.apply(event)
            else:
                self.user.change_mind(event.slot, event.value)
            fired.append(self._fired)
            self._fired += 1
        notice: str | None = None
        values: tuple[tuple[str, Value], ...] = ()
        if played.kind is not RoundKind.SAY and not self._terminated:
            notice, values = self.user.announce()
            if values:
                origin = Origin(Source.USER, index, "notice")
                for _, value in values:
                    self.provenance.observe(value, origin)
        charges = tuple(world.charges[charges_before:]) if world.charges else ()
        return _new_record(
            index,
            clock,
            played.latency,
            played.kind,
            played.calls,
            played.say,
            played.turn,
            notice,
            values,
            tuple(fired),
            charges,
            played.format_errors,
            played.raw,
            played.error,
            None,  # model: the runner adds what the model generated
            {},  # meta
        )

    # -- state ----------------------------------------------------------------------------

    def state_key(self) -> str:
        """Digest of the world and the user's state; equal states give equal keys."""
        self._require_episode()
        user = self.user.state()
        return self.world.digest() + f"|{len(self.rounds)}|{user.confirmed}|{user.values}"

    def snapshot(self) -> EnvSnapshot:
        """The episode's state between two rounds, the reward's included."""
        self._require_episode()
        return EnvSnapshot(
            self.world.snapshot(),
            self.user.state(),
            dict(self.provenance.first),
            len(self.rounds),
            self._fired,
            self._confused,
            Ending(self._terminated, self._truncated, self._answer),
            self._copy_reward(self._pay),
            self.task.id,
            self._episode,
            tuple(self.rounds),
        )

    def restore(self, snapshot: EnvSnapshot) -> None:
        """Return to ``snapshot`` (taken in this episode); it can be restored again later.

        The log goes back to the snapshot's own rounds, so a search may return to any state
        it saved, on any branch: back to an earlier one, then forward again to a later one
        (a sibling branch played meanwhile is dropped whole, never kept under the restored
        world: audit 18A F1); a copy of the environment (``copy.deepcopy``, pickle) may
        restore the original's snapshots and the original its copy's.

        Raises:
            ValueError: the snapshot was taken in another episode: one of another task (its
                world and user would be put under this task: audit 16C F4), or an earlier
                episode of this environment (of the same task, or of its probe, whose id is
                the same: audit 16D F3), or is a snapshot pickled before the rounds were
                kept whose rounds this episode has not played; nothing changes. A copy of
                the environment is in the same episode as the original until either is
                reset.
        """
        self._require_episode()
        rounds = rounds_to_restore(snapshot, self.task.id, self._episode, self.rounds)
        self.world.restore(snapshot.world)
        self.user.restore(snapshot.user)
        self.provenance.first = dict(snapshot.provenance)
        self.rounds = rounds
        self._fired = snapshot.fired
        self._confused = snapshot.confused
        done = snapshot.done
        self._terminated, self._truncated, self._answer = (
            done.terminated,
            done.truncated,
            done.answer,
        )
        self._pay = self._copy_reward(snapshot.reward)

    def _copy_reward(self, reward: RoundReward) -> RoundReward:
        # A reward keeps its own state between rounds and must pickle, so a deep copy saves
        # it whatever it is; the task is shared, not copied: it never changes.
        task = self.task
        return copy.deepcopy(reward, {id(task): task})

    def __getstate__(self) -> dict[str, Any]:
        # Tools hold functions (closures in synthetic domains): they are rebuilt from the
        # domain, which pickles by name, so an environment pickles and deep-copies mid-episode.
        state = self.__dict__.copy()
        del state["_tools"], state["_schemas"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # An environment pickled before stop 42: its episode has no token (or 86e6525's
        # counter, the same in every environment), no probe mark and no round limit of its own.
        episode = self.__dict__.get("_episode")
        if not episode or not isinstance(episode, str):  # a token of its own, as at a reset
            self._episode = uuid.uuid4().hex
        self.__dict__.setdefault("_probe", None)
        self.__dict__.setdefault("_given", False)
        task = self.__dict__.get("_task")
        if "_round_limit" not in self.__dict__ and task is not None:
            self._round_limit = task.max_rounds
        self._set_tools(self._tool_knobs)

    @property
    def done(self) -> bool:
        """Whether the episode is over (terminated or truncated)."""
        self._require_episode()
        return self._terminated or self._truncated

    def commitments(self) -> tuple[Commitment, ...]:
        """What the episode's world holds committed so far."""
        self._require_episode()
        return self.domain.commitments(self.world)

    def outcome(self) -> Outcome:
        """The final-answer view of the episode so far (:func:`~stategym.kernel.outcome.judge`)."""
        return judge(self.domain, self.task, self.world, self._answer)

    @property
    def trajectory(self) -> Trajectory:
        """The episode's log so far."""
        done = self.done  # first: before any reset this raises "call reset() first"
        return self._log(self._truncated, self.outcome() if done else None)

    def stopped_trajectory(self) -> Trajectory:
        """The log of the episode stopped here: :attr:`trajectory` once the episode is over,
        else the same marked truncated, with the outcome so far (an episode stopped from
        outside: a rollout limit, an agent that gave up)."""
        return self.trajectory if self.done else self._log(True, self.outcome())

    def _log(self, truncated: bool, outcome: Outcome | None) -> Trajectory:
        task = self.task
        meta: dict[str, Any] = {} if self.reader_name is None else {"reader": self.reader_name}
        if self._given:
            meta["task"] = GIVEN_TASK
        return Trajectory(
            TRAJECTORY_VERSION,
            task.domain,
            task.seed,
            task.knobs,
            self.agent,
            tuple(self.rounds),
            self._terminated,
            truncated,
            outcome,
            self.state_key(),
            run=RunRecord(probe=self._probe),
            meta=meta,
        )


def _join(first: str | None, second: str) -> str:
    return second if first is None else f"{first} {second}"
