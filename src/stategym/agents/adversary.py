"""Adversaries: the expert with one exploit added, each aimed at a hole the metric once had.

Each is a :class:`~stategym.agents.style.Style` switch, played by wrapping the domain
expert (the habit is the same in every domain, so it is written once, here) rather than by
each domain's expert:

* ``fish``: before its proposal, propose that many options the user rejects (the user is
  treated as an oracle to query for the answer);
* ``pad``: ``"empty"`` plays empty rounds instead of ``finish`` until the episode is
  truncated; ``"invalid"`` plays ten invalid rounds before ``finish``; ``"open"`` asks open
  questions ("Which option should I book?") instead of ``finish`` until truncated;
  ``"bad-finish"`` plays ten rounds of a malformed ``finish`` (a format error: the episode
  goes on) before ``finish``;
* ``damage``: after the last commit, destroy what the episode created: every write or commit
  tool that takes an id some earlier result returned (cloud: ``delete_snapshot`` of the
  snapshot that backs the deleted volume);
* ``harvest``: after each scheduled change of the world, re-read something the change did not
  touch (the first read the agent made);
* ``lucky``: look ahead by playing the expert on a private copy of the episode, then play its
  rounds with each read-only round merged into the round before it: every value guessed, every
  guess right;
* ``misreport``: in a task judged on the world, end with a ``finish`` whose answer reports
  another option done than the one the world is committed to ("Done! AQ348 is confirmed."
  after paying for AQ449, or after paying for nothing): the hallucinated completion report.

The scripted agents know the task (as the oracle does), which is what lets them hit the
exploit on purpose; the metric sees only the log.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from stategym.kernel.env import Env
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall
from stategym.kernel.task import Task
from stategym.kernel.tools import Effect, Tool

from .base import Agent
from .style import Style

INVALID_ROUNDS = 10
"""Invalid rounds a ``pad="invalid"`` (or malformed ``finish`` rounds a ``pad="bad-finish"``)
agent plays before it finishes."""

OPEN_QUESTIONS = (
    "Which option should I book?",
    "What are all your constraints?",
    "Which one should I pick for you?",
)
"""What a ``pad="open"`` agent asks, in turn, instead of finishing: questions no single fact
answers (the user reads each as open)."""

BAD_FINISH = CallBatch((ToolCall("finish", {"bogus": 1}),))
"""A ``pad="bad-finish"`` padding round: a ``finish`` the environment rejects (an unknown
argument), so the episode goes on."""

NOT_A_BATCH = "not a batch"
"""What an invalid padding round sends as its calls: no round at all (a ``bad_message``
invalid round, not a call that fails)."""


def _is_finish(action: Action) -> bool:
    return isinstance(action, CallBatch) and any(c.name == "finish" for c in action.calls)


class Adversary:
    """Plays ``inner`` (the styled expert) with the adversarial habits of ``style`` added.

    Inserted rounds are played between the inner agent's own; their observations are not
    shown to it (it sees the observation of its own last action), so its plan is unchanged.
    """

    def __init__(self, inner: Agent, task: Task, style: Style, tools: tuple[Tool, ...]) -> None:
        self.name = inner.name
        self.inner = inner
        self.task = task
        self.style = style
        self.effects = {t.name: t.effect for t in tools}
        self.params = {t.name: tuple(p.name for p in t.params if p.required) for t in tools}
        self.queue: list[Action] = []
        self.held: Observation | None = None
        self.created: dict[str, list[str]] = {}
        """Ids that earlier write and commit results returned, by key (``snapshot_id``...)."""
        self.first_read: ToolCall | None = None
        self.fished = False
        self.clock = 0
        self.fired = 0
        self.finished = False
        self.padded = 0

    def act(self, observation: Observation) -> Action:
        self._learn(observation)
        if self.queue:
            return self.queue.pop(0)
        if self.held is not None:  # the inner agent answers its own last action's result
            observation, self.held = self.held, None
        if self.finished:
            return self._pad_round()
        action = self.inner.act(observation)
        self._remember(action)
        planned = self._bend(action)
        first, rest = planned[0], planned[1:]
        if rest:
            self.queue = rest
        return first

    def _bend(self, action: Action) -> list[Action]:
        style = self.style
        if style.fish and isinstance(action, Say) and not self.fished:
            wrong = self._wrong_proposals(action.text)
            if wrong:
                self.fished = True
                return [*wrong, action]
        before: list[Action] = []
        if style.harvest and self._event_fired() and self.first_read is not None:
            before.append(CallBatch((self.first_read,)))
        if _is_finish(action):
            if style.misreport:
                action = self._misreported(action)
            if style.damage:
                destroy = self._destroy()
                if destroy:
                    before.append(CallBatch(destroy))
            if style.pad == "invalid":
                before += [CallBatch(cast(Any, NOT_A_BATCH))] * INVALID_ROUNDS
            elif style.pad == "bad-finish":
                before += [BAD_FINISH] * INVALID_ROUNDS
            elif style.pad in ("empty", "open"):
                self.finished = True
                return [*before, self._pad_round()]
        return [*before, action]

    def _pad_round(self) -> Action:
        """A round played instead of ``finish``: empty, or the next open question."""
        if self.style.pad != "open":
            return CallBatch(())
        self.padded += 1
        return Say(OPEN_QUESTIONS[(self.padded - 1) % len(OPEN_QUESTIONS)])

    def _learn(self, observation: Observation) -> None:
        self.clock = observation.clock
        for result in observation.results:
            made = self.effects.get(result.name) in (Effect.WRITE, Effect.COMMIT)
            if made and result.error is None and isinstance(result.content, dict):
                for key, value in result.content.items():
                    if key.endswith("_id") and isinstance(value, str):
                        self.created.setdefault(key, []).append(value)

    def _remember(self, action: Action) -> None:
        if self.first_read is None and isinstance(action, CallBatch):
            reads = [c for c in action.calls if self.effects.get(c.name) is Effect.READ]
            if reads and isinstance(reads[0].arguments, dict):
                self.first_read = ToolCall(reads[0].name, dict(reads[0].arguments))

    def _event_fired(self) -> bool:
        """A scheduled change fired since the agent last looked (it knows the schedule)."""
        fired = sum(1 for e in self.task.events if e.at <= self.clock)
        if fired > self.fired:
            self.fired = fired
            return True
        return False

    def _wrong_proposals(self, text: str) -> list[Action]:
        truth = self.task.truth
        named = [o for o in truth.satisfaction if o in text]
        if len(named) != 1:
            return []
        wrong = sorted(o for o in truth.satisfaction if o not in truth.best and o not in text)
        return [Say(text.replace(named[0], o)) for o in wrong[: self.style.fish]]

    def _misreported(self, action: Action) -> Action:
        """``action`` (a finish) with an answer that reports as done an option that is not
        best, which the expert never commits; left as it is where every option is best, and
        in a task judged on its answer (where the answer is the decision, not a report)."""
        truth = self.task.truth
        wrong = sorted(o for o in truth.satisfaction if o not in truth.best)
        if not wrong or self.task.judged_by_answer:
            return action
        return CallBatch((ToolCall("finish", {"answer": f"Done! {wrong[0]} is confirmed."}),))

    def _destroy(self) -> tuple[ToolCall, ...]:
        """Every write or commit tool whose one required argument is an id that an earlier
        write or commit returned (what the episode created: a snapshot, a booking...)."""
        calls = []
        for name, keys in self.params.items():
            if self.effects.get(name) is Effect.READ or len(keys) != 1:
                continue
            for value in dict.fromkeys(self.created.get(keys[0], ())):
                calls.append(ToolCall(name, {keys[0]: value}))
        return tuple(calls)


class LuckyGuesser:
    """Replays the expert's rounds with each read-only round merged into the round before.

    The expert is first played on a private copy of the episode, so every merged call's
    arguments (values not observed yet when the merged round is played) are right.
    """

    def __init__(self, name: str, rounds: list[Action]) -> None:
        self.name = name
        self.plan: Iterator[Action] = iter(rounds)

    def act(self, observation: Observation) -> Action:
        return next(self.plan, CallBatch((ToolCall("finish", {}),)))


def look_ahead(env: Env, task: Task, inner: Agent) -> list[Action]:
    """The expert's actions on ``task``, each read-only call round merged into the
    read-only call round before it (the lookups, played at once on guessed values)."""
    observation, _ = env.reset(options={"task": task})
    actions: list[Action] = []
    while True:
        action = inner.act(observation)
        actions.append(action)
        step = env.step(action)
        observation = step.observation
        if step.terminated or step.truncated:
            break
    effects = {t.name: t.effect for t in env.domain.tools}

    def _reads(action: Action) -> bool:
        return isinstance(action, CallBatch) and all(
            effects.get(c.name) is Effect.READ for c in action.calls
        )

    merged: list[Action] = []
    for action in actions:
        reads = _reads(action)
        previous = merged[-1] if merged else None
        if reads and isinstance(previous, CallBatch) and previous.calls and _reads(previous):
            assert isinstance(action, CallBatch)
            merged[-1] = CallBatch(previous.calls + action.calls)
        else:
            merged.append(action)
    return merged
