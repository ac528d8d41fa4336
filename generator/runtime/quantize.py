"""Group-wise symmetric int8 quantization of weight matrices, and its exact inverse.

A matrix is stored as the rows the in-page kernel reads: for a linear layer ``y = x · W`` that
is Hugging Face's ``[out, in]`` layout, each row holding the weights that one output sums over;
for the token embeddings it is one row per token. Each row is cut into groups of
:data:`GROUP` consecutive entries (the last one shorter when the width is not a multiple), and
every group gets its own scale::

    scale = float16(max |w| / 127)           per group, rounded up where rounding went below; 0 for an all-zero group
    q     = clip(rint(w / scale), -127, 127) int8; 0 wherever scale is 0
    w'    = float32(q) * float32(scale)      what NumPy and the JavaScript both compute

The quantization divides by the float16-rounded scale, so the scale a reader multiplies by is
the very one the weights were rounded against, and a scale is never below max |w| / 127, so no
weight is clipped: |w - w'| <= scale / 2 for every weight. Float16 rounding moves a scale by at
most 2⁻¹¹ of itself (more only for groups below 10⁻⁵, where float16 runs out of bits and the
bound still holds). Small groups inside a matrix of large ones keep their own precision, which
one scale per row would lose.

Pure NumPy, no I/O; shapes on the signature lines.
"""

from __future__ import annotations

import numpy as np

GROUP = 32  # weights sharing one scale: ~1/3 the error of one scale per row for 1/16 byte per weight
LEVELS = 127  # symmetric: -127..127, so -128 is never used and negation is exact
# float16 keeps 11 significant bits (relative error <= 2^-11), 30x finer than the int8 grid
# itself (1/254 of the group's largest weight); its largest finite value is 65504.
SCALE_DTYPE = np.float16
MAX_ABS_WEIGHT = float(np.finfo(SCALE_DTYPE).max) * LEVELS / 2  # beyond this a scale would overflow float16


def n_groups(width: int) -> int:
    """Groups in a row of ``width`` entries: ceil(width / GROUP)."""
    return -(-width // GROUP)


def quantize(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # [rows, width] -> [rows, width] int8, [rows, G] float16
    """Quantize ``w`` row-wise in groups of :data:`GROUP`; returns ``(q, scales)``.

    Preconditions (asserted): a 2-D finite matrix with every |w| below :data:`MAX_ABS_WEIGHT`.
    Deterministic: the same float32 input always gives the same bytes.
    """
    w = np.asarray(w, dtype=np.float32)
    assert w.ndim == 2, f"quantize takes a matrix, not shape {w.shape}"
    assert np.isfinite(w).all(), "weights must be finite"
    rows, width = w.shape
    groups = n_groups(width)
    padded = np.zeros((rows, groups * GROUP), dtype=np.float32)  # zeros never raise a group's max
    padded[:, :width] = w
    blocks = padded.reshape(rows, groups, GROUP)  # [rows, G, GROUP]
    peak = np.abs(blocks).max(axis=-1)  # [rows, G]
    assert peak.size == 0 or peak.max() < MAX_ABS_WEIGHT, f"a weight of {peak.max():g} is too large for float16 scales"
    scales = (peak / np.float32(LEVELS)).astype(SCALE_DTYPE)  # [rows, G]
    short = scales.astype(np.float32) * np.float32(LEVELS) < peak  # rounded down: the largest weight would clip
    scales[short] = np.nextafter(scales[short], SCALE_DTYPE(np.inf))
    divisor = scales.astype(np.float32)[..., None]  # [rows, G, 1]
    q = np.zeros_like(blocks)
    np.divide(blocks, divisor, out=q, where=divisor > 0)  # an all-zero group stays 0
    q = np.clip(np.rint(q), -LEVELS, LEVELS).astype(np.int8)
    return q.reshape(rows, groups * GROUP)[:, :width].copy(), scales


def dequantize(q: np.ndarray, scales: np.ndarray) -> np.ndarray:  # [rows, width] int8, [rows, G] -> [rows, width] float32
    """``float32(q) * float32(scale)``, entry by entry: exactly what the in-page kernel multiplies."""
    q = np.asarray(q)
    rows, width = q.shape
    assert scales.shape == (rows, n_groups(width)), f"scales {scales.shape} do not fit q {q.shape}"
    per_entry = np.repeat(np.asarray(scales, dtype=np.float32), GROUP, axis=1)[:, :width]  # [rows, width]
    return q.astype(np.float32) * per_entry
