"""The benchmarks' shared summary: the median with GC on is the headline, the spread beside."""

from __future__ import annotations

import sys
from pathlib import Path

# benchmarks/ is a folder of scripts, not a package
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from timing import Spread, measure


def test_spread_reports_median_and_quartiles() -> None:
    spread = Spread((10.0, 40.0, 20.0, 30.0, 50.0))
    assert spread.median == 30.0
    assert spread.iqr == (20.0, 40.0)
    assert spread.describe() == "30 [20-40]"


def test_spread_of_few_passes_is_min_max() -> None:
    assert Spread((3.0, 1.0, 2.0)).iqr == (1.0, 3.0)


def test_measure_counts_items_per_clock_second() -> None:
    ticks = iter(range(100))
    spread = measure(lambda: 6, repeat=3, clock=lambda: float(next(ticks)) * 2, best_of=True)
    assert spread.rates == (3.0, 3.0, 3.0)  # 6 items over 2 clock seconds
    assert spread.best_gc_off == 3.0
