"""Instructions the environment executes, counted by callgrind: a figure the load cannot move.

Usage::

    python benchmarks/instructions.py --domain travel --mode typed        # this checkout
    python benchmarks/instructions.py --domain meetings --mode gym --reps 2
    PYTHONPATH=/tmp/old/src python benchmarks/instructions.py ...         # another checkout

On a shared machine a timed benchmark moves by a quarter from pass to pass, which hides a
10% change. This one counts the CPU instructions (``Ir``) of replaying the expert's actions
on 20 tasks ``--reps`` times, through the typed API (``Env.step``) or the Gymnasium text
interface (JSON text in and out), under ``valgrind --tool=callgrind``. Instrumentation is
switched on only for the replay (``callgrind_control -i on`` once the workload has played
its warm-up pass and waits on a pipe) and the workload leaves with ``os._exit``, so imports,
task generation and interpreter teardown are not counted. The same code counts the same
instructions to about 0.05% (string hashing is drawn anew in every process; run under
``PYTHONHASHSEED=0`` for equal counts); compare two checkouts by running the script under
each one's ``PYTHONPATH``. Needs ``valgrind`` (with ``callgrind_control``) on
``PATH``; about 30 s a count.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS = 20
"""Expert episodes replayed per repetition."""


def workload(domain_name: str, mode: str, reps: int, ready: Path, go: Path) -> None:
    """Warm up, say so, wait for the driver, replay ``reps`` times and leave at once."""
    import gymnasium
    import orjson

    from stategym.kernel.env import Env
    from stategym.kernel.protocol import action_to_message
    from stategym.registry import get_domain

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import env_speed

    domain = get_domain(domain_name)
    episodes = env_speed.record(domain, "expert", range(TASKS))
    env: object
    if mode == "typed":
        env = Env(domain)
        work = [(e.task, list(e.actions)) for e in episodes]
    else:
        env = gymnasium.make(domain.env_id)
        work = [
            (e.task, [orjson.dumps(action_to_message(a)).decode() for a in e.actions])
            for e in episodes
        ]

    def replay() -> None:
        for task, actions in work:
            env.reset(options={"task": task})  # type: ignore[attr-defined]
            for action in actions:
                env.step(action)  # type: ignore[attr-defined]

    replay()
    ready.write_text(str(os.getpid()))
    with go.open() as pipe:  # blocks until the driver has switched instrumentation on
        pipe.read()
    for _ in range(reps):
        replay()
    sys.stdout.flush()
    os._exit(0)  # no teardown: what was counted is the replay


def count(domain: str, mode: str, reps: int) -> int:
    """Run the workload under callgrind and return the instructions of its replay."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("needs valgrind and callgrind_control on PATH")
    with tempfile.TemporaryDirectory() as folder:
        ready, go, out = Path(folder, "ready"), Path(folder, "go"), Path(folder, "callgrind.out")
        os.mkfifo(go)
        command = [
            "valgrind", "--tool=callgrind", "--instr-atstart=no",
            f"--callgrind-out-file={out}", sys.executable, __file__, "--workload",
            "--domain", domain, "--mode", mode, "--reps", str(reps),
            "--ready", str(ready), "--go", str(go),
        ]  # fmt: skip
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while not ready.exists():
            if process.poll() is not None:
                raise SystemExit(process.stderr.read().decode() if process.stderr else "failed")
            time.sleep(0.2)
        pid = ready.read_text()
        subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
        go.write_text("go")
        _, err = process.communicate()
        found = re.search(r"Collected : (\d+)", err.decode())
        if found is None:
            raise SystemExit(err.decode()[-2000:])
        return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="travel")
    parser.add_argument("--mode", choices=("typed", "gym"), default="typed")
    parser.add_argument("--reps", type=int, default=2, help="replays of the 20 tasks counted")
    parser.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--ready", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--go", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.workload:
        workload(args.domain, args.mode, args.reps, args.ready, args.go)
        return 0
    instructions = count(args.domain, args.mode, args.reps)
    print(
        f"{args.domain} {args.mode}: {instructions:,} instructions for {args.reps} replays of "
        f"{TASKS} expert episodes ({instructions / args.reps / TASKS:,.0f} an episode)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
