"""The Gymnasium text interface: registration, ``check_env``, text actions and observations."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from typing import Any

import gymnasium
import orjson
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given
from hypothesis import strategies as st

import stategym
from stategym import Env, Knobs
from stategym.agents import scripted
from stategym.gym import CHARSET, MAX_OBSERVATION, StateGymEnv, encode_messages, register_envs
from stategym.kernel.domain import Domain
from stategym.kernel.protocol import Observation, action_to_message
from stategym.rollout import run_episode


def _make(domain: Domain, **kwargs: Any) -> Any:
    assert domain.env_id.startswith("stategym/") and domain.env_id.endswith("-v0")
    return gymnasium.make(domain.env_id, **kwargs)


def _core(env: gymnasium.Env[Any, Any]) -> Env:
    inner = env.unwrapped
    assert isinstance(inner, StateGymEnv)
    return inner.core


@pytest.mark.parametrize("knobs", [Knobs(), Knobs.all_off()], ids=lambda k: k.describe())
def test_check_env_passes(domain: Domain, knobs: Knobs) -> None:
    env = _make(domain, knobs=knobs)
    check_env(env.unwrapped)
    env.close()


def test_every_domain_is_registered_on_import(domain: Domain) -> None:
    spec = gymnasium.spec(domain.env_id)
    assert spec.entry_point == "stategym.gym:StateGymEnv"
    assert spec.kwargs == {"domain": domain.name}
    register_envs()  # registering again is harmless
    assert gymnasium.spec(domain.env_id) == spec


def test_import_registers_without_heavy_imports() -> None:
    code = (
        "import sys, gymnasium, stategym; gymnasium.make('stategym/Travel-v0'); "
        "print(sorted(m for m in ('torch', 'transformers', 'openai', 'httpx', 'fastapi', "
        "'stategym.llm') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"


def test_knobs_are_keyword_arguments() -> None:
    env = gymnasium.make("stategym/Travel-v0", dynamics=False, hidden_info=False)
    assert _core(env).knobs == Knobs(dynamics=False, hidden_info=False)
    env = gymnasium.make("stategym/Travel-v0", knobs="all_off", stateful=True)
    assert _core(env).knobs == Knobs(
        stateful=True, irreversible=False, hidden_info=False, priorities=False, dynamics=False
    )
    env = gymnasium.make("stategym/Travel-v0", knobs=Knobs.all_off())
    _, info = env.reset(seed=0)
    assert info["tools"][-1]["function"]["parameters"]["required"] == ["answer"]
    with pytest.raises(ValueError, match="bad knob"):
        gymnasium.make("stategym/Travel-v0", knobs="gravity=off")


def test_reset_shows_the_request_and_puts_tools_in_info(domain: Domain) -> None:
    env = _make(domain)
    observation, info = env.reset(seed=3)
    core = _core(env)
    assert orjson.loads(observation) == [{"role": "user", "content": core.task.request.text}]
    assert info["tools"] == core.tool_schemas and info["task_id"] == core.task.id
    assert info["instructions"] == domain.instructions


def test_expert_through_text_matches_the_typed_api(domain: Domain) -> None:
    """The expert's actions as JSON text reach the same end state as through typed actions."""
    for seed in range(8):
        typed_env = Env(domain)
        expert = scripted(domain, "expert")(typed_env.domain.generate(seed, Knobs()))
        trajectory = run_episode(typed_env, lambda task, agent=expert: agent, seed)
        env = _make(domain)
        env.reset(seed=seed)
        total = 0.0
        for record in trajectory.rounds:
            text = orjson.dumps(action_to_message(record.action())).decode()
            _, reward, terminated, truncated, _ = env.step(text)
            total += reward
        assert terminated or truncated
        assert _core(env).state_key() == trajectory.digest
        assert total == (1.0 if trajectory.outcome and trajectory.outcome.goal_reached else 0.0)


def test_dict_actions_are_accepted() -> None:
    env = gymnasium.make("stategym/Travel-v0")
    env.reset(seed=0)
    observation, *_ = env.step(
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "get_profile", "arguments": "{}"},
                }
            ],
        }
    )
    (message,) = orjson.loads(observation)
    assert message["role"] == "tool" and message["tool_call_id"] == "a"
    assert "home_airport" in orjson.loads(message["content"])


