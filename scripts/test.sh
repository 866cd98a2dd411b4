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

# The verl adapter's tests need a venv of their own (verl 0.9 pins transformers<5.11, TRL
# needs a newer one): scripts/test-verl.sh runs them beside the main suite, on the core that
# pytest leaves idle, when the whole suite runs (no pytest arguments) or STATEGYM_VERL=1;
# STATEGYM_VERL=0 leaves them out.
verl_pid=""
verl_log=$(mktemp)
trap 'rm -f "$verl_log"' EXIT
if [ "${STATEGYM_VERL:-$([ $# -eq 0 ] && echo 1 || echo 0)}" = 1 ]; then
    bash scripts/test-verl.sh >"$verl_log" 2>&1 &
    verl_pid=$!
    trap 'kill "$verl_pid" 2>/dev/null || true; rm -f "$verl_log"' EXIT
fi

ruff check src tests benchmarks environments
ruff format --check src tests benchmarks environments
mypy

# pytest exits 5 when it collects no tests; an empty suite must not pass.
status=0
python -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "scripts/test.sh: pytest collected no tests" >&2
    status=1
fi
if [ -n "$verl_pid" ]; then
    verl_status=0
    wait "$verl_pid" || verl_status=$?
    echo "--- scripts/test-verl.sh (the verl adapter's tests, their own venv): last lines ---"
    tail -n 20 "$verl_log"
    if [ "$verl_status" -ne 0 ]; then
        echo "scripts/test.sh: the verl adapter's tests failed (exit $verl_status)" >&2
        [ "$status" -ne 0 ] || status=$verl_status
    fi
fi
exit "$status"
