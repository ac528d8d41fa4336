"""Temperature, softmax, top-k, top-p and a seeded draw: how a next token is picked from logits.

Pure functions of arrays; nothing here knows YAML, pages or files. Shapes are in the
comments, picoGPT-style: ``[n]`` candidate tokens, ``[t]`` temperatures of a dial. The sampling
lab computes its dial with them, and :mod:`generator.models.sampling` samples the decoder's
tokens with them.

The page (the sampling kind's ``static/10-core.js``, and the decoder engine's sampler) repeats :func:`rank`, :func:`top_k_keep`, :func:`top_p_keep`,
:func:`shares`, :func:`mulberry32` and :func:`draw` operation for operation on the integer
weights this module computes at build (:func:`to_parts`), so that a draw with a given seed
picks the same word in the tests and in the browser. Working on integers makes that exact:
no floating-point sum can come out differently in JavaScript.
"""

from __future__ import annotations

import numpy as np

PARTS = 100_000  # the page's probabilities are whole parts of this total (0.001 % steps)
MASK32 = 0xFFFF_FFFF


def softmax(logits, temperatures):  # [n], [t] -> [t, n]
    """Each row: softmax(logits / T) for one temperature T > 0. The row maximum is subtracted
    before ``exp`` (the same distribution, no overflow), so even T = 0.01 on logits of 100
    stays finite: every row is non-negative and sums to 1."""
    z = np.asarray(logits, dtype=np.float64)[None, :] / np.asarray(temperatures, dtype=np.float64)[:, None]  # [t, n]
    z = z - z.max(axis=-1, keepdims=True)  # [t, n], largest entry 0
    e = np.exp(z)  # [t, n], in (0, 1]
    return e / e.sum(axis=-1, keepdims=True)  # [t, n]


def largest_remainder(values, total: int):  # [..., n] -> [..., n] int64
    """Whole numbers proportional to each row of non-negative ``values`` that add up to exactly
    ``total``: scale, floor, then one more unit to the largest remainders (ties: the lower
    index). A row of zeros stays zeros. The same rule as ``Labs.util.roundShares``."""
    x = np.asarray(values, dtype=np.float64)  # [..., n]
    whole = x.sum(axis=-1, keepdims=True)  # [..., 1]
    raw = np.divide(x * total, whole, out=np.zeros_like(x), where=whole > 0)  # [..., n]
    out = np.floor(raw).astype(np.int64)  # [..., n]
    left = np.where(whole[..., 0] > 0, total - out.sum(axis=-1), 0)  # [...]
    rest = raw - out  # [..., n], each in [0, 1)
    for row in np.ndindex(left.shape):  # one more unit to the ``left[row]`` largest remainders
        k = min(int(left[row]), x.shape[-1])
        if k > 0:
            out[row][_largest(rest[row], k)] += 1
    return out


def _largest(values, k: int):  # [n], 0 < k <= n -> [k] indexes
    """The indexes of the ``k`` largest ``values``, the lower index first among equals: the first
    ``k`` of a stable sort from the largest, found without sorting the row (a vocabulary is
    tens of thousands of values, and ``k`` is at most the few units the floors left over)."""
    cut = -np.partition(-values, k - 1)[k - 1]  # the k-th largest value
    above = np.flatnonzero(values > cut)  # [< k], all of them taken
    level = np.flatnonzero(values == cut)  # ascending: the lower indexes first
    return np.concatenate([above, level[:k - len(above)]])


def to_parts(probs, total: int = PARTS):  # [..., n] -> [..., n] int64
    """Probabilities as whole parts of ``total`` (largest remainder): what the page embeds."""
    return largest_remainder(probs, total)


def rank(weights):  # [n] -> [n] int
    """Indexes from the most to the least likely; ties: the lower index first."""
    return np.argsort(-np.asarray(weights, dtype=np.float64), kind="stable")


