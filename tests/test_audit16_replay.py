"""Audit 16C (determinism and replay) and 16B F3 (a stop from outside), each pinned.

- F1: an episode played on a task given to ``reset`` was logged as the seed's task; replay
  played another task (``verify`` blamed a round) and ``score`` rebuilt the wrong one (the
  expert's perfect play on the flipped-priority probe scored -1.0, harmful).
- F2: ``Knobs`` took any value: ``Knobs(dynamics="off")`` played with dynamics on, and a
  ``0`` wrote a log no reader takes.
- F3: ``replay``/``verify`` with an ``env`` of another domain or knobs played that env's task.
- F4: ``restore`` took a snapshot of another task's episode (a bare ``zip()`` error across
  domains).
- 16B F3: a step limit the environment never saw (Gymnasium's ``TimeLimit``) left the
  stopped episode's settlement unpaid; ``max_rounds`` tells the environment.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import gymnasium
import numpy as np
import pytest

import stategym  # noqa: F401  (registers the Gymnasium ids)
from stategym.agents import scripted
from stategym.kernel.counterfactual import FLIP, flip_priorities
from stategym.kernel.env import Env
from stategym.kernel.errors import TrajectoryError
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Say, call, calls
from stategym.kernel.trajectory import GIVEN_TASK, dumps, loads, replay
from stategym.kernel.verify import verify
from stategym.metrics import dense_reward, score
from stategym.registry import get_domain


def _play(env: Env, task: Any) -> Any:
    observation, _ = env.reset(options={"task": task})
    agent = scripted(env.domain, "expert")(env.task)
    while not env.done:
        observation = env.step(agent.act(observation)).observation
    return loads(dumps(env.trajectory))


def test_the_flipped_probe_played_by_hand_is_logged_as_the_probe() -> None:
    env = Env("travel")
    env.reset(seed=7)
    flipped = flip_priorities(env.task)
    assert flipped is not None
    trajectory = _play(env, flipped)
    assert trajectory.run.probe == FLIP and "task" not in trajectory.meta
    assert replay(trajectory).state_key() == trajectory.digest and verify(trajectory) == []
    assert score(trajectory).composite == score(trajectory, flipped).composite == 1.0


def test_a_task_no_seed_generates_is_marked_and_needs_the_task() -> None:
    env = Env("travel")
    env.reset(seed=7)
    given = replace(env.task, max_rounds=env.task.max_rounds - 1)
    trajectory = _play(env, given)
    assert trajectory.meta["task"] == GIVEN_TASK and trajectory.run.probe is None
    for needs_the_task in (lambda: score(trajectory), lambda: replay(trajectory)):
        with pytest.raises(TrajectoryError, match=r"played a task given to Env\.reset"):
            needs_the_task()
    assert verify(trajectory)[0].startswith("cannot be replayed: ")
    assert replay(trajectory, task=given).state_key() == trajectory.digest
    assert verify(trajectory, task=given) == []
    assert score(trajectory, given).composite == 1.0


def test_the_seeds_own_task_given_back_is_not_marked() -> None:
    env = Env("bank")
    env.reset(seed=2)
    trajectory = _play(env, env.task)
    assert "task" not in trajectory.meta and trajectory.run.probe is None
    assert verify(trajectory) == []


@pytest.mark.parametrize(
    "other", [Env("shop"), Env("travel", knobs=Knobs(dynamics=False))], ids=["domain", "knobs"]
)
def test_replay_refuses_an_environment_of_another_task(other: Env) -> None:
    env = Env("travel")
    env.reset(seed=2)
    trajectory = _play(env, env.task)
    with pytest.raises(TrajectoryError, match=r"the environment given plays .*; this trajectory"):
        replay(trajectory, other)
    assert verify(trajectory, other)[0].startswith("cannot be replayed: the environment given")
    with pytest.raises(TrajectoryError, match="the task given is shop/"):
        replay(trajectory, task=_task(Env("shop"), 2))


def _task(env: Env, seed: int) -> Any:
    """Task ``seed`` of ``env`` (which it resets to it)."""
    env.reset(seed=seed)
    return env.task


@pytest.mark.parametrize("value", ["off", 0, 1, None, 0.0], ids=repr)
def test_a_knob_is_a_bool(value: Any) -> None:
    with pytest.raises(TypeError, match=r"Knobs\.dynamics must be True or False"):
        Knobs(dynamics=value)


def test_numpy_bools_are_read_as_bools() -> None:
    knobs = Knobs(dynamics=np.False_, stateful=np.True_)
    assert knobs == Knobs(dynamics=False) and type(knobs.dynamics) is bool
    env = Env("travel", knobs=knobs)
    trajectory = _play(env, _task(env, 3))
    assert loads(dumps(trajectory)) == trajectory


def test_a_snapshot_restores_only_into_the_episode_it_was_taken_in() -> None:
    env = Env("shop")
    env.reset(seed=4)
    copy_before = copy.deepcopy(env)  # the same episode, no round played yet
    env.step(Say("What is your budget?"))
    snapshot = env.snapshot()
    env.reset(seed=5)
    key = env.state_key()
    with pytest.raises(ValueError, match="the snapshot was taken in an episode of shop/4/"):
        env.restore(snapshot)
    assert env.state_key() == key
    travel = Env("travel")
    travel.reset(seed=4)
    with pytest.raises(ValueError, match="an episode of shop/4/"):
        travel.restore(snapshot)
    env.reset(seed=4)  # the same task, a later episode (16D F3)
    env.step(Say("What is your budget?"))
    with pytest.raises(ValueError, match="taken in another episode"):
        env.restore(snapshot)
    other = Env("shop")  # the same task in another environment (16E F1)
    other.reset(seed=4)
    other.step(Say("What is your budget?"))
    with pytest.raises(ValueError, match="taken in another episode"):
        other.restore(snapshot)
    # a copy is in the same episode: the snapshot, which keeps its rounds since audit 18A F1,
    # takes it forward to the original's round (it used to be refused: the log would have
    # kept the copy's 0 rounds under the world of 1), and back again after a round of its own
    copy_before.restore(snapshot)
    assert copy_before.state_key() == snapshot_key(snapshot, "shop", 4)
    assert verify(copy_before.trajectory) == []
    copy_before.step(Say("What is your budget?"))
    copy_before.restore(snapshot)
    assert copy_before.state_key() == snapshot_key(snapshot, "shop", 4)


def snapshot_key(snapshot: Any, domain: str, seed: int) -> str:
    """The state key of a fresh episode of ``domain`` seed ``seed`` after the one round the
    snapshot test plays."""
    env = Env(domain)
    env.reset(seed=seed)
    env.step(Say("What is your budget?"))
    return env.state_key()


def test_a_snapshot_of_the_original_task_is_refused_in_its_probe() -> None:
    """The flipped probe has the original's id; the user's values would be the original's."""
    env = Env("travel")
    env.reset(seed=7)
    original = env.task
    env.step(Say("Which of your wishes matters most?"))
    snapshot = env.snapshot()
    env.reset(options={"task": flip_priorities(original)})
    env.step(Say("What is your budget?"))
    with pytest.raises(ValueError, match="taken in another episode"):
        env.restore(snapshot)
    assert verify(env.trajectory) == []


