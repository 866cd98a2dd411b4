"""The OpenAI-message rendering offers what the environment enforces (the ``lookup`` bug)."""

from __future__ import annotations

import pytest

from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.llm.agent import ChatAgent
from stategym.registry import all_domains, get_domain
from stategym.rendering import RENDERINGS, MessageRenderer, make_renderer
from stategym.rendering.messages import ANSWERED, STATEFUL

DOMAINS = [*sorted(all_domains()), "synth:chain2+fanout3"]


@pytest.mark.parametrize("name", DOMAINS)
@pytest.mark.parametrize("knobs", [Knobs(), Knobs.all_off()], ids=["on", "off"])
def test_tools_and_ending_follow_the_environment(name: str, knobs: Knobs) -> None:
    env = Env(name, knobs=knobs)
    env.reset(seed=0)
    for kind in RENDERINGS:
        renderer = make_renderer(env.domain, knobs, kind)
        assert renderer.tools == env.tool_schemas
        prompt = renderer.system_prompt()
        judged = env.domain.judges_answer(knobs)
        answered = ANSWERED.format(answer_form=env.domain.answer_form)
        assert (answered in prompt) is judged and (STATEFUL in prompt) is not judged


def test_lookup_is_told_that_finish_needs_an_answer() -> None:
    """Regression: the agent offered ``finish`` with ``answer`` optional and the stateful
    prompt, although the environment rejects ``finish`` without an answer in ``lookup``."""
    lookup = get_domain("lookup")
    env = Env(lookup)
    env.reset(seed=0)
    agent = ChatAgent("m", backend=None, domain=lookup, task=env.task)  # type: ignore[arg-type]
    finish = agent.renderer.tools[-1]["function"]
    assert finish["parameters"]["required"] == ["answer"]
    assert "finish(answer=" in agent.messages[0]["content"]
    assert "commit once" not in agent.messages[0]["content"]


def test_an_unknown_rendering_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown rendering"):
        make_renderer(get_domain("travel"), Knobs(), "yaml")
    assert isinstance(make_renderer(get_domain("travel"), Knobs()), MessageRenderer)