def top_k_keep(weights, k: int):  # [n] -> [n] bool
    """Top-k: keep the ``k`` most likely words (``k`` <= 0 or >= n: keep all)."""
    w = np.asarray(weights)
    keep = np.ones(w.shape, dtype=bool)
    if 0 < k < w.shape[-1]:
        keep[:] = False
        keep[rank(w)[:k]] = True
    return keep


def top_p_keep(weights, p_percent: int):  # [n] -> [n] bool
    """Top-p (nucleus): keep the smallest set of the most likely words whose probability
    reaches ``p_percent`` % — in rank order, a word is kept while the words before it hold
    less than p. So the most likely word is always kept; p = 100 is "off" and keeps all. ``weights`` need not be normalised (integer parts are); with
    integers every comparison is exact: ``100 · before < p · total``."""
    w = np.asarray(weights)
    if not 0 < p_percent <= 100:
        raise ValueError(f"top-p must be a whole percentage in 1..100, not {p_percent!r}")
    order = rank(w)  # [n]
    before = np.concatenate([[0], np.cumsum(w[order])[:-1]])  # [n], what ranks above hold
    keep = np.ones(w.shape, dtype=bool)
    if p_percent < 100:
        keep[order] = 100 * before < p_percent * w.sum()
    return keep


def cut(weights, k: int = 0, p_percent: int = 100):  # [n] -> [n]
    """Temperature has been applied already; then top-k, then top-p on what top-k kept (the
    order Hugging Face's ``generate`` commonly uses). Cut words get weight 0; the rest keep
    their weights, so renormalising is dividing by the new sum (:func:`shares`)."""
    w = np.asarray(weights)
    kept = np.where(top_k_keep(w, k), w, 0)
    return np.where(top_p_keep(kept, p_percent), kept, 0)


def shares(weights, total: int = 100):  # [n] -> [n] int
    """Renormalised whole percentages of what is left (adding to exactly ``total``)."""
    return largest_remainder(weights, total)


def mulberry32(seed: int, n: int):  # -> [n] uint32
    """The first ``n`` outputs of mulberry32 (Tommy Ettinger's 32-bit generator) from ``seed``.

    Its state only ever advances by a constant, so output i is a hash of seed + (i+1)·C:
    vectorised here over i. Bit for bit the JavaScript::

        a = a + 0x6D2B79F5 | 0;
        t = Math.imul(a ^ a >>> 15, a | 1);
        t = t + Math.imul(t ^ t >>> 7, t | 61) ^ t;
        return (t ^ t >>> 14) >>> 0;
    """
    M = np.uint64(MASK32)
    a = (np.uint64(seed & MASK32) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x6D2B79F5)) & M  # [n]
    t = ((a ^ (a >> np.uint64(15))) * (a | np.uint64(1))) & M  # [n]; both < 2^32: no overflow of 2^64
    t = (((t + (((t ^ (t >> np.uint64(7))) * (t | np.uint64(61))) & M)) & M) ^ t)  # [n]
    return ((t ^ (t >> np.uint64(14))) & M).astype(np.uint32)  # [n]


def draw(weights, seed: int, n: int):  # [k] ints, seed, n -> [n] int
    """``n`` words drawn from integer ``weights`` with mulberry32(seed): draw i takes output
    u_i and the number r = floor(u_i · total / 2^32) in [0, total), and picks the first word
    (in index order) whose running total of weights exceeds r. Word j is picked for exactly
    the r in [cum_j - w_j, cum_j): a share w_j / total of the values r takes (up to the
    rounding of 2^32 into ``total`` slices, under 1e-4 here)."""
    w = np.asarray(weights, dtype=np.int64)  # [k]
    total = int(w.sum())
    if total <= 0 or np.any(w < 0):
        raise ValueError("draw needs non-negative whole weights with a positive total")
    u = mulberry32(seed, n).astype(np.uint64)  # [n]
    r = (u * np.uint64(total)) >> np.uint64(32)  # [n], in [0, total); u·total < 2^49
    return np.searchsorted(np.cumsum(w), r.astype(np.int64), side="right")  # [n]