def test_a_task_refused_at_reset_leaves_the_episode_as_it_was() -> None:
    """A given task with an event on a table the world lacks changed the task (and the
    episode's token) before it was refused (16E F3)."""
    from stategym.kernel.task import Event, EventKind

    env = Env("travel")
    env.reset(seed=2)
    env.step(Say("What is your budget?"))
    snapshot, key, task = env.snapshot(), env.state_key(), env.task
    event = Event(1, EventKind.SET, "no_such_table", "k", "f", 1)
    with pytest.raises(ValueError, match="no table 'no_such_table'"):
        env.reset(options={"task": replace(task, events=(event,))})
    assert env.task is task and env.state_key() == key
    env.restore(snapshot)
    env.step(Say("Which fare type would you like?"))
    assert verify(env.trajectory) == []


def test_an_environment_and_a_snapshot_pickled_before_stop_42_still_play() -> None:
    """Their state had no episode token, probe mark or round limit (16E F4)."""
    env = Env("travel")
    env.reset(seed=2)
    env.step(Say("What is your budget?"))
    snapshot = copy.copy(env.snapshot())
    object.__delattr__(snapshot, "episode")
    object.__delattr__(snapshot, "task")
    state = env.__getstate__()
    for name in ("_episode", "_probe", "_given", "_round_limit"):
        del state[name]
    old = Env.__new__(Env)
    old.__setstate__(state)
    old.step(Say("Which fare type would you like?"))
    old.restore(snapshot)
    old.step(Say("Which fare type would you like?"))
    assert verify(old.trajectory) == []
    old.reset(seed=3)  # and starts new episodes
    assert old.snapshot().episode


