"""Run directories the report tests read: a small eval-like run, a hostile one, a training
run and a protocol run, each written the way its command writes it (played here, once)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stategym import Env
from stategym.agents import resolve
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall
from stategym.kernel.task import Task
from stategym.kernel.trajectory import write_jsonl
from stategym.rollout import run_episode

PWN = "document.title='pwned'"
HOSTILE_TEXTS = (
    f"<script>{PWN}</script>",
    f'<img src=x onerror="{PWN}">',
    f"</style><style>body{{display:none}}</style><script>{PWN}</script>",
    f"javascript:{PWN}",
    f"</script><script>{PWN}</script>",
    "\u202eevil\u2028line\u2029para\x00nul\x1b[31m",
    f'"><svg onload="{PWN}">',
    f'<!-- --><a href="javascript:{PWN}">click</a>',
)
"""What a hostile model writes: each is put in a message, a tool name, arguments, the
finish answer and the agent's name."""
HOSTILE_AGENT = f"openai:<script>{PWN}</script>"


class HostileAgent:
    """Says, calls and answers with :data:`HOSTILE_TEXTS`, one round each."""

    name = HOSTILE_AGENT

    def __init__(self, task: Task) -> None:
        self.turn = 0

    def act(self, observation: Observation) -> Action:
        self.turn += 1
        text = " ".join(HOSTILE_TEXTS)
        if self.turn == 1:
            return Say(text)
        if self.turn == 2:
            return CallBatch(
                (
                    ToolCall(HOSTILE_TEXTS[1], {"x": HOSTILE_TEXTS[0]}),
                    ToolCall("search_flights", HOSTILE_TEXTS[2]),  # raw, not a JSON object
                )
            )
        return CallBatch((ToolCall("finish", {"answer": text}),))


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"eval", "hostile", "train", "protocol"}`` -> run directory."""
    root = tmp_path_factory.mktemp("runs")
    env = Env("travel")
    played = [
        run_episode(env, resolve(env.domain, agent), seed)
        for agent in ("expert", "serial")
        for seed in range(4)
    ]
    (root / "eval").mkdir()
    write_jsonl(root / "eval" / "trajectories.jsonl", played)
    (root / "hostile").mkdir()
    write_jsonl(
        root / "hostile" / "trajectories.jsonl",
        [run_episode(env, HostileAgent, seed) for seed in range(2)],
    )
    train = root / "train"
    train.mkdir()
    (train / "config.json").write_text(json.dumps({"kind": "grpo", "note": HOSTILE_TEXTS[0]}))
    lines = [
        {"iteration": i, "goal_rate": i / 4, "kl": 0.01 * i, "entropy": 2 - i / 10}
        for i in range(1, 5)
    ]
    lines.insert(2, {"iteration": 2, "eval": {"goal_rate": 0.5, "composite": 0.25}})
    (train / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    protocol = root / "protocol"
    (protocol / "expert").mkdir(parents=True)
    (protocol / "cells.json").write_text(json.dumps({"agents": ["expert"], "cells": []}))
    report = {
        "config": {"agent": "expert"},
        "cells": [
            {"shots": 0, "distance": d, "composite": 1 - d, "domain": f"synth:{d}"}
            for d in (0.0, 0.25, 0.5)
        ],
        "collapse": {"agent": {"0": {"index": 0.125}}},
        "score_vs_distance": {"0": {"slope": -1.0, "spearman": -1.0}},
    }
    (protocol / "expert" / "report.json").write_text(json.dumps(report))
    write_jsonl(protocol / "expert" / "trajectories.jsonl", played[:2])
    return {
        "eval": root / "eval",
        "hostile": root / "hostile",
        "train": train,
        "protocol": protocol,
    }
