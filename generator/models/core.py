"""Scaled dot-product attention in pure NumPy.

Pure functions, no I/O. Every function is vectorised over any leading batch/head axes
and keeps the dtype of its inputs (float32 stays float32, float64 stays float64).
Shapes are written on the signature line; ``...`` stands for any leading axes.
"""

from __future__ import annotations

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:  # [...] -> [...]
    """Max-subtracted softmax along ``axis``; returns a new array, ``x`` is not modified.

    Floating inputs keep their dtype; other inputs are computed in float64. Entries at
    -inf get exactly 0. Finite inputs never give NaN or inf, however large (±1e30
    included). A slice that is entirely -inf has no finite entry to normalise over; it
    gives all zeros rather than NaN, meaning "attends to nothing".
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    return softmax_into(x, np.empty_like(x), axis)


def softmax_into(x: np.ndarray, out: np.ndarray, axis: int) -> np.ndarray:  # [...], [...] -> out
    """:func:`softmax` written into ``out``, which may be ``x`` itself (no temporaries of x's size)."""
    peak = np.max(x, axis=axis, keepdims=True)
    np.copyto(peak, 0, where=~np.isfinite(peak))  # all -inf slice: avoid -inf - -inf
    with np.errstate(over="ignore"):  # x - peak below the float range is -inf, whose exp is 0
        np.subtract(x, peak, out=out)
    np.exp(out, out=out)
    total = np.sum(out, axis=axis, keepdims=True)  # >= 1 unless the slice was all -inf
    inverse = np.reciprocal(total, out=np.zeros_like(total), where=total > 0)
    return np.multiply(out, inverse, out=out)


def causal_mask(n: int) -> np.ndarray:  # -> [n, n] bool
    """Lower-triangular mask: query i may attend to keys 0..i (True = may attend)."""
    return np.tril(np.ones((n, n), dtype=bool))


def scaled_dot_product_attention(
    q: np.ndarray,  # [..., n_q, d_k]
    k: np.ndarray,  # [..., n_k, d_k]
    v: np.ndarray,  # [..., n_k, d_v]
    mask: np.ndarray | None = None,  # bool, broadcastable to [..., n_q, n_k]; True = may attend
    bias: np.ndarray | None = None,  # broadcastable to [..., n_q, n_k]; added to scaled scores
    scale: float | None = None,  # defaults to 1/sqrt(d_k)
) -> tuple[np.ndarray, np.ndarray]:  # -> [..., n_q, d_v], [..., n_q, n_k]
    """softmax(q·kᵀ · scale + bias, masked) · v; returns ``(output, weights)``.

    A query row whose keys are all masked gets zero weights and a zero output.
    """
    q, k = np.asarray(q), np.asarray(k)
    dtype = np.result_type(q, k)  # the dtype of the scores and the weights
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float64)
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    # Scaling q ([n_q, d_k]) costs less than scaling the scores ([n_q, n_k]) and equals
    # it up to rounding. The scores array is ours from here on, so bias, mask and
    # softmax all work on it in place: one [..., n_q, n_k] array in all, the weights.
    q = q.astype(dtype, copy=False) * np.asarray(scale, dtype=dtype)
    scores = np.matmul(q, np.swapaxes(k.astype(dtype, copy=False), -1, -2))
    if bias is not None:
        bias = np.asarray(bias, dtype=dtype)
        if np.broadcast_shapes(scores.shape, bias.shape) == scores.shape:
            scores += bias
        else:  # bias has more leading axes than q and k
            scores = scores + bias
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        if np.broadcast_shapes(scores.shape, mask.shape) == scores.shape:
            np.copyto(scores, -np.inf, where=~mask)
        else:  # mask has more leading axes than q and k
            scores = np.where(mask, scores, np.asarray(-np.inf, dtype=dtype))
    weights = softmax_into(scores, scores, axis=-1)
    return np.matmul(weights, v), weights


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:  # [..., n, h*d] -> [..., h, n, d]
    """Split the last axis into ``n_heads`` heads and move the head axis before the tokens."""
    *lead, n, width = x.shape
    assert width % n_heads == 0, f"width {width} is not divisible by {n_heads} heads"
    x = x.reshape(*lead, n, n_heads, width // n_heads)
    return np.swapaxes(x, -3, -2)


def merge_heads(x: np.ndarray) -> np.ndarray:  # [..., h, n, d] -> [..., n, h*d]
    """Inverse of :func:`split_heads`."""
    x = np.swapaxes(x, -3, -2)
    *lead, n, h, d = x.shape
    return x.reshape(*lead, n, h * d)


def multi_head_attention(
    x_q: np.ndarray,  # [..., n_q, d_model]   the sequence that asks (queries)
    x_kv: np.ndarray,  # [..., n_k, d_model]  the sequence that answers (keys, values); x_q for self-attention
    w_q: np.ndarray,  # [d_model, h*d_k]
    w_k: np.ndarray,  # [d_model, h*d_k]
    w_v: np.ndarray,  # [d_model, h*d_v]
    w_o: np.ndarray,  # [h*d_v, d_out]
    n_heads: int,
    b_q: np.ndarray | None = None,  # [h*d_k]
    b_k: np.ndarray | None = None,  # [h*d_k]
    b_v: np.ndarray | None = None,  # [h*d_v]
    b_o: np.ndarray | None = None,  # [d_out]
    mask: np.ndarray | None = None,  # bool, broadcastable to [..., h, n_q, n_k]
    bias: np.ndarray | None = None,  # broadcastable to [..., h, n_q, n_k]
) -> tuple[np.ndarray, np.ndarray]:  # -> [..., n_q, d_out], [..., h, n_q, n_k]
    """Multi-head attention with per-head projections and an output projection.

    Self-attention passes the same array as ``x_q`` and ``x_kv``; cross-attention passes
    the decoder's sequence as ``x_q`` and the encoder's as ``x_kv``.
    """

    def project(x, w, b):
        y = np.matmul(x, w)
        return y if b is None else y + b

    q = split_heads(project(x_q, w_q, b_q), n_heads)
    k = split_heads(project(x_kv, w_k, b_k), n_heads)
    v = split_heads(project(x_kv, w_v, b_v), n_heads)
    heads, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    return project(merge_heads(heads), w_o, b_o), weights