def test_a_mapping_of_knobs_is_one_setting_not_a_schedule() -> None:
    """``run_many(knobs={"dynamics": False})`` played with every knob on (16E F5)."""
    from stategym.rollout.spec import episode_specs, knobs_for

    off = Knobs(dynamics=False)
    for given in ({"dynamics": False}, "dynamics=off", off):
        assert {s.knobs for s in episode_specs("travel", "expert", [0, 1], given)} == {off}
    schedule = knobs_for({1: off})
    assert (schedule(0), schedule(1)) == (Knobs(), off)
    with pytest.raises(ValueError, match="no knob 1"):
        knobs_for({1: off, "dynamics": False})
    with pytest.raises(TypeError, match="a knob schedule maps seeds to Knobs"):
        knobs_for({1: "dynamics=off"})


def test_the_core_env_takes_knobs_in_every_form() -> None:
    """Its own knobs too: text and a mapping were an AttributeError (16D F7)."""
    wanted = Knobs(dynamics=False)
    for given in (wanted, "dynamics=off", {"dynamics": False}, {"dynamics": "off"}):
        assert Env("travel", knobs=given).knobs == wanted
    with pytest.raises(TypeError, match="knobs must be Knobs, their text"):
        Env("travel", knobs=3)  # type: ignore[arg-type]


def test_sft_refuses_an_episode_of_a_given_task(tmp_path: Any) -> None:
    """It learned the episode against the seed's task, which score refuses (16D F4); a probe
    is learned against its flipped task."""
    from stategym.kernel.errors import UsageError
    from stategym.kernel.trajectory import write_jsonl
    from stategym.train.data import run_demonstrations

    env = Env("travel")
    env.reset(seed=7)
    flipped = flip_priorities(env.task)
    probe = _play(env, flipped)
    write_jsonl(tmp_path / "trajectories.jsonl", [probe])
    ((_, task),) = run_demonstrations(tmp_path)
    assert task == flipped
    given = _play(env, replace(env.task, max_rounds=env.task.max_rounds - 1))
    write_jsonl(tmp_path / "trajectories.jsonl", [probe, given])
    with pytest.raises(UsageError, match=r"episode 2 \(travel, seed 7\) played a task given"):
        run_demonstrations(tmp_path)


@pytest.mark.parametrize("limit", [1, 2, 5])
def test_a_round_limit_the_environment_is_told_settles_the_reward(limit: int) -> None:
    env = gymnasium.make("stategym/Travel-v0", reward="dense", max_rounds=limit)
    env.reset(seed=3)
    actions = [
        {"role": "assistant", "content": "What is your budget for this flight?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "get_profile", "arguments": "{}"}}
        ]},
    ] * 3  # fmt: skip
    total, steps, truncated = 0.0, 0, False
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action)
        total += reward
        steps += 1
        if terminated or truncated:
            break
    core = env.unwrapped.core  # type: ignore[attr-defined]
    assert truncated and steps == limit == len(core.rounds)
    stopped = score(core.trajectory, core.task).composite
    assert total == pytest.approx(stopped, abs=1e-9)
    assert stopped == score(core.stopped_trajectory(), core.task).composite


def test_a_round_limit_is_checked_before_anything_changes() -> None:
    env = Env("travel", reward=dense_reward)
    env.reset(seed=1)
    key = env.state_key()
    for bad, error in (("3", TypeError), (True, TypeError), (0, ValueError), (2.0, TypeError)):
        with pytest.raises(error, match="max_rounds"):
            env.reset(seed=2, options={"max_rounds": bad})
        assert env.state_key() == key
    with pytest.raises(ValueError, match="max_rounds must be at least 1"):
        gymnasium.make("stategym/Travel-v0", max_rounds=0)
    env.reset(seed=2, options={"max_rounds": 100})  # above the task's budget: the budget
    assert env.step(calls(call("finish", answer="done"))).terminated


