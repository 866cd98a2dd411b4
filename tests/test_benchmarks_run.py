"""The speed benchmarks run to the end: a quick pass of each, no figure asserted.

Performance is measured by the benchmarks, never by the tests; but a benchmark that no
longer runs measures nothing. ``env_speed.py`` and ``score_speed.py`` reach into the
registry's task cache (``cached_task.cache_clear``), which a change to the cache broke
without any test noticing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.parametrize("script", ["env_speed.py", "score_speed.py", "reader_worst_case.py"])
def test_the_benchmark_runs_quick(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), "--quick", "--repeat", "1"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip()
