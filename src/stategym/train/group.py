"""Lock-step group rollouts: many episodes played together, one batched generation a round.

Every member of a batch (the ``G`` episodes of each of the iteration's tasks) is an ordinary
:class:`~stategym.llm.agent.ChatAgent` played by the one episode loop
(:func:`stategym.rollout.adrive`), so the trainer's episodes are exactly what ``stategym
eval`` with ``hf:`` logs: the same renderer, the same token-in-token-out stream (sampled ids
as sampled, observation tokens from the renderer, nothing re-tokenised), the same
trajectory. What differs is the backend: each member's request waits until every live
member has asked, then :meth:`Policy.generate <stategym.train.policy.Policy.generate>` answers
them all in one batch, each member's key/value cache kept across its rounds (a round feeds
only its observation's tokens: :class:`~stategym.llm.engine.Engine`). Requests are answered in
member order and one seeded generator samples every row, so a batch's tokens depend on the
seed and the members only, never on the event loop's scheduling.

A member also notes, before each round, the environment's ``state_key()`` (GiGPO's step
groups). A scripted teacher (the exploration guard) plays its episodes directly and its
trajectory is laid out as a stream by :func:`stategym.train.streams.demonstration`.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from stategym.kernel.env import Env
from stategym.kernel.errors import AgentStopped
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action, Observation
from stategym.kernel.task import Task
from stategym.kernel.trajectory import Trajectory
from stategym.llm.agent import ChatAgent, Reply, Turn
from stategym.llm.parse import parse
from stategym.rendering.tokens import TokenStream
from stategym.rollout import Episode, adrive, drive
from stategym.train.policy import Generated, Policy
from stategym.train.streams import demonstration

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Member:
    """One episode to play in a group.

    Attributes:
        domain: domain name.
        seed: task seed.
        knobs: the task's knobs.
        sample: which of the task's episodes (seeds the agent's per-round seed).
        teacher: a scripted agent's name to play it ("" : the policy).
        prefix: replies replayed as the first rounds before the policy samples (a
            continuation from a logged state: the environment is deterministic given the
            actions, so replaying them restores the state, and the agent's renderer and
            token stream with it).
    """

    domain: str
    seed: int
    knobs: Knobs
    sample: int = 0
    teacher: str = ""
    prefix: tuple[Generated, ...] = ()


@dataclass(frozen=True, slots=True)
class Rollout:
    """A played episode with what training needs.

    Attributes:
        member: what was played.
        trajectory: its log.
        task: its task.
        ids: ``(L,)`` the episode's token stream.
        mask: ``(L,)`` one mask letter per token.
        spans: ``(T,)`` each round's sampled span.
        logprobs: ``(L,)`` the sampling log-probability of each sampled token (0 elsewhere,
            and 0 on a teacher's tokens: it sampled none).
        keys: ``(T,)`` the environment's state key before each round.
    """

    member: Member
    trajectory: Trajectory
    task: Task
    ids: tuple[int, ...]
    mask: str
    spans: tuple[tuple[int, int], ...]
    logprobs: tuple[float, ...]
    keys: tuple[str, ...]


@dataclass(slots=True)
class Timing:
    """Where a group's wall time went (seconds)."""

    generation: float = 0.0
    total: float = 0.0
    tokens: int = 0

    @property
    def environment(self) -> float:
        """Everything but generation: stepping, rendering, the agents' bookkeeping."""
        return max(0.0, self.total - self.generation)


@dataclass(frozen=True, slots=True)
class Sampling:
    """How the group samples.

    Attributes:
        temperature: sampling temperature (0: greedy).
        max_tokens: most tokens per round.
        max_length: an episode whose prompt would pass this many tokens stops (truncated).
        rendering: ``compact`` or ``messages``.
    """

    temperature: float = 1.0
    max_tokens: int = 48
    max_length: int = 1536
    rendering: str = "compact"


class _Batcher:
    """Answers the live members' requests together, once all of them have asked."""

    def __init__(self, policy: Policy, sampling: Sampling, generator: Any, live: int) -> None:
        self.policy = policy
        self.sampling = sampling
        self.generator = generator
        self.live = live
        self.timing = Timing()
        self._waiting: dict[int, tuple[tuple[int, ...], asyncio.Future[Generated]]] = {}
        self._failed = False
        """A batch failed: its error went to every member waiting on it, and no member
        leaving (cancelled as the loop closes) generates again."""

    async def ask(self, member: int, prompt: tuple[int, ...]) -> Generated:
        future: asyncio.Future[Generated] = asyncio.get_running_loop().create_future()
        self._waiting[member] = (prompt, future)
        self._answer()
        return await future

    def leave(self) -> None:
        self.live -= 1
        self._answer()

    def _answer(self) -> None:
        if self._failed or not self._waiting or len(self._waiting) < self.live:
            return
        order = sorted(self._waiting)
        started = time.perf_counter()
        # A member's cache is kept across its rounds (a stand-in policy without an engine
        # takes no sessions).
        kept = {"sessions": order} if getattr(self.policy, "engine", None) is not None else {}
        waiting, self._waiting = self._waiting, {}
        try:
            replies = self.policy.generate(
                [waiting[m][0] for m in order],
                max_tokens=self.sampling.max_tokens,
                temperature=self.sampling.temperature,
                generator=self.generator,
                **kept,
            )
        except Exception as error:  # not handled: every waiting member's await raises it
            self._failed = True
            for _, future in waiting.values():
                if not future.done():
                    future.set_exception(error)
            return
        self.timing.generation += time.perf_counter() - started
        self.timing.tokens += sum(len(r.ids) for r in replies)
        for member, reply in zip(order, replies, strict=True):
            future = waiting[member][1]
            if not future.done():  # Ctrl-C during the batch: asyncio cancelled its waiters
                future.set_result(reply)


class _MemberBackend:
    """One member's :class:`~stategym.llm.agent.Backend`: its requests go to the batcher."""

    def __init__(
        self, batcher: _Batcher, index: int, env: Env, prefix: tuple[Generated, ...] = ()
    ) -> None:
        self.batcher = batcher
        self.index = index
        self.env = env
        self.prefix = prefix
        self.chat = batcher.policy.chat
        self.keys: list[str] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": "train", "temperature": self.batcher.sampling.temperature}

    def complete_sync(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        raise RuntimeError("a group member is played by the event loop (adrive)")

    async def complete(self, messages: Any, tools: Any, turn: Turn) -> Reply:
        prompt = turn.prompt_ids or ()
        if len(prompt) + self.batcher.sampling.max_tokens > self.batcher.sampling.max_length:
            raise AgentStopped(f"context_length: {len(prompt)} tokens in the episode")
        self.keys.append(self.env.state_key())
        if turn.index < len(self.prefix):  # replayed: no batch waits on it
            generated = self.prefix[turn.index]
        else:
            generated = await self.batcher.ask(self.index, tuple(prompt))
        stops = self.batcher.policy.stops
        text_ids = (
            generated.ids[:-1]
            if generated.stopped and generated.ids[-1] in stops
            else generated.ids
        )
        text = str(self.batcher.policy.tokenizer.decode(list(text_ids), skip_special_tokens=False))
        parsed = parse(text)
        meta: dict[str, Any] = {
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(generated.ids)},
            "finish_reason": "stop" if generated.stopped else "length",
            "completion_token_ids": list(generated.ids),
            "logprobs": list(generated.logprobs),
            "text": text,
        }
        if parsed.errors:
            meta["format_errors"] = list(parsed.errors)
        return Reply(parsed.to_message(f"call_{turn.index}"), meta, parsed.errors)


@dataclass(slots=True)
class _KeyedAgent:
    """A scripted agent whose environment's state key is noted before each round."""

    inner: Any
    env: Env
    name: str = ""
    keys: list[str] = field(default_factory=list)

    def act(self, observation: Observation) -> Action:
        self.keys.append(self.env.state_key())
        return self.inner.act(observation)


def play(
    policy: Policy, members: Sequence[Member], sampling: Sampling, generator: Any
) -> tuple[list[Rollout], Timing]:
    """Play every member (the policy's in lock-step, teachers directly), in member order."""
    started = time.perf_counter()
    _forget(policy)  # caches made with earlier weights are stale
    learners = [i for i, m in enumerate(members) if not m.teacher]
    batcher = _Batcher(policy, sampling, generator, live=len(learners))
    out: dict[int, Rollout] = {}
    for i, member in enumerate(members):
        if member.teacher:
            out[i] = _teach(policy, member, sampling.rendering)
    try:
        results = _run_interruptible(_play_learners(batcher, members, learners, sampling.rendering))
    finally:
        _forget(policy)
    out.update(results)
    batcher.timing.total = time.perf_counter() - started
    return [out[i] for i in range(len(members))], batcher.timing


def _run_interruptible(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run(main)``, with SIGTERM taken as asyncio takes Ctrl-C.

    The loop runs on this thread, and a batch is generated inside a task: a signal handler
    that raises (the CLI's SIGTERM, :class:`stategym.cli.Terminated`) would raise inside that
    task, which asyncio leaves holding the exception ("Task exception was never retrieved"
    after the CLI's one line). asyncio's own Ctrl-C handling cancels the main task instead and
    raises ``KeyboardInterrupt`` once the loop has closed; SIGTERM is routed through it, then
    raised again, to its own handler, outside the loop.
    """
    on_main_thread = threading.current_thread() is threading.main_thread()
    if not on_main_thread or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return asyncio.run(main)  # asyncio does not take Ctrl-C here: nothing to route
    terminated: list[int] = []

    def route(number: int, frame: object) -> None:
        terminated.append(number)
        signal.raise_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, route)
    try:
        return asyncio.run(main)
    except KeyboardInterrupt:
        if not terminated:
            raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    signal.raise_signal(signal.SIGTERM)  # to its own handler, now outside the loop
    raise KeyboardInterrupt  # a handler that returned: stop as Ctrl-C would


async def _play_learners(
    batcher: _Batcher, members: Sequence[Member], learners: Sequence[int], rendering: str
) -> dict[int, Rollout]:
    async def one(index: int) -> Rollout:
        member = members[index]
        env = Env(member.domain, knobs=member.knobs)
        observation, _ = env.reset(seed=member.seed)
        backend = _MemberBackend(batcher, index, env, member.prefix)
        agent = ChatAgent(
            "policy", backend, env.domain, env.task, sample=member.sample, rendering=rendering
        )
        try:
            trajectory = await adrive(Episode(env, agent, observation))
        finally:
            _forget(batcher.policy, index)
            batcher.leave()
        assert agent.tokens is not None  # the backend has a chat template
        return _rollout(member, trajectory, env.task, agent.tokens, backend.keys)

    done = await asyncio.gather(*(one(i) for i in learners))
    return dict(zip(learners, done, strict=True))


def _forget(policy: Policy, member: int | None = None) -> None:
    """Drop one member's kept cache, or all of them (a stand-in policy may keep none)."""
    engine = getattr(policy, "engine", None)
    if engine is not None:
        engine.clear() if member is None else engine.release(member)


def _rollout(
    member: Member, trajectory: Trajectory, task: Task, stream: TokenStream, keys: list[str]
) -> Rollout:
    logprobs = [0.0] * len(stream.ids)
    for record in trajectory.rounds:
        turn = record.model
        if turn is None or turn.span is None or turn.logprobs is None:
            continue
        start = turn.span.start
        logprobs[start : start + len(turn.logprobs)] = list(turn.logprobs)
    spans = tuple(stream.spans[: len(trajectory.rounds)])
    return Rollout(
        member, trajectory, task, tuple(stream.ids), "".join(stream.mask), spans,
        tuple(logprobs), tuple(keys[: len(spans)]),
    )  # fmt: skip


def _teach(policy: Policy, member: Member, rendering: str) -> Rollout:
    from stategym.agents import resolve

    env = Env(member.domain, knobs=member.knobs)
    observation, _ = env.reset(seed=member.seed)
    inner = resolve(env.domain, member.teacher)(env.task)
    agent = _KeyedAgent(inner, env, name=member.teacher)
    trajectory = drive(Episode(env, agent, observation))
    stream = demonstration(trajectory, env.task, policy.chat, rendering)
    return _rollout(member, trajectory, env.task, stream, agent.keys)


__all__ = ["Member", "Rollout", "Sampling", "Timing", "play"]