def test_a_reset_refused_late_leaves_the_tools_and_the_task_as_they_were() -> None:
    """A given task of other knobs with a request value that cannot be hashed was refused
    after its tools, task and episode token were set (16F F1)."""
    env = Env("travel")
    env.reset(seed=7)
    env.step(Say("What is your budget?"))
    snapshot, task, tools = env.snapshot(), env.task, env.tool_schemas
    stateless = _task(Env("travel", knobs=Knobs(stateful=False)), 7)
    request = replace(stateless.request, given={**stateless.request.given, "seat": {"aisle"}})
    with pytest.raises(TypeError, match="unhashable"):
        env.reset(options={"task": replace(stateless, request=request)})
    too_long = replace(task, max_rounds="5")
    with pytest.raises(TypeError):
        env.reset(options={"task": too_long, "max_rounds": 3})
    assert env.task is task and env.tool_schemas == tools
    env.restore(snapshot)
    env.step(Say("Which fare type would you like?"))
    assert verify(env.trajectory) == []


def test_a_schedule_keyed_by_numpy_seeds_is_a_schedule() -> None:
    from stategym.rollout.spec import episode_specs

    off = Knobs(dynamics=False)
    specs = episode_specs("travel", "expert", [1, 2], {np.int64(1): off})
    assert [(s.seed, s.knobs) for s in specs] == [(1, off), (2, Knobs())]


@pytest.mark.parametrize("counter", [None, 1], ids=["no token", "86e6525's counter"])
def test_an_environment_unpickled_from_before_the_token_gets_its_own(counter: int | None) -> None:
    """Else every such environment shared the empty token, or one counter value (86e6525
    counted resets from 1 in every environment), and took another's snapshots."""
    olds = []
    for _ in range(2):
        env = Env("travel")
        env.reset(seed=7)
        state = env.__getstate__()
        if counter is None:
            del state["_episode"]
        else:
            state["_episode"] = counter
        old = Env.__new__(Env)
        old.__setstate__(state)
        olds.append(old)
    other = Env("travel")
    other.reset(seed=7)
    with pytest.raises(ValueError, match="taken in another episode"):
        other.restore(olds[0].snapshot())
    with pytest.raises(ValueError, match="taken in another episode"):
        olds[1].restore(olds[0].snapshot())
    olds[0].restore(olds[0].snapshot())


def test_a_search_returns_to_a_state_it_saved_on_an_abandoned_branch() -> None:
    """Audit 18A F1: snapshot, play branch A (book and pay), snapshot, go back, play branch B
    (two reads), then return to A's snapshot. The log kept B's rounds under A's world: a
    world that paid $530 with no payment logged, a log scored R 0.458, dense rewards summing
    to 0.744, and a replay that was not the world."""
    from stategym.agents import resolve
    from stategym.rollout import run_episode

    expert = run_episode(Env("travel"), resolve(get_domain("travel"), "expert"), seed=0)
    actions = [r.action() for r in expert.rounds]  # 5: book_and_pay, 6: finish
    env = Env("travel", reward=dense_reward)
    env.reset(seed=0)
    paid = [env.step(action).reward for action in actions[:5]]
    early = env.snapshot()
    paid.append(env.step(actions[5]).reward)
    branch_a = env.snapshot()
    env.restore(early)
    for _ in range(2):
        env.step(calls(call("get_profile")))
    env.restore(branch_a)
    paid.append(env.step(actions[6]).reward)
    trajectory = env.trajectory
    assert [r.action() for r in trajectory.rounds] == actions
    assert sum(c.amount for r in trajectory.rounds for c in r.charges) == 530
    assert replay(trajectory).state_key() == env.state_key()
    assert verify(trajectory) == []
    card = score(trajectory, env.task)
    assert card.composite == score(expert).composite == pytest.approx(sum(paid))
