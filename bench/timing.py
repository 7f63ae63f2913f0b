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


def race(shapes: dict[str, Callable[[int], Any]], sizes: tuple[int, ...], baseline: Callable[[Any], Any],
         now: Callable[[Any], Any], *, same: Callable[[Any], bool], width: int = 34) -> None:
    """For each shape and size: check ``same(input)`` (both sides decide alike), then print the best
    time of the baseline and of now, their ratio, and each side's growth from the smallest size to the
    largest."""
    print(f"{'shape':{width}} {'size':>6} {'baseline s':>11} {'now s':>9} {'ratio':>8}")
    for name, make in shapes.items():
        rows = []
        for n in sizes:
            arg = make(n)
            assert same(arg), name
            old, new = best_of(baseline, arg), best_of(now, arg)
            rows.append((n, old, new))
            print(f"{name:{width}} {n:>6} {old:>11.4f} {new:>9.5f} {old / max(new, 1e-9):>8.2f}x")
        (n0, o0, w0), (n1, o1, w1) = rows[0], rows[-1]
        print(f"{'':{width}} growth {n0}→{n1}: baseline n^{growth(n0, n1, o0, o1):.1f}, "
              f"now n^{growth(n0, n1, w0, w1):.1f}")
