"""How much of a figure could be chance: intervals for proportions and a paired comparison of two
rankers on the same cases.

Golden sets are small (30 to 110 cases per half), so one case moves recall@1 by 0.01 to 0.04 and
refusal precision by up to 0.1. The evaluation reports each headline figure with a 95% interval, and
"ours against the naive baseline" as the cases each side won, an exact sign test and a paired
bootstrap interval of the difference, so that "above the baseline" can be told from noise.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

Z95 = 1.959963984540054


def wilson(successes: int, n: int, *, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); (0, 1) when there is no case.
    Unlike the normal approximation it stays within [0, 1] and is sound at 0 or n successes."""
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes: {successes} is not between 0 and n={n}")
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4))


def sign_test(won: int, lost: int) -> float:
    """Exact two-sided sign test (McNemar's exact test on the discordant cases): the probability of a
    split at least this uneven if each discordant case were a coin flip. Ties do not count."""
    n = won + lost
    if n == 0:
        return 1.0
    k = min(won, lost)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return round(min(1.0, 2 * tail), 4)


def paired(ours: Sequence[float], base: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> dict:
    """Ours against the baseline, case by case (the same cases in the same order): the mean
    difference, its 95% percentile interval over ``resamples`` bootstrap resamples of the cases (a
    fixed ``seed``: the same figures on every run), the cases each side scored higher on, and the
    sign test of those."""
    if len(ours) != len(base):
        raise ValueError(f"paired: {len(ours)} scores against {len(base)}; the same cases are needed")
    a, b = np.asarray(ours, dtype=float), np.asarray(base, dtype=float)
    won, lost = int(np.sum(a > b)), int(np.sum(a < b))
    if not len(a):
        return {"diff": 0.0, "ci95": [0.0, 0.0], "won": 0, "lost": 0, "p_value": 1.0}
    d = a - b
    return {"diff": round(float(d.mean()), 4), "ci95": bootstrap_mean(d, resamples=resamples, seed=seed),
            "won": won, "lost": lost, "p_value": sign_test(won, lost)}


def rank_scores(ranks: Sequence[int | None]) -> dict[str, list[float]]:
    """Per-case scores behind recall@1, recall@5 and MRR@10 (their means are those metrics)."""
    return {"recall_at_1": [1.0 if r == 1 else 0.0 for r in ranks],
            "recall_at_5": [1.0 if r is not None and r <= 5 else 0.0 for r in ranks],
            "mrr_at_10": [1 / r if r is not None and r <= 10 else 0.0 for r in ranks]}


def compare_ranks(ours: Sequence[int | None], base: Sequence[int | None]) -> dict[str, dict]:
    """:func:`paired` for recall@1, recall@5 and MRR@10 of two page rankings of the same cases."""
    so, sb = rank_scores(ours), rank_scores(base)
    return {"cases": len(ours), **{k: paired(so[k], sb[k]) for k in so}}


def bootstrap_mean(values: Sequence[float], *, resamples: int = 2000, seed: int = 0) -> list[float]:
    """95% percentile bootstrap interval of a mean (for MRR, which is not a proportion)."""
    v = np.asarray(values, dtype=float)
    if not len(v):
        return [0.0, 0.0]
    idx = np.random.default_rng(seed).integers(0, len(v), size=(resamples, len(v)))
    lo, hi = np.percentile(v[idx].mean(axis=1), [2.5, 97.5])
    return [round(float(lo), 4), round(float(hi), 4)]
