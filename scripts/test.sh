#!/usr/bin/env bash
# Install stategym with every extra and run the checks CI runs: lint, format, types, tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every package comes at the exact version in constraints.txt, so a fresh machine, CI and a
# developer test the same thing (refresh the pins with scripts/refresh-constraints.sh).
# torch first: the CPU wheel is on disk, while an unpinned torch pulled in by the hf extra
# could resolve to a multi-gigabyte CUDA build.
python -m pip install -c constraints.txt torch==2.13.0
python -m pip install -c constraints.txt -e '.[dev,llm,hf,serve,plot,experiments,ray,trl,verifiers,openenv]'

ruff check src tests benchmarks environments
ruff format --check src tests benchmarks environments
mypy

# pytest exits 5 when it collects no tests; an empty suite must not pass.
status=0
python -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "scripts/test.sh: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
