"""How closely a real head's attention matches a designed head's, row by row: which learned head a
designed head resembles most.

For one query word, both rows are cut down to the sentence's words that both models have — the real
model's ``[CLS]``, ``[SEP]`` and any word it splits differently are left out — and each is rescaled
to add up to 1. Their *agreement* is Σ_j min(p_j, q_j) = 1 − the total variation distance: 1 when
the rows are the same, 0 when they share no weight. A row where the designed head's weights are all
equal (it looks for nothing there: coreference from a word that is not a pronoun) is not counted.
"""

from __future__ import annotations

import math

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
    """:func:`agreement` of several designed heads (of one sentence: all [n, n]) with the same real
    heads [..., m, m] on one sentence, all at once.

    Each number is that of :func:`agreement` alone, bit for bit, as it was when each head was
    worked out on its own: a real row is rescaled the same way, a designed row's total is NumPy's
    (pairwise) sum along it, and with more than one real head an agreement Σ_j min(p, q) adds its
    terms one after the other, j = 0, 1, … (the reduced axis is the outermost in memory); the rows
    of the result lie that way too ([r, ...] in memory), so that summing them over the last axis
    also adds them one by one. A single real head's rows lie one after the other instead."""
    if not designed:
        return []
    rows, counted = _agreement_rows(designed, real, align)
    if isinstance(rows, list):
        return rows
    lead = np.shape(real)[:-2]
    return [rows[d][counted[d]].T.reshape(lead + (-1,)) for d in range(len(designed))]  # [..., r]


def agreement_sums(designed: list[np.ndarray] | np.ndarray, real: np.ndarray, align: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # [D] x [n, n] (or [D, n, n]), [..., m, m], [n] -> sums [D, ...], counts [D]
    """``[a.sum(axis=-1) for a in agreements(...)]`` and how many rows each head counts, the same
    numbers in one go: a row that is not counted adds 0.0, which changes nothing when the rows
    are added one by one."""
    rows, counted = _agreement_rows(designed, real, align)
    if isinstance(rows, list):
        return np.array([r.sum(axis=-1) for r in rows]).reshape((len(designed),) + np.shape(real)[:-2]), counted.sum(axis=1)
    rows *= counted[:, :, None]
    return rows.sum(axis=1).reshape((len(designed),) + np.shape(real)[:-2]), counted.sum(axis=1)


def _agreement_rows(designed: list[np.ndarray], real: np.ndarray, align: np.ndarray):
    """The work of :func:`agreements`: each designed head's agreement for every row in both [D, b, K]
    (K: the real heads) and which rows count [D, b]; for a single real head, :func:`agreements`'
    answer itself (a list) and the rows that count."""
    real = np.asarray(real)
    lead = real.shape[:-2]
    both = np.flatnonzero(align >= 0)  # sentence words the model also has
    at = align[both]
    weights = np.asarray(designed, dtype=np.float64).take(both, axis=1)  # [D, b, n]
    counted = weights.max(axis=-1) - weights.min(axis=-1) > FLAT  # [D, b] of the rows in both
    p = weights.take(both, axis=2)  # [D, b_i, b_j] in C order: each row's total is summed pairwise
    total = p.sum(axis=-1, keepdims=True)
    p = p / total if total.all() else np.divide(p, total, out=np.zeros_like(p), where=total > 0)
    if math.prod(lead) == 1:  # one real head: its rows lie one after the other, and sum pairwise
        q = _rescaled(real[..., at[:, None], at[None, :]].astype(np.float64))  # [..., b_i, b_j]
        return [np.minimum(p[d][counted[d]], q[..., counted[d], :]).sum(axis=-1) for d in range(len(designed))], counted
    cut = real.reshape((-1,) + real.shape[-2:]).transpose(2, 1, 0)[at[:, None], at[None, :]]  # [b_j, b_i, K]
    cut = cut.astype(np.float64)
    total = cut.sum(axis=0)  # [b_i, K]
    q = cut / total if total.all() else np.divide(cut, total, out=np.zeros(cut.shape), where=total > 0)  # [b_j, b_i, K]
    terms = np.empty((len(both), len(designed), len(both), q.shape[-1]))  # [b_j, D, b_i, K]
    np.minimum(p.transpose(2, 0, 1)[..., None], q[:, None], out=terms)
    return terms.sum(axis=0), counted  # [D, b_i, K]: Σ_j one term after the other
