"""LLM client libraries stay off the environment's import path."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("openai", "torch", "transformers", "tokenizers", "fastapi", "uvicorn", "httpx", "httpx2")


def test_importing_stategym_imports_no_llm_library() -> None:
    code = (
        "import sys, stategym, stategym.kernel.env, stategym.agents, stategym.cli\n"
        "from stategym import Env\n"
        "env = Env('travel'); env.reset(seed=0)\n"
        "stategym.cli.build_parser()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_public_surface_is_pinned() -> None:
    import stategym.llm

    assert sorted(stategym.llm.__all__) == [
        "ChatAgent",
        "LLMAgentFactory",
        "PROMPT_VERSION",
        "agent_factory",
        "expert_demonstrations",
        "render_demonstrations",
    ]
