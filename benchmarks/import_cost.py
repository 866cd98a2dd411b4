"""What starting stategym costs: modules loaded and wall time, in fresh interpreters.

Each case runs in ``--repeat`` new ``python -c`` processes; wall and process CPU time are
measured inside the child around the statement (interpreter start-up excluded; CPU time is
less distorted on a shared machine) and their medians reported (garbage collector on, as
in every benchmark here: see ``timing.py``) with the min-max of the CPU time beside them,
with the number of modules the statement added to ``sys.modules`` (all of them, and those
of stategym itself)::

    python benchmarks/import_cost.py            # table
    python benchmarks/import_cost.py --json     # one JSON object per case

Cases: ``import gymnasium`` (for reference: ``import stategym`` imports it to register the
Gymnasium ids); ``import stategym``; ``import stategym`` then ``stategym.Env("travel")`` (the
first domain import); the CLI's ``--help``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CASES: dict[str, str] = {
    "import gymnasium": "import gymnasium",  # for reference: what registering the ids costs
    "import stategym": "import stategym",
    'stategym.Env("travel")': 'import stategym; stategym.Env("travel")',
    "stategym --help": (
        "import contextlib, io\n"
        "from stategym import cli\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['--help'])"
    ),
}
"""Statements timed, by the label the table shows."""

_PROBE = """
import sys, time, json
before = set(sys.modules)
start, cpu = time.perf_counter(), time.process_time()
exec(compile({statement!r}, "<case>", "exec"))
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
added = set(sys.modules) - before
print(json.dumps({{"seconds": seconds, "cpu": cpu, "modules": len(added),
    "stategym": sorted(m for m in added if m == "stategym" or m.startswith("stategym."))}}))
"""


def measure(statement: str, repeat: int) -> dict[str, object]:
    """Median seconds and the modules loaded by ``statement`` over fresh interpreters."""
    runs = []
    for _ in range(repeat):
        output = subprocess.run(
            [sys.executable, "-c", _PROBE.format(statement=statement)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        runs.append(json.loads(output.splitlines()[-1]))
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "cpu": statistics.median(r["cpu"] for r in runs),
        "cpu_spread": [min(r["cpu"] for r in runs), max(r["cpu"] for r in runs)],
        "modules": statistics.median(r["modules"] for r in runs),
        "stategym_modules": len(runs[0]["stategym"]),
        "stategym": runs[0]["stategym"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh processes per case")
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    parser.add_argument("--list", action="store_true", help="name the stategym modules")
    args = parser.parse_args()
    if not args.json:
        print(
            f"{'case':<26}{'wall s':>8}{'cpu s':>8}{'cpu min-max':>14}"
            f"{'modules':>9}{'stategym':>10}"
        )
    for label, statement in CASES.items():
        figures = measure(statement, args.repeat)
        if args.json:
            print(json.dumps({"case": label, **figures}))
            continue
        print(
            f"{label:<26}{figures['seconds']:>8.3f}{figures['cpu']:>8.3f}"
            f"{'{:.3f}-{:.3f}'.format(*figures['cpu_spread']):>14}{figures['modules']:>9.0f}"
            f"{figures['stategym_modules']:>10}"
        )
        if args.list:
            print("    " + " ".join(str(m) for m in figures["stategym"]))  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main())
