"""Compare two run directories: are they the same episodes, token for token?

    python scripts/compare_runs.py RUN_A RUN_B

For two ``stategym run`` directories: episodes whose generated tokens are equal, whose
actions are equal round for round (each round's kind, message and calls), whose world
digests are equal, the largest log-probability gap on equal tokens, and whether the
summaries' scores are equal; with each run's rounds, tokens and summed environment and agent
seconds (``meta.timing``). For two ``stategym train`` directories: ``metrics.jsonl`` lines
equal once the wall-clock fields are left out. Prints one line per comparison.

Tokens are compared only when both runs logged them: an ``openai:`` agent run from the
command line logs none (``token_ids: null``), so against such a run the tokens are "not
logged" and the actions are what can be equal. They need not be, even greedy: that agent
sends messages, which the server renders and tokenises again each round, so a reply whose
sampled ids are not the tokenizer's own encoding of its text (BPE merges differently) or a
reply cut by ``--max-tokens`` (sent back as the action parsed from it) makes the next
prompt's ids differ from the token-in-token-out stream of ``hf:``, and greedy decoding may
then differ from that round on. The line names the first differing round of each episode
that differs (``seed:round``). ``scripts/served_vs_hf.py`` compares the served model token
for token (the ``openai:`` agent given the model's tokenizer).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

TIMING = ("seconds", "tokens_per_s", "share")
"""Wall-clock fields of a training run's metrics: the only ones two identical runs may differ in."""


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tokens(trajectory: dict[str, Any]) -> list[list[int] | None]:
    return [r["model"]["token_ids"] for r in trajectory["rounds"] if r.get("model")]


def actions(trajectory: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Each round's action: its kind, its message to the user and its calls."""
    return [
        (r["kind"], r.get("say"), [(c["name"], c["arguments"]) for c in r["calls"]])
        for r in trajectory["rounds"]
    ]


def first_difference(x: dict[str, Any], y: dict[str, Any]) -> int | None:
    """The first round whose action differs (or where one episode ended), ``None``: none."""
    one, two = actions(x), actions(y)
    for index, (a, b) in enumerate(zip(one, two, strict=False)):
        if a != b:
            return index
    return None if len(one) == len(two) else min(len(one), len(two))


def describe(run: Path, trajectories: list[dict[str, Any]]) -> str:
    rounds = sum(len(t["rounds"]) for t in trajectories)
    made = sum(t["meta"].get("usage", {}).get("completion_tokens", 0) for t in trajectories)
    env = sum(t["meta"].get("timing", {}).get("env_s", 0.0) for t in trajectories)
    agent = sum(t["meta"].get("timing", {}).get("agent_s", 0.0) for t in trajectories)
    return f"{run.name}: {rounds} rounds, {made} tokens, env {env:.2f} s, agent {agent:.2f} s"


def compare_plays(a: Path, b: Path) -> str:
    first = sorted(lines(a / "trajectories.jsonl"), key=lambda t: (t["seed"], t["agent"]))
    second = sorted(lines(b / "trajectories.jsonl"), key=lambda t: (t["seed"], t["agent"]))
    same_tokens = same_actions = same_digest = 0
    differ: list[str] = []
    gap = 0.0
    logged = all(None not in tokens(t) for t in first + second)
    for x, y in zip(first, second, strict=False):
        same_tokens += tokens(x) == tokens(y)
        same_digest += x["digest"] == y["digest"]
        where = first_difference(x, y)
        same_actions += where is None
        if where is not None:
            differ.append(f"{x['seed']}:{where}")
        for rx, ry in zip(x["rounds"], y["rounds"], strict=False):
            mx, my = rx.get("model") or {}, ry.get("model") or {}
            if mx.get("token_ids") == my.get("token_ids"):
                pairs = zip(mx.get("logprobs") or [], my.get("logprobs") or [], strict=False)
                gap = max([gap, *(abs(p - q) for p, q in pairs)])
    scores = [json.loads((run / "summary.json").read_text()) for run in (a, b)]
    equal = all(scores[0][k] == scores[1][k] for k in ("aggregates", "decision_quality"))
    shown = same_tokens if logged else "not logged"
    where = f" (first differing round {', '.join(differ)})" if differ else ""
    gaps = f"{gap:.1e}" if logged else "not logged"
    return (
        f"{a.name} vs {b.name}: {len(first)}/{len(second)} episodes, same tokens {shown}, "
        f"same actions {same_actions}{where}, same world digest {same_digest}, largest "
        f"|logprob gap| on equal tokens {gaps}, scores equal {equal} "
        f"({describe(a, first)}; {describe(b, second)})"
    )


def compare_training(a: Path, b: Path) -> str:
    def kept(m: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in m.items() if k not in TIMING}

    first, second = lines(a / "metrics.jsonl"), lines(b / "metrics.jsonl")
    equal = sum(kept(x) == kept(y) for x, y in zip(first, second, strict=False))
    return f"{a.name} vs {b.name}: {equal}/{len(first)} metrics lines equal (timings left out)"


def main() -> None:
    a, b = (Path(arg) for arg in sys.argv[1:3])
    played = (a / "trajectories.jsonl").exists()
    print(compare_plays(a, b) if played else compare_training(a, b))


if __name__ == "__main__":
    main()
