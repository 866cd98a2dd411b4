"""Run directories the report tests read: a small eval-like run, one mixing domains, knobs
and outcomes (for the viewer's filters), a hostile one, training runs (a hand-written one,
and the real files of two tiny runs in ``fixtures/``), a protocol run and experiment runs,
each written the way its command writes it (played here, once)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stategym import Env
from stategym.agents import resolve
from stategym.kernel.knobs import Knobs
from stategym.kernel.protocol import Action, CallBatch, Observation, Say, ToolCall
from stategym.kernel.task import Task
from stategym.kernel.trajectory import write_jsonl
from stategym.rollout import run_episode

FIXTURES = Path(__file__).parent / "fixtures"
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
    protocol = _protocol(root / "protocol")
    report = {
        "config": json.loads((protocol / "cells.json").read_text())["config"],
        "cells": [
            {"shots": 0, "distance": d, "composite": 1 - d, "domain": f"synth:{d}"}
            for d in (0.0, 0.25, 0.5)
        ],
        "collapse": {"agent": {"0": {"index": 0.125}}},
        "score_vs_distance": {"0": {"slope": -1.0, "spearman": -1.0}},
    }
    (protocol / "expert" / "report.json").write_text(json.dumps(report))
    for name in ("train-sft", "train-grpo"):
        shutil.copytree(FIXTURES / name, root / name)
    return {
        "eval": root / "eval",
        "hostile": root / "hostile",
        "train": train,
        "protocol": protocol,
        "mixed": _mixed(root / "mixed"),
        "sft": root / "train-sft",
        "grpo": root / "train-grpo",
    }


def _protocol(out: Path) -> Path:
    """A protocol run of the expert with no cells: its two plan episodes (travel seeds 0-1)
    and ``cells.json`` as ``stategym protocol`` writes them; the test writes the report."""
    from stategym.topology.generalisation import ProtocolConfig, run_protocol

    config = ProtocolConfig("expert", ("travel",), episodes=1, probes=0, compositions=0, plans=2)
    run = run_protocol(config, cells=())
    (out / "expert").mkdir(parents=True)
    cells = {"config": config.describe(), "agents": ["expert"], "notes": [], "cells": []}
    (out / "cells.json").write_text(json.dumps(cells))
    write_jsonl(out / "expert" / "trajectories.jsonl", run.trajectories)
    return out


MIXED_KNOBS = (Knobs(), Knobs(dynamics=False))


def _mixed(out: Path) -> Path:
    """Two domains, two knob settings, the expert and the serial agent, seeds 0-1: 16
    episodes with goals reached and missed and safe, unverified and harmful commits."""
    played = []
    for domain in ("travel", "bank"):
        for knobs in MIXED_KNOBS:
            env = Env(domain, knobs=knobs)
            played += [
                run_episode(env, resolve(env.domain, agent), seed)
                for agent in ("expert", "serial")
                for seed in range(2)
            ]
    out.mkdir()
    write_jsonl(out / "trajectories.jsonl", played)
    return out


@pytest.fixture(scope="session")
def experiments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"e0", "e3", "hostile"}`` -> experiment run directory: E0 at a tiny configuration
    through its real writer, E3's real files of a tiny run, and a hand-written one whose
    names, table and plot file carry the hostile texts.

    The experiments' own figures are not rendered (half of E0's time here): their files
    are written empty under their real names, which is all the report reads of them.
    """
    from stategym.experiments import e0
    from stategym.experiments import plots as experiment_plots
    from stategym.experiments.configs import E0Config
    from stategym.metrics.taskset import MIXED

    def names_only(figure: object, path: Path) -> list[Path]:
        path.parent.mkdir(parents=True, exist_ok=True)
        written = [path.with_suffix(".png"), path.with_suffix(".svg")]
        for file in written:
            file.touch()
        return written

    root = tmp_path_factory.mktemp("experiments")
    small = E0Config("smoke", tasks=len(MIXED), resamples=50, domains=("travel", "bank"),
                     agents=("expert", "serial", "ask-nothing"))  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(experiment_plots, "save", names_only)
        e0.write(e0.run(small, (0,)), root / "e0", 1.0)
    # E3's protocol costs seconds to play even this small: its real files are committed
    # (fixtures/README.md), and a slow test runs ``experiment e3 --smoke --report`` itself
    shutil.copytree(FIXTURES / "experiment-e3", root / "e3")
    for name in ("bands", "r_vs_distance"):
        names_only(None, root / "e3" / "plots" / name)
    hostile = root / "hostile"
    (hostile / "plots").mkdir(parents=True)
    estimate = {"mean": 0.5, "low": 0.25, "high": 0.75, "n": 4}
    results = {
        "experiment": "e9",
        "config": {"budget": HOSTILE_TEXTS[0]},
        "seeds": [0],
        "agents": {text: {"score": estimate} for text in HOSTILE_TEXTS},
    }
    (hostile / "results.json").write_text(json.dumps(results))
    rows = "".join(f"| {text.replace('|', '')} | 0.50 |\n" for text in HOSTILE_TEXTS)
    (hostile / "table.md").write_text(f"### {HOSTILE_TEXTS[1]}\n\n| agent | R |\n|---|---|\n{rows}")
    (hostile / "plots" / "evil.svg").write_text(f'<svg onload="{PWN}"><script>{PWN}</script></svg>')
    return {"e0": root / "e0", "e3": root / "e3", "hostile": hostile}
