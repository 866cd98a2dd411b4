#!/usr/bin/env bash
# The verl adapter's tests in a virtual environment of their own: verl 0.9 pins
# transformers<5.11, while the main test environment has a newer one (for TRL).
#
#   bash scripts/test-verl.sh [PYTEST ARGS]   # a fresh venv, the pins, tests/adapters/test_verl.py
#   bash scripts/test-verl.sh --refresh       # re-resolve constraints-verl.txt instead (then test)
#
# VERL_VENV=DIR reuses (or creates) that venv instead of a fresh one in a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."

# What this run makes (a fresh venv, 2 GB, and the --refresh report) goes when it ends.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
trap 'exit 143' TERM INT  # killed by scripts/test.sh: still clean up
venv=${VERL_VENV:-$scratch/venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"

if [ "${1:-}" = "--refresh" ]; then
    shift
    report=$scratch/report.json
    "$py" -m pip install --dry-run --ignore-installed --quiet --report "$report" \
        torch==2.13.0 -e '.[dev,hf,verl]'
    "$py" - "$report" > constraints-verl.txt <<'PY'
import json
import sys

report = json.load(open(sys.argv[1]))
pins = {
    item["metadata"]["name"]: item["metadata"]["version"].split("+")[0]
    for item in report["install"]
    if item["metadata"]["name"].lower() != "stategym"
}
print("# Exact versions for the verl adapter's tests (scripts/test-verl.sh installs with -c).")
print("# Regenerate with: bash scripts/test-verl.sh --refresh   (do not edit by hand)")
print(f"torch=={pins.pop('torch')}")  # first: the CPU wheel on disk, never a CUDA build
for name in sorted(pins, key=str.lower):
    print(f"{name}=={pins[name]}")
PY
    echo "constraints-verl.txt: $(grep -vc '^#' constraints-verl.txt) pins"
fi

# torch first: the CPU wheel is on disk, while an unpinned torch pulled in by verl could
# resolve to a multi-gigabyte CUDA build.
"$py" -m pip install -c constraints-verl.txt torch==2.13.0
"$py" -m pip install -c constraints-verl.txt -e '.[dev,hf,verl]'

# The tests skip where verl does not import; here it must, so a broken install fails.
"$py" -W ignore::DeprecationWarning -c "import stategym.adapters.verl"

status=0
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$py" -m pytest tests/adapters/test_verl.py "$@" || status=$?
if [ "$status" -eq 5 ]; then  # pytest collected no tests
    echo "scripts/test-verl.sh: pytest collected no tests" >&2
    exit 1
fi
exit "$status"
