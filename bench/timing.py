"""Timing helpers shared by the benchmarks that compare growth with a baseline."""

from __future__ import annotations

import math
import time
from typing import Any, Callable


def best_of(fn: Callable[[Any], Any], arg: Any, runs: int = 3) -> float:
    """The fastest of ``runs`` calls of ``fn(arg)``, in seconds (the least disturbed by other work)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - t)
    return min(times)


def growth(n0: float, n1: float, t0: float, t1: float) -> float:
    """The exponent k of n^k that takes ``t0`` at size ``n0`` to ``t1`` at ``n1`` (1.0 linear, 2.0 quadratic)."""
    return math.log(max(t1, 1e-9) / max(t0, 1e-9)) / math.log(n1 / n0)
