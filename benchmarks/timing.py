"""What the benchmark scripts share: the clocks they can time with, and a quiet collector."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
"""Process CPU time (the default: less distorted by other work on a shared machine) or wall."""


@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect, then keep the garbage collector out of the timed code."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
