"""Group-wise int8 quantization (generator/runtime/quantize.py): its error bound, its edge cases,
and a dequantization that is exactly float32(q) * float32(scale)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from generator.runtime.quantize import GROUP, LEVELS, dequantize, n_groups, quantize

finite = st.floats(-1e4, 1e4, allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(1, 5), st.integers(1, 100)), elements=finite))
def test_every_weight_is_within_half_a_step_of_its_group(w):
    q, scales = quantize(w)
    assert q.dtype == np.int8 and q.shape == w.shape
    assert scales.dtype == np.float16 and scales.shape == (w.shape[0], n_groups(w.shape[1]))
    assert np.abs(q.astype(np.int16)).max() <= LEVELS  # -128 is never used
    step = np.repeat(scales.astype(np.float32), GROUP, axis=1)[:, : w.shape[1]]
    error = np.abs(dequantize(q, scales).astype(np.float64) - w)
    # rint's half step, plus the float32 rounding of the product itself
    assert (error <= step.astype(np.float64) * 0.5 * (1 + 2**-10) + np.abs(w) * 2**-23).all()


@settings(max_examples=100, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(1, 70)), elements=finite))
def test_dequantize_is_float32_q_times_float32_scale_entry_by_entry(w):
    q, scales = quantize(w)
    rows, width = w.shape
    expected = np.empty((rows, width), dtype=np.float32)
    for r in range(rows):
        for c in range(width):
            expected[r, c] = np.float32(q[r, c]) * np.float32(scales[r, c // GROUP])
    assert dequantize(q, scales).tobytes() == expected.tobytes()


def test_each_group_has_its_own_scale_the_float16_at_or_just_above_its_largest_weight_over_127():
    w = np.zeros((2, 70), dtype=np.float32)
    w[0, :32] = np.linspace(-1, 1, 32)  # group 0: largest |w| = 1
    w[0, 32:64] = np.linspace(-0.001, 0.002, 32)  # group 1: a thousand times smaller
    w[0, 64:] = [3, -3, 0, 0, 0, 1.5]  # group 2: the short last group (6 weights)
    w[1, 5] = -7.0
    q, scales = quantize(w)
    assert scales.shape == (2, 3)
    peaks = np.array([1, np.float32(0.002), 3], dtype=np.float32)
    assert (scales[0].astype(np.float32) * 127 >= peaks).all()
    below = np.nextafter(scales[0], np.float16(0)).astype(np.float32)  # the next float16 down is too small
    assert (below * 127 < peaks).all()
    assert q[0, 31] == 127 and q[0, 0] == -127 and q[0, 63] == 127 and q[0, 64] == 127 and q[0, 65] == -127
    assert abs(dequantize(q, scales)[0, 32:64] - w[0, 32:64]).max() < 0.002 / 254 * 1.01  # small weights keep their precision


def test_an_all_zero_group_gets_scale_zero_and_zeros_back():
    w = np.zeros((3, 64), dtype=np.float32)
    w[1, 40] = 0.5
    q, scales = quantize(w)
    assert scales[0].tolist() == [0, 0] and scales[2].tolist() == [0, 0] and scales[1, 0] == 0 and scales[1, 1] > 0
    assert not q[0].any() and not q[2].any() and not q[1, :32].any()
    back = dequantize(q, scales)
    assert np.isfinite(back).all() and back[1, 40] == pytest.approx(0.5, rel=1e-3) and np.count_nonzero(back) == 1


def test_a_group_below_float16s_smallest_step_rounds_to_zeros_not_nan():
    w = np.full((1, 32), 1e-12, dtype=np.float32)  # 1e-12 / 127 is below float16's smallest subnormal
    q, scales = quantize(w)
    assert scales.tolist() == [[np.float16(2**-24)]] and not q.any()  # rounded up, never 0 for a non-zero group
    assert dequantize(q, scales).tolist() == [[0.0] * 32]


def test_a_subnormal_scale_is_rounded_up_so_the_largest_weight_is_not_clipped():
    w = np.array([[1e-5, -0.5e-5, 0.25e-5]], dtype=np.float32)  # 1e-5 / 127 falls between float16 subnormals
    q, scales = quantize(w)
    assert float(scales[0, 0]) * 127 >= 1e-5
    assert abs(float(dequantize(q, scales)[0, 0]) - 1e-5) <= float(scales[0, 0]) / 2


def test_the_same_weights_always_give_the_same_bytes():
    w = np.random.default_rng(0).standard_normal((64, 96)).astype(np.float32)
    first, second = quantize(w), quantize(w.copy())
    assert first[0].tobytes() == second[0].tobytes() and first[1].tobytes() == second[1].tobytes()


def test_weights_beyond_float16_scales_are_refused():
    with pytest.raises(AssertionError, match="too large for float16 scales"):
        quantize(np.array([[1e7]], dtype=np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_embedding_table_dequantized_by_rows_is_the_whole_tables_rows_to_the_bit(dtype):
    """reference_model's token embeddings (DequantizedRows) make only the rows a forward pass
    indexes; each is the whole table's row, bit for bit, for a list, an array and one id."""
    from generator.runtime.tensors import DequantizedRows

    rng = np.random.default_rng(5)
    table = rng.normal(0, 0.05, (300, 96)).astype(np.float32)
    q, scales = quantize(table)
    whole = dequantize(q, scales).astype(dtype)
    rows = DequantizedRows(q, scales, dtype)
    ids = np.array([0, 299, 7, 7, 150])
    assert rows.shape == whole.shape
    for index in (ids, ids.tolist(), ids.reshape(1, 5), 42):
        got = rows[index]
        assert got.dtype == whole.dtype and got.tobytes() == whole[index].tobytes()
    assert np.asarray(rows).tobytes() == whole.tobytes()
