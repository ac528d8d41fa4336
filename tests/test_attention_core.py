"""Tests for generator.models.core: softmax, scaled dot-product attention, heads.

The reference implementation below is deliberately naive (Python loops, math.fsum, float64)
so that it shares no code and no vectorisation tricks with the module under test.
"""

from __future__ import annotations

import math
import warnings

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from generator.models.core import (
    causal_mask,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

# Modest example counts keep the whole file well under the 20 s budget.
PROPERTY = settings(max_examples=60, deadline=None)

DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
SUM_TOLERANCE = {np.float32: 1e-6, np.float64: 1e-12}
REFERENCE_TOLERANCE = {np.float32: 1e-5, np.float64: 1e-10}


# --- helpers ------------------------------------------------------------------------------


def reference_attention(q, k, v, mask=None, bias=None, scale=None):
    """softmax(q·kᵀ·scale + bias, masked)·v, one query and one key at a time, in float64."""
    n_q, d_k = q.shape[-2:]
    n_k, d_v = v.shape[-2:]
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    mask = np.ones((n_q, n_k), dtype=bool) if mask is None else mask
    bias = np.zeros((n_q, n_k)) if bias is None else bias
    lead = np.broadcast_shapes(
        q.shape[:-2], k.shape[:-2], v.shape[:-2], mask.shape[:-2], bias.shape[:-2]
    )
    q, k, v = (np.broadcast_to(a, lead + a.shape[-2:]) for a in (q, k, v))
    mask, bias = (np.broadcast_to(a, lead + (n_q, n_k)) for a in (mask, bias))
    output = np.zeros(lead + (n_q, d_v))
    weights = np.zeros(lead + (n_q, n_k))
    for index in np.ndindex(*lead):
        for i in range(n_q):
            allowed = [j for j in range(n_k) if mask[index][i, j]]
            if not allowed:
                continue  # nothing to attend to: zero weights, zero output
            scores = {
                j: math.fsum(float(q[index][i, c]) * float(k[index][j, c]) for c in range(d_k))
                * scale
                + float(bias[index][i, j])
                for j in allowed
            }
            peak = max(scores.values())
            exps = {j: math.exp(s - peak) for j, s in scores.items()}
            total = math.fsum(exps.values())
            for j in allowed:
                weights[index][i, j] = exps[j] / total
            for c in range(d_v):
                output[index][i, c] = math.fsum(
                    weights[index][i, j] * float(v[index][j, c]) for j in allowed
                )
    return output, weights


def reference_softmax_row(row):
    """Softmax of one 1-D sequence of floats, by hand."""
    finite = [x for x in row if x != -math.inf]
    if not finite:
        return [0.0] * len(row)
    peak = max(finite)
    exps = [0.0 if x == -math.inf else math.exp(x - peak) for x in row]
    total = math.fsum(exps)
    return [e / total for e in exps]


def random_array(rng, shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def finite_rows(dtype, min_value=None, max_value=None):
    """2-D arrays of finite floats of ``dtype``, anywhere in the float range by default."""
    return hnp.arrays(
        dtype,
        st.tuples(st.integers(1, 4), st.integers(1, 12)),
        elements=st.floats(
            min_value,
            max_value,
            allow_nan=False,
            allow_infinity=False,
            width=np.finfo(dtype).bits,
        ),
    )


# --- softmax ------------------------------------------------------------------------------


@DTYPES
@PROPERTY
@given(data=st.data())
def test_softmax_rows_sum_to_one(dtype, data):
    x = data.draw(finite_rows(dtype))
    weights = softmax(x, axis=-1)
    np.testing.assert_allclose(weights.sum(axis=-1, dtype=np.float64), 1.0, rtol=0, atol=SUM_TOLERANCE[dtype])


@DTYPES
@PROPERTY
@given(data=st.data())
def test_softmax_is_non_negative_and_finite(dtype, data):
    x = data.draw(finite_rows(dtype))
    weights = softmax(x, axis=-1)
    assert np.all(np.isfinite(weights))
    assert np.all(weights >= 0)


@DTYPES
@PROPERTY
@given(data=st.data())
def test_softmax_is_invariant_to_adding_a_constant_to_a_row(dtype, data):
    # Integer-valued floats keep x + c exact in both dtypes, so the result must not change
    # at all; constants up to 1e6 would overflow exp without the max subtraction.
    x = data.draw(finite_rows(dtype, -30, 30)).round()
    shift = data.draw(
        hnp.arrays(dtype, (x.shape[0], 1), elements=st.integers(-1_000_000, 1_000_000).map(float))
    )
    np.testing.assert_array_equal(softmax(x + shift), softmax(x))


@pytest.mark.parametrize(
    "row, expected",
    [
        ([1e30, -1e30], [1.0, 0.0]),
        ([1e30, 1e30], [0.5, 0.5]),
        ([-1e30, -1e30, -1e30, -1e30], [0.25] * 4),
        ([-1e30, -np.inf], [1.0, 0.0]),
        ([1e30, -np.inf, 0.0], [1.0, 0.0, 0.0]),
        ([0.0, -np.inf, 0.0, -np.inf], [0.5, 0.0, 0.5, 0.0]),
        ([-np.inf, -np.inf, -np.inf], [0.0, 0.0, 0.0]),
    ],
    ids=["pm1e30", "two-1e30", "all-minus-1e30", "minus-1e30-and-inf", "mix", "half-masked", "all-minus-inf"],
)
@DTYPES
def test_softmax_extreme_rows(row, expected, dtype):
    weights = softmax(np.array([row], dtype=dtype))
    assert weights.dtype == dtype
    assert not np.any(np.isnan(weights))
    np.testing.assert_allclose(weights[0], expected, rtol=0, atol=SUM_TOLERANCE[dtype])


@DTYPES
@PROPERTY
@given(data=st.data())
def test_softmax_minus_inf_entries_are_exactly_zero_and_never_nan(dtype, data):
    big = float(np.finfo(dtype).max)
    element = st.one_of(
        st.sampled_from([1e30, -1e30, big, -big, -math.inf]),
        st.floats(-1e3, 1e3, width=np.finfo(dtype).bits),
    )
    x = data.draw(hnp.arrays(dtype, st.tuples(st.integers(1, 4), st.integers(1, 8)), elements=element))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow/invalid RuntimeWarnings either
        weights = softmax(x)
    assert not np.any(np.isnan(weights)) and np.all(np.isfinite(weights))
    assert np.all(weights[x == -math.inf] == 0)
    has_finite = np.any(np.isfinite(x), axis=-1)
    np.testing.assert_allclose(weights[has_finite].sum(-1, dtype=np.float64), 1.0, atol=SUM_TOLERANCE[dtype])
    assert np.all(weights[~has_finite] == 0)


@DTYPES
@pytest.mark.parametrize("shape", [(1, 5), (3, 4), (2, 3, 4)], ids=["one-row", "rows", "batched"])
def test_softmax_all_minus_inf_slice_gives_zeros(dtype, shape):
    x = np.full(shape, -np.inf, dtype=dtype)
    weights = softmax(x)
    assert weights.dtype == dtype
    np.testing.assert_array_equal(weights, np.zeros(shape, dtype=dtype))


@pytest.mark.parametrize("axis", [0, 1, -1], ids=["axis0", "axis1", "axis-1"])
def test_softmax_matches_reference_along_axis(axis):
    x = random_array(np.random.default_rng(1), (3, 4, 5)) * 5
    moved = np.moveaxis(x, axis, -1)
    expected = np.array([reference_softmax_row(row) for row in moved.reshape(-1, moved.shape[-1])])
    expected = np.moveaxis(expected.reshape(moved.shape), -1, axis)
    np.testing.assert_allclose(softmax(x, axis=axis), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "x, dtype",
    [
        (np.zeros(3, dtype=np.float32), np.float32),
        (np.zeros(3, dtype=np.float64), np.float64),
        (np.arange(3), np.float64),
        ([1.0, 2.0], np.float64),
    ],
    ids=["float32", "float64", "int-to-float64", "list-to-float64"],
)
def test_softmax_dtype(x, dtype):
    assert softmax(x).dtype == dtype


def test_softmax_does_not_modify_its_input():
    x = np.array([[1.0, 2.0, -np.inf], [3.0, 3.0, 3.0]])
    before = x.copy()
    softmax(x)
    np.testing.assert_array_equal(x, before)


# --- scaled dot-product attention ------------------------------------------------------------


@st.composite
def attention_inputs(draw, dtype=np.float64):
    """q, k, v with leading axes, plus optional mask, bias and scale, all broadcast-compatible."""
    lead = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 5)) for _ in range(4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q = random_array(rng, lead + (n_q, d_k), dtype)
    k = random_array(rng, lead + (n_k, d_k), dtype)
    v = random_array(rng, lead + (n_k, d_v), dtype)
    # Masks and biases may carry fewer (broadcast) or the same leading axes as q, k, v.
    mask_lead = draw(st.sampled_from([(), lead]))
    mask = rng.random(mask_lead + (n_q, n_k)) < 0.7 if draw(st.booleans()) else None
    bias = random_array(rng, draw(st.sampled_from([(), lead])) + (n_q, n_k)) if draw(st.booleans()) else None
    scale = draw(st.none() | st.floats(0.05, 3.0))
    return q, k, v, mask, bias, scale


@DTYPES
@PROPERTY
@given(data=st.data())
def test_attention_matches_loop_reference(dtype, data):
    q, k, v, mask, bias, scale = data.draw(attention_inputs(dtype))
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, scale=scale)
    expected_output, expected_weights = reference_attention(q, k, v, mask, bias, scale)
    tolerance = REFERENCE_TOLERANCE[dtype]
    np.testing.assert_allclose(weights, expected_weights, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(output, expected_output, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    "mask_shape, bias_shape",
    [((2, 1, 3, 4), None), (None, (2, 3, 4)), ((2, 1, 3, 4), (3, 3, 4))],
    ids=["mask-adds-axes", "bias-adds-axes", "both-add-axes"],
)
def test_attention_mask_and_bias_may_add_leading_axes(mask_shape, bias_shape):
    rng = np.random.default_rng(2)
    q, k, v = random_array(rng, (3, 2)), random_array(rng, (4, 2)), random_array(rng, (4, 5))
    mask = None if mask_shape is None else rng.random(mask_shape) < 0.6
    bias = None if bias_shape is None else random_array(rng, bias_shape)
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    expected_output, expected_weights = reference_attention(q, k, v, mask, bias)
    assert weights.shape == expected_weights.shape and output.shape == expected_output.shape
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(output, expected_output, rtol=1e-10, atol=1e-12)


@DTYPES
@PROPERTY
@given(data=st.data())
def test_attention_weights_are_distributions_and_masked_entries_exactly_zero(dtype, data):
    q, k, v, mask, bias, scale = data.draw(attention_inputs(dtype))
    _, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, scale=scale)
    assert np.all(weights >= 0)
    if mask is None:
        allowed_rows = np.ones(weights.shape[:-1], dtype=bool)
    else:
        mask = np.broadcast_to(mask, weights.shape)
        assert np.all(weights[~mask] == 0)
        allowed_rows = mask.any(axis=-1)
    np.testing.assert_allclose(
        weights.sum(axis=-1, dtype=np.float64)[allowed_rows], 1.0, rtol=0, atol=SUM_TOLERANCE[dtype]
    )
    assert np.all(weights[~allowed_rows] == 0)


