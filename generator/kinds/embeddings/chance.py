"""What random points give: the baseline a hubness or anisotropy claim has to beat.

With a few dozen points some point is always among the nearest of several others, and a mean
cosine sits near zero whatever the points mean. A claim that random points would make true as
often as not tells a learner nothing about the model, so the build compares each such claim with
draws of as many random unit vectors, in as many dimensions, split into the same groups. The
draws come from a fixed seed: a build gives the same verdict every time.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

TRIALS = 400
SEED = 2010  # Radovanović, Nanopoulos and Ivanović's hubness paper; any fixed seed would do
RARE = 0.01  # a claim must hold for fewer than 1% of random draws to say something about the model


def top_k_counts(S: np.ndarray, k: int) -> np.ndarray:  # [n, n] cosines -> [n]
    """How many points have each point among their k nearest (a point is never its own)."""
    S = S.astype(float, copy=True)
    np.fill_diagonal(S, -np.inf)
    top = np.argsort(-S, axis=1, kind="stable")[:, :k]
    return np.bincount(top.ravel(), minlength=len(S))


def cross_pairs(groups: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    n = len(groups)
    i, j = np.triu_indices(n, 1)
    keep = np.array([groups[a] != groups[b] for a, b in zip(i, j)], dtype=bool)
    return i[keep], j[keep]


@lru_cache(maxsize=32)
def draws(groups: tuple[str, ...], d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Over TRIALS draws of len(groups) random unit vectors in d dimensions: the largest top-k
    count of each draw [TRIALS], and each draw's mean cosine over pairs from different groups
    [TRIALS] (NaN when every point is in one group)."""
    rng = np.random.default_rng(SEED)
    n = len(groups)
    ci, cj = cross_pairs(groups)
    hubs, means = np.zeros(TRIALS, dtype=int), np.full(TRIALS, np.nan)
    for t in range(TRIALS):
        X = rng.standard_normal((n, d))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        S = X @ X.T
        hubs[t] = top_k_counts(S, min(k, n - 1)).max()
        if len(ci):
            means[t] = S[ci, cj].mean()
    return hubs, means


def share(found: np.ndarray, holds) -> float:
    """The share of random draws for which the claim holds."""
    return float(np.mean([bool(holds(x)) for x in found]))


def least_rare_count(hubs: np.ndarray) -> int:
    """The smallest top-k count that random draws reach in fewer than RARE of them."""
    n = int(hubs.max()) + 1
    return next(c for c in range(1, n + 1) if np.mean(hubs >= c) < RARE)
