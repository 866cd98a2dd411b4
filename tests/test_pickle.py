"""Environments pickle and deep-copy mid-episode, and the copy plays on exactly as the original.

Ray, multiprocessing and several trainers ship environments between processes; a copy that
drifts (another observation, another log byte, another state) would silently corrupt them.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
from collections.abc import Callable

import pytest

from stategym.agents import resolve
from stategym.kernel.domain import Domain, lookup
from stategym.kernel.env import Env
from stategym.kernel.errors import StateGymError
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action, Observation
from stategym.kernel.trajectory import dumps
from stategym.registry import DOMAINS, get_domain

SYNTHETIC = ("synth:chain2+fanout3+askgate+verifycommit", "synth:chain1+askgate+conflict")
NAMES = (*DOMAINS, *SYNTHETIC)
KNOBS = {"on": Knobs(), "off": Knobs.parse("all_off")}
COPIES: dict[str, Callable[[Env], Env]] = {
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
    "deepcopy": copy.deepcopy,
}


def _played(name: str, knobs: Knobs, seed: int, agent: str) -> tuple[Env, list[Action]]:
    """An environment ``agent`` played half-way, and the actions that finish its episode
    (the first task from ``seed`` on whose episode has at least two rounds)."""
    for task_seed in range(seed, seed + 20):
        env = Env(name, knobs=knobs)
        observation, _ = env.reset(seed=task_seed)
        player = resolve(env.domain, agent)(env.task)
        actions: list[Action] = []
        while not env.done:  # the whole episode's actions, played once ...
            actions.append(player.act(observation))
            observation = env.step(actions[-1]).observation
        if len(actions) >= 2:
            break
    env = Env(name, knobs=knobs)  # ... then half of them again on a fresh environment
    env.reset(seed=task_seed)
    half = len(actions) // 2
    _finish(env, actions[:half])
    return env, actions[half:]


def _finish(env: Env, actions: list[Action]) -> list[Observation]:
    return [env.step(action).observation for action in actions]


@pytest.mark.parametrize("how", sorted(COPIES))
@pytest.mark.parametrize("knobs", sorted(KNOBS))
@pytest.mark.parametrize("name", NAMES)
def test_a_copy_mid_episode_continues_identically(name: str, knobs: str, how: str) -> None:
    for seed, agent in ((0, "expert"), (1, "random")):
        env, rest = _played(name, KNOBS[knobs], seed, agent)
        assert env.rounds and rest, "the copy is taken mid-episode"
        twin = COPIES[how](env)
        assert twin is not env and twin.world is not env.world
        assert twin.state_key() == env.state_key()
        assert _finish(twin, rest) == _finish(env, rest)
        assert env.done and twin.done
        assert dumps(twin.trajectory) == dumps(env.trajectory)
        assert twin.state_key() == env.state_key()


def test_the_copy_is_independent_of_the_original() -> None:
    env, rest = _played("travel", Knobs(), 0, "expert")
    key = env.state_key()
    twin = copy.deepcopy(env)
    _finish(twin, rest)
    assert env.state_key() == key and not env.done


@pytest.mark.parametrize("name", ["travel", SYNTHETIC[0]])
def test_a_registered_domain_travels_by_name(name: str) -> None:
    domain = get_domain(name)
    assert pickle.loads(pickle.dumps(domain)) is domain
    assert copy.deepcopy(domain) is domain and copy.copy(domain) is domain
    assert lookup(name) is domain


def test_module_level_tools_pickle_by_reference_and_closures_say_why_not() -> None:
    tool = get_domain("travel").tools[0]
    assert pickle.loads(pickle.dumps(tool)) is tool
    with pytest.raises(pickle.PicklingError, match="pickle its domain"):
        pickle.dumps(get_domain(SYNTHETIC[0]).tools[0])


def test_an_unregistered_domain_pickles_by_value() -> None:
    from dataclasses import replace

    travel = get_domain("travel")
    custom: Domain = replace(travel, title="a copy")
    restored = pickle.loads(pickle.dumps(custom))
    assert restored is not custom and restored.title == "a copy"
    assert restored.tools == travel.tools


def test_an_environment_unpickles_in_a_fresh_process() -> None:
    # A fresh interpreter has imported nothing: unpickling must install the registry itself.
    env, rest = _played(SYNTHETIC[0], Knobs(), 2, "expert")
    finished = copy.deepcopy(env)
    expected = _finish(finished, rest)
    script = (
        "import pickle, sys\n"
        "env, rest = pickle.loads(sys.stdin.buffer.read())\n"
        "observations = [env.step(a).observation for a in rest]\n"
        "sys.stdout.buffer.write(pickle.dumps((observations, env.state_key())))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        input=pickle.dumps((env, rest)),
        capture_output=True,
        check=True,
    )
    observations, key = pickle.loads(result.stdout)
    assert observations == expected
    assert key == finished.state_key()


def test_no_registry_installed_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import stategym.kernel.domain

    monkeypatch.setattr(stategym.kernel.domain, "_REGISTRY", None)
    with pytest.raises(StateGymError, match="no domain registry installed"):
        Env("travel")


def _closure_resolver(domain: Domain, agent: str, **options: object) -> Callable[..., object]:
    """A resolver whose factory is a closure: standard pickle cannot ship it."""
    expert = resolve(domain, agent)
    return lambda task: expert(task)


def test_an_agent_source_travels_as_its_recipe_not_its_factories() -> None:
    # Worker processes and Ray get the Agents by standard pickle; a resolved factory may
    # hold a loaded model or a connection (here: a closure), so only the recipe travels.
    from stategym.rollout import Agents, EpisodeSpec, play_spec

    spec = EpisodeSpec("travel", 3, "expert")
    agents = Agents(resolver=_closure_resolver)
    agents.factory(spec)
    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(agents.factory(spec))
    twin = pickle.loads(pickle.dumps(agents))
    assert dumps(play_spec(spec, twin)) == dumps(play_spec(spec, agents))


@pytest.mark.parametrize("name", ["shop", SYNTHETIC[1]])
def test_specs_and_trajectories_cross_a_process_boundary_exactly(name: str) -> None:
    from stategym.rollout import Agents, EpisodeSpec, play_spec
    from stategym.rollout.workers import Spread

    spec = EpisodeSpec(name, 5, "random", Knobs.parse("dynamics=off"), tags=(("cell", "x"),))
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert hash(pickle.loads(pickle.dumps(spec))) == hash(spec)
    trajectory = play_spec(spec, Agents())
    assert dumps(pickle.loads(pickle.dumps(trajectory))) == dumps(trajectory)
    assert pickle.loads(pickle.dumps(Spread(2, True, "auto"))) == Spread(2, True, "auto")
