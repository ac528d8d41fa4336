"""Why attention divides its scores by √d: a seeded experiment with random queries and keys.

Pure NumPy, no I/O and no YAML. The spotlight's designed heads are tiny (d_k ≤ 12), so the
÷√d switch barely changes them; this module shows the reason at the sizes real models use.

The experiment, for each key length d (:data:`D_VALUES`):

* draw ``draws`` independent trials; each trial is one query q and ``n`` keys k_1 … k_n,
  every component an independent **standard normal** number (mean 0, variance 1) — the
  assumption behind the ÷√d of "Attention Is All You Need" (its footnote 4), and roughly
  what a freshly initialised layer produces;
* the score q·k = Σ_i q_i·k_i is a sum of d products, each of mean 0 and variance 1, so it
  has mean 0 and variance d: its spread (standard deviation) is √d. We measure it;
* softmax the n scores as they are and divided by √d, and measure the largest weight, the
  entropy (in bits: log2 n for even weights, 0 for one-hot) and the size of the softmax's
  Jacobian ‖∂w/∂s‖ (Frobenius norm), which is what the gradient flowing back to the scores is
  multiplied by: it goes to 0 as the softmax saturates to one-hot.

Every d has its own generator, ``np.random.default_rng([seed, d])``, so adding or removing a
size leaves the others' numbers unchanged. One trial per d is kept as an example to draw:
the one whose unscaled top weight is the median of all trials (a typical one, not a pick).

Public API: :func:`experiment` (NumPy results) and :func:`payload` (the JSON-ready, rounded
numbers the page embeds under ``"sqrt"``; see docs/spotlight-data.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from generator.models.core import softmax
from generator.kinds.attention.realheads import largest_remainder

D_VALUES: tuple[int, ...] = (2, 8, 32, 128, 512)
N_KEYS = 8
DRAWS = 1000
SEED = 2017  # the year of "Attention Is All You Need"


@dataclass(frozen=True)
class SizeResult:
    """What one key length d does to the scores and the softmax, with and without ÷√d."""

    d: int
    spread: float  # standard deviation of q·k over all trials and keys (≈ √d)
    spread_scaled: float  # the same for q·k/√d (≈ 1)
    top: float  # mean over trials of the largest softmax weight, unscaled
    top_scaled: float
    entropy: float  # mean entropy of the weights, in bits (log2 n = even, 0 = one-hot)
    entropy_scaled: float
    slope: float  # mean Frobenius norm of the softmax's Jacobian ∂w/∂s
    slope_scaled: float
    example_scores: np.ndarray  # [n] q·k of the example trial
    example_weights: np.ndarray  # [n] softmax(q·k)
    example_weights_scaled: np.ndarray  # [n] softmax(q·k/√d)


def entropy_bits(weights: np.ndarray) -> np.ndarray:  # [..., n] -> [...]
    """−Σ w·log2 w along the last axis, with 0·log 0 = 0."""
    w = np.asarray(weights, dtype=np.float64)
    logs = np.log2(w, out=np.zeros_like(w), where=w > 0)
    return -np.sum(w * logs, axis=-1) + 0.0  # + 0.0: no "-0.0"


def jacobian_norm(weights: np.ndarray) -> np.ndarray:  # [..., n] -> [...]
    """Frobenius norm of the softmax's Jacobian diag(w) − w·wᵀ, for weights w along the last axis.

    ‖J‖² = Σ w_i² − 2·Σ w_i³ + (Σ w_i²)²: 0 for a one-hot row, largest for even-ish rows."""
    w = np.asarray(weights, dtype=np.float64)
    s2 = np.sum(w**2, axis=-1)
    s3 = np.sum(w**3, axis=-1)
    return np.sqrt(np.maximum(s2 - 2 * s3 + s2**2, 0.0))


def scores(d: int, n: int = N_KEYS, draws: int = DRAWS, seed: int = SEED) -> np.ndarray:  # -> [draws, n]
    """q·k for ``draws`` trials of one query and ``n`` keys, components standard normal."""
    if d < 1 or n < 1 or draws < 1:
        raise ValueError("d, n and draws must be positive")
    rng = np.random.default_rng([seed, d])
    q = rng.standard_normal((draws, 1, d))
    k = rng.standard_normal((draws, n, d))
    return np.einsum("tqd,tnd->tn", q, k)


def size_result(d: int, n: int = N_KEYS, draws: int = DRAWS, seed: int = SEED) -> SizeResult:
    s = scores(d, n, draws, seed)
    scaled = s / np.sqrt(d)
    w, ws = softmax(s), softmax(scaled)
    top, top_s = w.max(axis=-1), ws.max(axis=-1)
    example = int(np.argsort(top, kind="stable")[draws // 2])
    return SizeResult(
        d=d,
        spread=float(s.std()), spread_scaled=float(scaled.std()),
        top=float(top.mean()), top_scaled=float(top_s.mean()),
        entropy=float(entropy_bits(w).mean()), entropy_scaled=float(entropy_bits(ws).mean()),
        slope=float(jacobian_norm(w).mean()), slope_scaled=float(jacobian_norm(ws).mean()),
        example_scores=s[example], example_weights=w[example], example_weights_scaled=ws[example],
    )


def experiment(d_values=D_VALUES, n: int = N_KEYS, draws: int = DRAWS, seed: int = SEED) -> list[SizeResult]:
    return [size_result(d, n, draws, seed) for d in d_values]


def payload(d_values=D_VALUES, n: int = N_KEYS, draws: int = DRAWS, seed: int = SEED) -> dict:
    """The page's ``"sqrt"`` data: small (≈ 1.3 KB, 0.5 KB gzip), rounded, every number from
    :func:`experiment`. A fresh copy each call; computed once per process.

    The example's keys are listed strongest first (÷√d keeps the order, so one order serves
    both); its percentages are rounded by the largest-remainder method and sum to 100."""
    kept = _payload(tuple(d_values), n, draws, seed)  # numbers, and lists of numbers one level down
    return {**kept, "sizes": [{key: list(value) if isinstance(value, list) else value for key, value in size.items()}
                              for size in kept["sizes"]]}


@functools.lru_cache(maxsize=4)
def _payload(d_values: tuple[int, ...], n: int, draws: int, seed: int) -> dict:
    sizes = []
    for r in experiment(d_values, n, draws, seed):
        order = np.argsort(-r.example_scores, kind="stable")
        sizes.append({
            "d": r.d,
            "spread": round(r.spread, 2), "spread_scaled": round(r.spread_scaled, 2),
            "top": round(r.top, 3), "top_scaled": round(r.top_scaled, 3),
            "entropy": round(r.entropy, 2), "entropy_scaled": round(r.entropy_scaled, 2),
            "slope": round(r.slope, 3), "slope_scaled": round(r.slope_scaled, 3),
            "scores": [round(float(x), 1) for x in r.example_scores[order]],
            "pct": largest_remainder(r.example_weights[order], 100),
            "pct_scaled": largest_remainder(r.example_weights_scaled[order], 100),
        })
    return {"n": n, "draws": draws, "seed": seed, "max_entropy": round(float(np.log2(n)), 2), "sizes": sizes}