@given(st.text(max_size=300) | st.binary(max_size=50).map(lambda b: b.decode("latin-1")))
def test_garbage_text_is_a_format_error_observation(text: str) -> None:
    env = StateGymEnv("travel")
    env.reset(seed=1)
    observation, reward, terminated, truncated, info = env.step(text)
    assert observation in env.observation_space
    assert not terminated and not truncated and reward == 0.0
    messages = orjson.loads(observation)
    if info.get("format_errors"):  # the error first, then any change of mind the user voices
        assert messages[0]["content"].startswith("[environment] ")
    else:  # the text happened to be a usable message to the user
        assert env.core.rounds[-1].kind == "say"


def test_non_ascii_is_escaped_and_decodes_back() -> None:
    messages = [{"role": "user", "content": "Tōkyō 東京 ✈ \u2028 \x7f \x00 \ud7ff"}]
    text = encode_messages(messages)
    assert text.isascii() and all(c in CHARSET for c in text)
    assert orjson.loads(text) == messages
    env = StateGymEnv("travel", render_mode="ansi")
    env.reset(seed=0)
    observation, *_ = env.step('{"role": "assistant", "content": "Bonjour, ça va? 東京"}')
    assert observation in env.observation_space
    assert env.render() == "".join(
        f"{m['role']}: {m['content']}\n" for m in orjson.loads(observation)
    )


