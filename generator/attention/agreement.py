"""How closely a real head's attention matches a designed head's, row by row (issue 11, item 3).

For one query word, both rows are cut down to the sentence's words that both models have — the real
model's ``[CLS]``, ``[SEP]`` and any word it splits differently are left out — and each is rescaled
to add up to 1. Their *agreement* is Σ_j min(p_j, q_j) = 1 − the total variation distance: 1 when
the rows are the same, 0 when they share no weight. A row where the designed head's weights are all
equal (it looks for nothing there: coreference from a word that is not a pronoun) is not counted.
"""

from __future__ import annotations

import numpy as np

FLAT = 1e-12  # a designed row whose weights differ by less than this looks for nothing


def _rescaled(x: np.ndarray) -> np.ndarray:  # [..., n] -> [..., n] rows summing to 1 (all-zero rows stay 0)
    total = x.sum(axis=-1, keepdims=True)
    return np.divide(x, total, out=np.zeros_like(x), where=total > 0)


def agreement(designed: np.ndarray, real: np.ndarray, align: np.ndarray) -> np.ndarray:
    # [n, n], [..., m, m], [n] int (model word of each word, -1: none) -> [..., r] one per counted row
    """The agreement of each counted query row (see the module docstring), for every real head at once.

    ``designed`` is the designed head's weights over the sentence's words, ``real`` the real heads'
    weights over the model's words (any scale: rows are rescaled), ``align[i]`` the model word that
    is the sentence's word i. Counted rows: aligned queries whose designed row is not flat."""
    return agreements([designed], real, align)[0]


def agreements(designed: list[np.ndarray], real: np.ndarray, align: np.ndarray) -> list[np.ndarray]:
    """:func:`agreement` of several designed heads with the same real heads on one sentence; the
    real rows are cut and rescaled once for all of them."""
    real = np.asarray(real, dtype=np.float64)
    both = np.flatnonzero(align >= 0)  # sentence words the model also has
    q = _rescaled(real[..., align[both][:, None], align[both][None, :]])  # [..., b, b]
    out = []
    for weights in designed:
        weights = np.asarray(weights, dtype=np.float64)
        counted = np.ptp(weights[both], axis=-1) > FLAT  # of the rows in both
        p = _rescaled(weights[np.ix_(both[counted], both)])  # [r, b]
        out.append(np.minimum(p, q[..., counted, :]).sum(axis=-1))
    return out
