"""The versioned prompt, tool rendering, transcripts and demonstrations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stategym.agents import scripted
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import action_to_message
from stategym.kernel.trajectory import Trajectory
from stategym.llm import agent_factory, expert_demonstrations
from stategym.llm.prompt import (
    PROMPT_VERSION,
    first_messages,
    render_demonstrations,
    render_tools,
    system_prompt,
    transcript,
)
from stategym.registry import all_domains, get_domain

TRAVEL = get_domain("travel")


def test_version_and_knob_dependent_wording() -> None:
    assert isinstance(PROMPT_VERSION, int) and PROMPT_VERSION >= 1
    stateful = system_prompt(TRAVEL, Knobs())
    stateless = system_prompt(TRAVEL, Knobs.all_off())
    assert stateful.startswith(TRAVEL.instructions)
    assert "commit once" in stateful and "finish(answer=" in stateless
    assert "parallel" in stateful


def test_tools_render_one_line_each() -> None:
    env = Env("travel")
    text = render_tools(env.tool_schemas)
    assert len(text.splitlines()) == len(env.tool_schemas)
    assert "search_flights(origin: string, destination: string, day: integer)" in text
    assert "finish(answer: string?)" in text


@pytest.mark.parametrize("name", sorted(all_domains()))
def test_transcript_is_the_conversation_the_agent_had(name: str) -> None:
    """Rebuilt from the log alone, it equals the messages exchanged live."""
    env = Env(name)
    for seed in range(6):
        observation, _ = env.reset(seed=seed)
        agent = scripted(env.domain, "expert")(env.task)
        live = [{"role": "user", "content": env.task.request.text}]
        while not env.done:
            action = agent.act(observation)
            observation = env.step(action).observation
            message = action_to_message(action)
            for position, call in enumerate(message.get("tool_calls") or []):
                call["id"] = call["id"] or f"c{len(env.rounds) - 1}_{position}"
            live.append(message)
            live.extend(observation.to_messages())
        assert transcript(env.trajectory, env.task) == live


def test_demonstrations_render_expert_episodes() -> None:
    block = expert_demonstrations(TRAVEL, 2, Knobs())
    assert block.count("### Example ") == 2
    assert "<tool_call>" in block and "ASSISTANT:" in block and "TOOL:" in block
    with pytest.raises(ValueError):
        render_demonstrations([_episode(0)], [])
    assert render_demonstrations([], []) == ""


def test_demonstrations_reach_the_system_prompt() -> None:
    make = agent_factory("openai", "m", TRAVEL, demonstrations=1, client=object())
    env = Env("travel")
    env.reset(seed=5)
    agent = make(env.task)
    system = agent.messages[0]["content"]
    assert "### Example 1" in system and system.startswith(TRAVEL.instructions)
    assert agent.messages == first_messages(TRAVEL, env.task, make.demonstrations(env.task.knobs))


def _episode(seed: int) -> Trajectory:
    from stategym.rollout import run_episode

    return run_episode(Env("travel"), scripted(TRAVEL, "expert"), seed)


def test_a_compact_model_is_shown_compact_demonstrations(tiny_model: Path, tmp_path: Path) -> None:
    """Audit 12C F1: a folder recorded ``compact`` plays in compact; its k-shot examples
    (the factory's, and the protocol's, made outside the agent) must be compact too, not
    JSON calls it was never trained to write."""
    from stategym.llm.model_files import agent_rendering
    from stategym.topology.generalisation import ProtocolConfig, _demonstrations

    folder = Path(shutil.copytree(tiny_model, tmp_path / "compact"))
    (folder / "stategym_model.json").write_text(json.dumps({"rendering": "compact"}))
    assert agent_rendering(f"hf:{folder}") == "compact"
    make = agent_factory("hf", str(folder), TRAVEL, demonstrations=1)
    env = Env("travel")
    env.reset(seed=5)
    system = make(env.task).messages[0]["content"]
    assert "### Example 1" in system and "<tool_call>" not in system
    assert "ASSISTANT: get_profile\n" in system  # a compact call line
    config = ProtocolConfig(f"hf:{folder}", ("travel",), episodes=1)
    block = _demonstrations(config, "travel", 1)
    assert "<tool_call>" not in block and "ASSISTANT: get_profile\n" in block
    messages = ProtocolConfig("expert", ("travel",), episodes=1)
    assert "<tool_call>" in _demonstrations(messages, "travel", 1)