@DTYPES
def test_attention_fully_masked_query_row_gives_zero_weights_and_output(dtype):
    rng = np.random.default_rng(3)
    q, k, v = (random_array(rng, (2, 3, 4), dtype) for _ in range(3))
    mask = np.ones((3, 3), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert not np.any(np.isnan(output)) and not np.any(np.isnan(weights))
    np.testing.assert_array_equal(weights[:, 1], 0)
    np.testing.assert_array_equal(output[:, 1], 0)
    assert np.all(np.abs(output[:, [0, 2]]) > 0)


@DTYPES
@pytest.mark.parametrize("extreme", [1e30, -1e30], ids=["plus-1e30", "minus-1e30"])
def test_attention_extreme_bias_mixed_with_mask_gives_no_nan(dtype, extreme):
    rng = np.random.default_rng(4)
    q, k, v = (random_array(rng, (3, 4), dtype) for _ in range(3))
    bias = np.array([[extreme, 0.0, -np.inf], [-np.inf] * 3, [extreme, extreme, 0.0]])
    mask = np.array([[True, True, True], [True, True, True], [False, True, True]])
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    assert np.all(np.isfinite(output)) and np.all(np.isfinite(weights))
    np.testing.assert_array_equal(weights[1], 0)  # bias -inf everywhere: attends to nothing
    assert weights[0, 2] == 0 and weights[2, 0] == 0


@DTYPES
@PROPERTY
@given(data=st.data())
def test_attention_permuting_keys_permutes_weights_and_keeps_output(dtype, data):
    q, k, v, mask, bias, scale = data.draw(attention_inputs(dtype))
    n_k = k.shape[-2]
    permutation = np.array(data.draw(st.permutations(range(n_k))))
    mask_p = None if mask is None else mask[..., permutation]
    bias_p = None if bias is None else bias[..., permutation]
    output, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, scale=scale)
    output_p, weights_p = scaled_dot_product_attention(
        q, k[..., permutation, :], v[..., permutation, :], mask=mask_p, bias=bias_p, scale=scale
    )
    tolerance = REFERENCE_TOLERANCE[dtype]
    np.testing.assert_allclose(weights_p, weights[..., permutation], rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(output_p, output, rtol=tolerance, atol=tolerance)


@DTYPES
@pytest.mark.parametrize("with_mask_and_bias", [False, True], ids=["plain", "mask-bias"])
def test_attention_preserves_dtype(dtype, with_mask_and_bias):
    rng = np.random.default_rng(5)
    q, k, v = (random_array(rng, (2, 3, 4), dtype) for _ in range(3))
    extra = {}
    if with_mask_and_bias:  # a float64 bias must not promote float32 attention
        extra = {"mask": causal_mask(3), "bias": random_array(rng, (3, 3), np.float64)}
    output, weights = scaled_dot_product_attention(q, k, v, scale=0.3, **extra)
    assert output.dtype == dtype and weights.dtype == dtype


def test_attention_default_scale_is_inverse_sqrt_d_k():
    rng = np.random.default_rng(6)
    q, k, v = random_array(rng, (4, 9)), random_array(rng, (5, 9)), random_array(rng, (5, 2))
    default = scaled_dot_product_attention(q, k, v)
    explicit = scaled_dot_product_attention(q, k, v, scale=1 / 3)
    unscaled = scaled_dot_product_attention(q, k, v, scale=1.0)
    np.testing.assert_allclose(default[1], explicit[1], rtol=1e-14)
    assert not np.allclose(default[1], unscaled[1])


def test_attention_does_not_modify_its_inputs():
    rng = np.random.default_rng(7)
    q, k, v, bias = (random_array(rng, (3, 3)) for _ in range(4))
    mask = causal_mask(3)
    before = [a.copy() for a in (q, k, v, bias, mask)]
    scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
    for array, copy in zip((q, k, v, bias, mask), before):
        np.testing.assert_array_equal(array, copy)


# --- causal mask --------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 5], ids=["n1", "n2", "n5"])
def test_causal_mask_is_lower_triangle(n):
    mask = causal_mask(n)
    assert mask.dtype == bool and mask.shape == (n, n)
    expected = [[key <= query for key in range(n)] for query in range(n)]
    np.testing.assert_array_equal(mask, expected)


@pytest.mark.parametrize("n_heads", [1, 2], ids=["one-head", "two-heads"])
def test_causal_attention_never_sees_the_future(n_heads):
    rng = np.random.default_rng(8)
    n, d_model = 6, 4
    w_q, w_k, w_v, w_o = (random_array(rng, (d_model, d_model)) for _ in range(4))
    x = random_array(rng, (2, n, d_model))
    output, weights = multi_head_attention(x, x, w_q, w_k, w_v, w_o, n_heads, mask=causal_mask(n))
    assert np.all(np.triu(weights, k=1) == 0)
    for t in range(n - 1):
        changed = x.copy()
        changed[:, t + 1 :] = random_array(rng, changed[:, t + 1 :].shape)
        output_changed, _ = multi_head_attention(
            changed, changed, w_q, w_k, w_v, w_o, n_heads, mask=causal_mask(n)
        )
        np.testing.assert_allclose(output_changed[:, : t + 1], output[:, : t + 1], rtol=0, atol=1e-12)
        assert not np.allclose(output_changed[:, t + 1 :], output[:, t + 1 :])


# --- heads --------------------------------------------------------------------------------


@PROPERTY
@given(
    lead=hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3),
    n=st.integers(1, 5),
    n_heads=st.integers(1, 4),
    d_head=st.integers(1, 3),
)
def test_split_merge_heads_round_trip(lead, n, n_heads, d_head):
    x = np.arange(math.prod(lead) * n * n_heads * d_head, dtype=np.float64)
    x = x.reshape(lead + (n, n_heads * d_head))
    heads = split_heads(x, n_heads)
    assert heads.shape == lead + (n_heads, n, d_head)
    for head in range(n_heads):  # head h owns columns h*d .. (h+1)*d of every token
        np.testing.assert_array_equal(heads[..., head, :, :], x[..., head * d_head : (head + 1) * d_head])
    np.testing.assert_array_equal(merge_heads(heads), x)


