"""Hash generated tasks, scripted trajectories and their scores: proof a refactor changed nothing.

Run it before and after a change and compare the two files::

    python scripts/identity_hashes.py --seeds 300 --out /tmp/before.json
    ... change the code ...
    python scripts/identity_hashes.py --seeds 300 --out /tmp/after.json --compare /tmp/before.json

Each domain contributes, per seed and knob setting, the hash of its task (its ``repr``), of
the expert, serial and random trajectories (their JSONL bytes) and of their scorecards.
``--compare`` prints every key whose hash differs and exits 1 if any does.

A task's ``repr`` shows its frozensets in hash order, which string hash randomisation changes
from one process to the next, so the script runs itself under ``PYTHONHASHSEED=0``: without
it, about one task hash in ten differs between two runs of the same code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

from stategym.agents import resolve
from stategym.kernel.env import Env
from stategym.kernel.knobs import Knobs
from stategym.kernel.trajectory import dumps
from stategym.metrics import score
from stategym.registry import all_domains, get_domain
from stategym.rollout import run_episode

AGENTS = ("expert", "serial", "random")
SYNTHETIC = ("synth:chain2+fanout3+askgate+verifycommit", "synth:chain1+askgate+conflict")
KNOB_SETTINGS = {"on": Knobs(), "off": Knobs.parse("all_off")}


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def identity_hashes(seeds: int, domains: list[str]) -> dict[str, str]:
    """``{"domain/knobs/seed/what": hash}`` for every domain, knob setting, seed and agent."""
    hashes: dict[str, str] = {}
    for name in domains:
        domain = get_domain(name)
        for label, knobs in KNOB_SETTINGS.items():
            for agent_name in AGENTS:
                env = Env(domain, knobs=knobs, agent=agent_name)
                factory = resolve(domain, agent_name)
                for seed in range(seeds):
                    trajectory = run_episode(env, factory, seed)
                    task = env.task
                    key = f"{name}/{label}/{seed}"
                    if agent_name == AGENTS[0]:
                        hashes[f"{key}/task"] = _digest(repr(task).encode())
                    hashes[f"{key}/{agent_name}"] = _digest(dumps(trajectory))
                    card = score(trajectory, task)
                    hashes[f"{key}/{agent_name}/score"] = _digest(repr(card).encode())
    return hashes


def main() -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":  # see the module docstring
        os.execve(
            sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"}
        )
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--domains", default=",".join([*all_domains(), *SYNTHETIC]))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="an earlier output to compare against")
    args = parser.parse_args()
    hashes = identity_hashes(args.seeds, args.domains.split(","))
    args.out.write_text(json.dumps(hashes, indent=0, sort_keys=True))
    print(f"{len(hashes)} hashes written to {args.out}")
    if args.compare is None:
        return 0
    before = json.loads(args.compare.read_text())
    changed = sorted(k for k in before.keys() & hashes.keys() if before[k] != hashes[k])
    missing = sorted(before.keys() - hashes.keys())
    for key in changed[:50]:
        print(f"changed: {key}")
    compared = len(before.keys() & hashes.keys())
    print(f"{len(changed)} changed, {len(missing)} missing, {compared} compared")
    return 1 if changed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
