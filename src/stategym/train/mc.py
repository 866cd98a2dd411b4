"""Monte-Carlo values for the ``mc`` credit: continuations sampled from logged states.

At an episode's decision rounds (:func:`decision_rounds`: each round that commits, and the
first question to the user) the trainer estimates ``V(s_t)``, the value of the state the
round was decided in, by playing ``K`` continuations from ``s_t`` with the current policy.

Restoring ``s_t``. The continuation is a new lock-step member whose first ``t`` replies are
the logged episode's own (:attr:`~stategym.train.group.Member.prefix`): the environment and
the simulated user are deterministic given the actions (the dynamics are seeded by the
task), so replaying the actions restores the world, and replaying the *tokens* restores the
agent with it (its renderer's handles and its token stream), which a snapshot of the
environment alone would not. :func:`values` checks the restore: the replayed state keys
must equal the logged ones up to ``s_t``.

The state every member of a group starts in, ``s_0``, needs no continuations: the group's
own learner episodes are ``G`` samples from it, so ``V(s_0)`` is their mean return (the
group baseline). The pure estimator is :mod:`stategym.train.values`; this module only
plays.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from stategym.kernel.tools import Effect
from stategym.kernel.trajectory import RoundKind, Trajectory
from stategym.metrics.credit import credit as credit_of
from stategym.train.group import Rollout, Sampling, play
from stategym.train.policy import Generated, Policy
from stategym.train.values import continuation_return, mc_value


def decision_rounds(trajectory: Trajectory) -> tuple[int, ...]:
    """Rounds decided in a decision state: every round with a commit, and the first question.

    >>> from stategym import Env, run_episode
    >>> from stategym.agents import resolve
    >>> env = Env("synth:askgate1")
    >>> t = run_episode(env, resolve(env.domain, "expert"), 4)
    >>> [(i, t.rounds[i].kind.value) for i in decision_rounds(t)]
    [(0, 'say'), (2, 'calls')]
    """
    out = []
    asked = False
    for record in trajectory.rounds:
        first_question = record.kind is RoundKind.SAY and not asked
        asked = asked or record.kind is RoundKind.SAY
        commits = any(c.effect is Effect.COMMIT for c in record.calls)
        if first_question or commits:
            out.append(record.index)
    return tuple(out)


def replayed(rollout: Rollout, rounds: int, stops: Collection[int]) -> tuple[Generated, ...]:
    """The rollout's first ``rounds`` replies, as a continuation replays them."""
    out = []
    for start, end in rollout.spans[:rounds]:
        ids = rollout.ids[start:end]
        out.append(Generated(ids, rollout.logprobs[start:end], bool(ids) and ids[-1] in stops))
    return tuple(out)


def values(
    policy: Policy,
    rollouts: Sequence[Rollout],
    group: int,
    samples: int,
    sampling: Sampling,
    generator: Any,
) -> list[list[float | None]]:
    """Every rollout's ``V(s_t)`` at its decision rounds and ``s_0`` (else ``None``).

    Args:
        policy: the current policy (plays the continuations).
        rollouts: the iteration's episodes, ``group`` consecutive ones per task.
        group: episodes per task.
        samples: ``K`` continuations per decision state.
        sampling: how the continuations sample.
        generator: the torch generator the continuations draw from.

    Returns:
        One ``(T_i,)`` list per rollout.

    Raises:
        RuntimeError: a replayed prefix did not restore the logged state (a bug: the
            environment must be deterministic given the actions).
    """
    out: list[list[float | None]] = [[None] * len(r.spans) for r in rollouts]
    for g in range(0, len(rollouts), group):
        own = [sum(credit_of(r.trajectory, r.task).rewards) for r in rollouts[g : g + group]]
        learners = [x for x, r in zip(own, rollouts[g : g + group], strict=True)
                    if not r.member.teacher]  # fmt: skip
        for i in range(g, g + group):
            if learners and out[i]:
                out[i][0] = mc_value(learners)
    asks: list[tuple[int, int]] = []
    members = []
    for i, rollout in enumerate(rollouts):
        for t in decision_rounds(rollout.trajectory):
            if t == 0 or t >= len(rollout.spans):
                continue
            if rollout.spans[t][0] + sampling.max_tokens > sampling.max_length:
                continue  # a policy could not decide there (a teacher's long episode)
            prefix = replayed(rollout, t, policy.stops)
            base = replace(rollout.member, teacher="", prefix=prefix)
            members += [replace(base, sample=rollout.member.sample * samples + k)
                        for k in range(samples)]  # fmt: skip
            asks.append((i, t))
    if not members:
        return out
    continuations, _ = play(policy, members, sampling, generator)
    for n, (i, t) in enumerate(asks):
        played = continuations[n * samples : (n + 1) * samples]
        returns = []
        for c in played:
            if c.keys[: t + 1] != rollouts[i].keys[: t + 1]:
                raise RuntimeError(f"replaying {t} rounds of seed {c.member.seed} diverged")
            returns.append(continuation_return(credit_of(c.trajectory, c.task).rewards, t))
        out[i][t] = mc_value(returns)
    return out


__all__ = ["decision_rounds", "replayed", "values"]