def projections(rng, d_model, width, d_out, dtype=np.float64):
    """Random, non-identity weights and biases for w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o."""
    shapes = [(d_model, width)] * 3 + [(width, d_out), (width,), (width,), (width,), (d_out,)]
    return [random_array(rng, shape, dtype) for shape in shapes]


def test_multi_head_attention_one_head_is_projected_single_head_attention():
    rng = np.random.default_rng(9)
    x = random_array(rng, (2, 5, 6))
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o = projections(rng, 6, 4, 3)
    mask = causal_mask(5)
    output, weights = multi_head_attention(
        x, x, w_q, w_k, w_v, w_o, 1, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o, mask=mask
    )
    heads, expected_weights = scaled_dot_product_attention(
        x @ w_q + b_q, x @ w_k + b_k, x @ w_v + b_v, mask=mask
    )
    np.testing.assert_allclose(output, heads @ w_o + b_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights[:, 0], expected_weights, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_heads", [2, 3], ids=["two-heads", "three-heads"])
def test_multi_head_attention_matches_per_head_loop(n_heads):
    rng = np.random.default_rng(10)
    d_head, d_model, d_out = 2, 5, 4
    width = n_heads * d_head
    x_q, x_kv = random_array(rng, (3, d_model)), random_array(rng, (4, d_model))
    w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o = projections(rng, d_model, width, d_out)
    output, weights = multi_head_attention(
        x_q, x_kv, w_q, w_k, w_v, w_o, n_heads, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o
    )
    per_head = []
    for head in range(n_heads):
        cols = slice(head * d_head, (head + 1) * d_head)
        head_output, head_weights = reference_attention(
            x_q @ w_q[:, cols] + b_q[cols], x_kv @ w_k[:, cols] + b_k[cols], x_kv @ w_v[:, cols] + b_v[cols]
        )
        np.testing.assert_allclose(weights[head], head_weights, rtol=1e-10, atol=1e-12)
        per_head.append(head_output)
    expected = np.concatenate(per_head, axis=-1) @ w_o + b_o
    np.testing.assert_allclose(output, expected, rtol=1e-10, atol=1e-12)


@DTYPES
@pytest.mark.parametrize("n_q, n_k", [(3, 7), (7, 3), (1, 4)], ids=["short-q", "long-q", "one-query"])
def test_cross_attention_shapes_and_dtype(dtype, n_q, n_k):
    rng = np.random.default_rng(11)
    n_heads, d_model, d_out = 2, 6, 5
    x_q, x_kv = random_array(rng, (2, n_q, d_model), dtype), random_array(rng, (2, n_k, d_model), dtype)
    w_q, w_k, w_v, w_o, *_ = projections(rng, d_model, 4, d_out, dtype)
    output, weights = multi_head_attention(x_q, x_kv, w_q, w_k, w_v, w_o, n_heads)
    assert output.shape == (2, n_q, d_out) and weights.shape == (2, n_heads, n_q, n_k)
    assert output.dtype == dtype and weights.dtype == dtype
    np.testing.assert_allclose(weights.sum(-1, dtype=np.float64), 1.0, atol=SUM_TOLERANCE[dtype])
