"""What the benchmark scripts share: the clocks, and how a figure is summarised.

The headline figure of every benchmark is the **median** of several passes with the garbage
collector **on** (what a real run pays), with the spread beside it (the interquartile range
and the min-max). The best pass with the collector paused may be printed beside it, labelled
``best, GC off``: it is what the code costs when nothing else does, never the headline.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
"""Process CPU time (the default: less distorted by other work on a shared machine) or wall."""


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect, then keep the garbage collector out of the timed code (best-of figures only)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass(frozen=True, slots=True)
class Spread:
    """Rates (items per second) of several passes, summarised.

    Attributes:
        rates: every pass's rate, in the order measured (GC on).
        best_gc_off: the best pass with the collector paused, when measured.
    """

    rates: tuple[float, ...]
    best_gc_off: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def iqr(self) -> tuple[float, float]:
        """First and third quartiles (the min and max below 4 passes)."""
        if len(self.rates) < 4:
            return min(self.rates), max(self.rates)
        q = statistics.quantiles(self.rates, n=4, method="inclusive")
        return q[0], q[2]

    def describe(self, scale: float = 1.0, digits: int = 0) -> str:
        """``median [q1-q3]``, each multiplied by ``scale``."""
        low, high = (v * scale for v in self.iqr)
        return f"{self.median * scale:,.{digits}f} [{low:,.{digits}f}-{high:,.{digits}f}]"


def measure(
    work: Callable[[], int], repeat: int, clock: Callable[[], float], best_of: bool = False
) -> Spread:
    """Rates of ``repeat`` passes of ``work`` (which returns how many items it did), GC on.

    With ``best_of``, as many passes again run with the collector paused and the best is kept
    beside the median.
    """
    rates = []
    for _ in range(repeat):
        start = clock()
        count = work()
        rates.append(count / max(clock() - start, 1e-9))
    best = None
    if best_of:
        for _ in range(repeat):
            with quiet_gc():
                start = clock()
                count = work()
                elapsed = clock() - start
            best = max(best or 0.0, count / max(elapsed, 1e-9))
    return Spread(tuple(rates), best)
