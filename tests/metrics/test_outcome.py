"""The outcome view reported beside decision quality, and the package's public names."""

from __future__ import annotations

import stategym.metrics
from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.metrics import outcome_of, score
from stategym.registry import get_domain
from stategym.rollout import run_episode


def test_outcome_reads_the_logged_outcome_and_the_clock():
    domain = get_domain("travel")
    env = Env(domain)
    for agent in ("expert", "shotgun", "all-serial"):
        trajectory = run_episode(env, scripted(domain, agent), 4)
        view = outcome_of(trajectory)
        logged = trajectory.outcome
        assert logged is not None
        assert (view.goal_reached, view.spent, view.refunded, view.lost) == (
            logged.goal_reached,
            logged.spent,
            logged.refunded,
            logged.lost,
        )
        assert view.rounds == len(trajectory.rounds)
        assert view.clock == env.world.clock == sum(r.latency for r in trajectory.rounds)
        assert score(trajectory, env.task).outcome == view


def test_slower_agents_take_more_time_on_the_clock():
    domain = get_domain("travel")
    env = Env(domain)
    fast = outcome_of(run_episode(env, scripted(domain, "expert"), 2))
    slow = outcome_of(run_episode(env, scripted(domain, "all-serial"), 2))
    assert slow.clock > fast.clock and slow.rounds > fast.rounds


def test_the_public_names_exist():
    for name in stategym.metrics.__all__:
        assert hasattr(stategym.metrics, name), name
