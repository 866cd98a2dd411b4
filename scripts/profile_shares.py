"""Where a sampled profile's time went: the share of samples under each function.

    py-spy record -f raw -o PROFILE -- python -m stategym run ...
    python scripts/profile_shares.py PROFILE [TOP]

``py-spy`` samples every thread (``cProfile`` sees only the one that started it, and
``stategym run`` plays LLM episodes on a worker thread). Prints the ``TOP`` (default 30)
functions by the share of samples whose stack holds them, import machinery left out, then
the shares of the parts of a rollout: the model's forward passes, the environment's steps,
the simulated user's reading, parsing replies and rendering observations.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

PARTS = {
    "model forward": ("Engine._forward",),
    "model (engine, all)": ("Engine.run",),
    "environment step": ("Env.step", "Env.step_message"),
    "simulated user": ("SimulatedUser.respond",),
    "reply parsing": ("parse",),
    "agent turn work": ("ChatAgent._observe", "ChatAgent._take"),
    "loading and imports": ("_find_and_load", "LocalModel.__init__"),
}
"""Rollout parts and the functions whose samples they count (a stack counts once per part)."""

PLUMBING = re.compile(r"^(_|<module>|Thread\.|BaseEventLoop\.|Handle\._run|Module\._)")
"""Frames every sample passes through (threads, the event loop, imports, torch's call wrapper)."""


def shares(path: Path) -> tuple[int, Counter[str], Counter[str]]:
    """Samples in all, under each function (by name, file left out) and in each part."""
    total = 0
    under: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        total += samples
        names = {frame.split(" (", 1)[0] for frame in stack.split(";")}
        for name in names:
            under[name] += samples
        for part, held in PARTS.items():
            if names.intersection(held):
                parts[part] += samples
    return total, under, parts


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    top = int(argv[1]) if len(argv) == 2 else 30
    total, under, parts = shares(Path(argv[0]))
    if not total:
        print(f"{argv[0]}: no samples")
        return 1
    print(f"{total} samples")
    shown = [(n, f) for f, n in under.most_common() if not PLUMBING.match(f)][:top]
    for samples, name in shown:
        print(f"{samples / total:7.1%}  {name}")
    print("parts:")
    for part in PARTS:
        print(f"{parts[part] / total:7.1%}  {part}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
