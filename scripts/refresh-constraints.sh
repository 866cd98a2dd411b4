#!/usr/bin/env bash
# Re-resolve constraints.txt: the exact versions of every package the test command installs.
#
# Run it when you want newer tools or libraries, then run `bash scripts/test.sh` and commit
# constraints.txt together with any fixes the new versions need. It resolves from scratch (as a
# fresh machine would, ignoring what is installed here) and writes nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."

report=$(mktemp)
trap 'rm -f "$report"' EXIT
python -m pip install --dry-run --ignore-installed --quiet --report "$report" \
    torch==2.13.0 -e '.[dev,llm,hf,serve,plot,experiments,ray,trl,verifiers,openenv]'
python - "$report" > constraints.txt <<'PY'
import json
import sys

report = json.load(open(sys.argv[1]))
pins = sorted(
    (item["metadata"]["name"], item["metadata"]["version"].split("+")[0])
    for item in report["install"]
    if item["metadata"]["name"].lower() != "stategym"
)
print("# Exact versions for the test command and CI (scripts/test.sh installs with -c constraints.txt).")
print("# Regenerate with: bash scripts/refresh-constraints.sh   (do not edit by hand)")
for name, version in sorted(pins, key=lambda pin: pin[0].lower()):
    print(f"{name}=={version}")
PY
echo "constraints.txt: $(grep -vc '^#' constraints.txt) pins"