def test_oversized_observations_are_replaced_inside_the_space() -> None:
    """Agent output cannot make one any more (names are kept cut, rounds have a cap), so the
    test plays a task whose request is longer than the space allows."""
    env = StateGymEnv("travel")
    env.reset(seed=0)
    task = env.core.task
    huge = replace(task, request=replace(task.request, text="x" * MAX_OBSERVATION))
    observation, _ = env.reset(options={"task": huge})
    assert observation in env.observation_space and "dropped" in observation
    name = "x" * (MAX_OBSERVATION // 2)
    observation, _, _, _, info = env.step(
        action_to_message(
            stategym.calls(stategym.call(name), stategym.call(name), stategym.call(name))
        )
    )
    assert info["format_errors"] == ("unknown_tool",) * 3
    assert observation in env.observation_space and len(observation) < MAX_OBSERVATION // 20


def _seeds_after(seed: int | None, episodes: int) -> list[int]:
    env = StateGymEnv("travel")
    env.reset(seed=seed)
    played = [env.core.task.seed]
    for _ in range(episodes - 1):
        _, info = env.reset()
        assert info["task_id"] == env.core.task.id
        played.append(env.core.task.seed)
    return played


def test_reset_without_seed_draws_the_next_task_from_np_random() -> None:
    """Gymnasium's convention: ``reset()`` goes on with the environment's random stream, so
    the tasks after ``reset(seed=s)`` are a function of ``s`` and of nothing else."""
    after_10 = _seeds_after(10, 6)
    assert after_10[0] == 10 and after_10 == _seeds_after(10, 6)
    assert len(set(after_10)) == 6
    assert not set(after_10) & set(_seeds_after(11, 6))  # 11 is no longer 10's next task


def test_vector_environments_never_replay_their_neighbours_tasks() -> None:
    """Audit 15c F2: Gymnasium seeds sub-environment ``i`` with ``s + i`` and resets it
    without a seed when its episode ends; each went on with ``s + i + 1``, its neighbour's
    task, so 4 environments x 8 episodes played 11 tasks. Now each draws its own stream,
    seeded or not."""
    finish = '{"tool_calls": [{"function": {"name": "finish", "arguments": "{}"}}]}'
    for seed in (0, None):
        envs = gymnasium.make_vec("stategym/Travel-v0", num_envs=4)
        try:
            envs.reset(seed=seed)
            played = []
            for _ in range(8):
                played += [env.unwrapped.core.task.seed for env in envs.unwrapped.envs]
                envs.step([finish] * 4)  # every episode ends
                envs.step([finish] * 4)  # Gymnasium's next-step autoreset
        finally:
            envs.close()
        assert len(played) == 32 and len(set(played)) == 32, played


def test_render_is_none_without_a_render_mode() -> None:
    env = StateGymEnv("travel")
    env.reset(seed=0)
    assert env.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        StateGymEnv("travel", render_mode="human")


def test_observation_messages_match_the_typed_observation() -> None:
    observation = Observation(0, 1, user="hi")
    assert orjson.loads(encode_messages(observation.to_messages())) == observation.to_messages()


def test_make_takes_a_reward_function_or_its_name() -> None:
    from stategym.metrics import dense_reward

    question = '{"role": "assistant", "content": "What is your budget for this flight?"}'
    for reward in (dense_reward, "dense"):
        env = gymnasium.make("stategym/Travel-v0", reward=reward)
        env.reset(seed=3)
        _, value, _, _, info = env.step(question)
        assert [e.kind.value for e in info["events"]] == ["ask_needed"]
        assert value == info["credit"].reward and value > 0  # credit: docs/metrics.md
    env = gymnasium.make("stategym/Travel-v0", reward="outcome")
    env.reset(seed=3)
    assert env.step(question)[1] == 0.0
    with pytest.raises(ValueError, match="reward must be"):
        gymnasium.make("stategym/Travel-v0", reward="dense_reward")


def test_check_env_passes_with_the_dense_reward() -> None:
    env = gymnasium.make("stategym/Shop-v0", reward="dense")
    check_env(env.unwrapped)


def test_knob_switches_are_read_as_knobs_text_reads_them() -> None:
    """``dynamics="off"`` turns dynamics off (``bool("off")`` would have turned it on); what
    is neither a bool nor ``on``/``off`` is refused, as are ``knobs`` and ``reward`` of the
    wrong type."""
    for value, on in (("off", False), ("on", True), (False, False), (True, True)):
        env = gymnasium.make("stategym/Travel-v0", dynamics=value)
        env.reset(seed=0)
        assert _core(env).task.knobs.dynamics is on
    for value in (0, 1, 1.0, [], "yes"):
        error = ValueError if isinstance(value, str) else TypeError
        with pytest.raises(error, match="dynamics must be a bool, 'on' or 'off'"):
            gymnasium.make("stategym/Travel-v0", dynamics=value)
    with pytest.raises(TypeError, match="knobs must be Knobs"):
        gymnasium.make("stategym/Travel-v0", knobs=5)
    with pytest.raises(TypeError, match="reward must be a function"):
        gymnasium.make("stategym/Travel-v0", reward=5)


def test_async_vector_envs_return_the_sync_observations() -> None:
    """Gymnasium's shared memory (async's default) for a ``Text`` space returned blanks."""
    actions = ['{"content": "What is your budget?"}', "not a message"]
    played = {}
    for mode in ("sync", "async"):
        envs = gymnasium.make_vec("stategym/Travel-v0", num_envs=2, vectorization_mode=mode)
        try:
            first, _ = envs.reset(seed=[0, 1])
            played[mode] = (first, *envs.step(actions)[:3])
        finally:
            envs.close()
    first, observations, rewards, terminated = played["async"]
    assert first == played["sync"][0] and observations == played["sync"][1]
    assert all(text.startswith('[{"role":"user"') for text in (*first, *observations))
    assert list(rewards) == list(played["sync"][2])
    assert list(terminated) == list(played["sync"][3])


@pytest.mark.parametrize("knobs", [Knobs(), Knobs.all_off()], ids=lambda k: k.describe())
def test_reset_info_has_the_system_prompt_every_other_interface_gives(
    domain: Domain, knobs: Knobs
) -> None:
    """Audit 15c F7: ``info`` held the domain's instructions alone, without the protocol's
    rules (one round a reply, parallel calls, how to end) that the other adapters give."""
    from stategym.adapters.trl import dataset_rows
    from stategym.rendering import make_renderer

    env = _make(domain, knobs=knobs)
    _, info = env.reset(seed=2)
    prompt = make_renderer(domain, knobs, "messages").system_prompt()
    assert info["system_prompt"] == prompt
    assert dataset_rows(domain.name, [2], knobs)[0]["prompt"][0]["content"] == prompt
    assert info["instructions"] == domain.instructions_for(knobs)
    assert prompt.startswith(info["instructions"]) and len(prompt) > len(info["instructions"])


def test_numpy_bools_are_knob_switches() -> None:
    """Audit 15c N2: ``dynamics=np.bool_(False)`` was refused as "must be a bool; got bool"."""
    import numpy as np

    for value in (np.bool_(False), np.False_):
        env = gymnasium.make("stategym/Travel-v0", dynamics=value)
        env.reset(seed=0)
        assert _core(env).task.knobs.dynamics is False
