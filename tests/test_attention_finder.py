"""The held-out head finder's pure parts (generator/kinds/attention/realheads.py), and the agreements
behind the learned matches (generator/kinds/attention/agreement.py) against the plain per-head formula."""

from __future__ import annotations

import numpy as np
import pytest

from generator.kinds.attention.agreement import FLAT, agreement_sums, agreements
from generator.kinds.attention.realheads import (
    BASELINE_OFFSETS,
    nearest_tag_guess,
    nearest_tag_guesses,
    offset_guesses,
    pair_outcomes,
    pair_outcomes_of,
    sign_test_p,
)


def test_pair_outcomes_skip_special_words_and_the_query_and_report_the_target_weight():
    # [CLS] a b c [SEP]; one layer, two heads; query "a" (1) -> key "c" (3).
    a = np.zeros((1, 2, 5, 5))
    a[0, 0, 1] = [0.5, 0.3, 0.05, 0.15, 0.0]  # [CLS] and itself are largest; among the rest, c wins
    a[0, 1, 1] = [0.1, 0.1, 0.6, 0.2, 0.0]  # b wins
    hits, weights = pair_outcomes(a, [1], [3], [True, False, False, False, True])
    assert hits[0, :, 0].tolist() == [True, False]
    np.testing.assert_allclose(weights[0, :, 0], [0.15, 0.2])
    per_mille = np.rint(a * 1000).astype(np.int64)
    hits2, weights2 = pair_outcomes(per_mille, [1], [3], [True, False, False, False, True])
    assert (hits2 == hits).all() and np.allclose(weights2, weights)


def test_offset_guesses_count_real_words_only():
    special = [True, False, False, True, False, True]  # [CLS] a b [SEP] c [SEP]
    guesses = offset_guesses([2, 4], special)  # rows: offsets -1, 1, -2, 2, -3, 3
    assert guesses[0].tolist() == [1, 2] and guesses[1].tolist() == [4, -1] and guesses[3].tolist() == [-1, -1]


@pytest.mark.parametrize(("query", "expected"), [(2, 1), (4, 3), (0, 1), (6, 5)],
                         ids=["tie-goes-left", "tie-again", "start", "left"])
def test_nearest_tag_guess(query, expected):
    tags = [None, "NOUN", "DET", "NOUN", "VERB", "NOUN", "ADV"]
    assert nearest_tag_guesses([query], tags, {"NOUN"})[0] == expected


def test_nearest_tag_guess_never_picks_the_query_and_may_find_nothing():
    assert nearest_tag_guesses([1], [None, "NOUN", "DET"], {"NOUN"})[0] == -1


def test_sign_test():
    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(5, 0) == pytest.approx(1 / 32)
    assert sign_test_p(3, 1) == pytest.approx(5 / 16)
    assert sign_test_p(1, 3) > 0.5


def _random_groups(rng: np.random.Generator, scale: int) -> list:
    layers, heads = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    groups = []
    for _ in range(int(rng.integers(1, 6))):
        n, count = int(rng.integers(2, 12)), int(rng.integers(1, 6))
        special = [bool(x) for x in rng.random(n) < 0.3]
        groups.append((rng.integers(0, scale, (layers, heads, n, n)).astype(np.int16),
                       [int(x) for x in rng.integers(0, n, count)], [int(x) for x in rng.integers(0, n, count)],
                       [True] * n if scale == 2 else special))
    return groups


@pytest.mark.parametrize("scale", [2, 3, 30, 1000], ids=["all-special", "ties", "some-ties", "per-mille"])
def test_pair_outcomes_of_several_sentences_are_each_sentence_alone(scale):
    """Bit for bit, with ties, blocked keys, a key that is the query, and rows with nothing left."""
    rng = np.random.default_rng(scale)
    for _ in range(200):
        groups = _random_groups(rng, scale)
        hits, weights = pair_outcomes_of(groups)
        alone = [pair_outcomes(*group) for group in groups]
        assert np.array_equal(hits, np.concatenate([h for h, _ in alone], axis=-1))
        assert np.array_equal(weights, np.concatenate([w for _, w in alone], axis=-1))


def test_offset_and_tag_guesses_are_the_rules_spelled_out():
    rng = np.random.default_rng(5)
    for _ in range(300):
        n = int(rng.integers(1, 12))
        special = [bool(x) for x in rng.random(n) < 0.3]
        tags = [None if x < 0.2 else "NOUN" if x < 0.6 else "VERB" for x in rng.random(n)]
        queries = [int(x) for x in rng.integers(0, n, 4)]
        real = [i for i in range(n) if not special[i]]
        for o, row in zip(BASELINE_OFFSETS, offset_guesses(queries, special).tolist()):
            expected = [real[real.index(q) + o] if q in real and 0 <= real.index(q) + o < len(real)
                        else (real[o - 1] if q not in real and 0 <= o - 1 < len(real) else -1) for q in queries]
            assert row == expected
        for q in queries:
            near = [j for d in range(1, n) for j in (q - d, q + d) if 0 <= j < n and tags[j] == "NOUN"]
            assert nearest_tag_guess(q, tags, {"NOUN"}) == (near[0] if near else -1)


def _agreement_per_head(weights: np.ndarray, real: np.ndarray, align: np.ndarray) -> np.ndarray:
    """The agreement as plainly written, one head at a time (see the agreement module)."""
    real = np.asarray(real, dtype=np.float64)
    both = np.flatnonzero(align >= 0)
    q = real[..., align[both][:, None], align[both][None, :]]
    q = np.divide(q, q.sum(axis=-1, keepdims=True), out=np.zeros_like(q), where=q.sum(axis=-1, keepdims=True) > 0)
    counted = np.ptp(weights[both], axis=-1) > FLAT
    p = weights[np.ix_(both[counted], both)]
    p = np.divide(p, p.sum(axis=-1, keepdims=True), out=np.zeros_like(p), where=p.sum(axis=-1, keepdims=True) > 0)
    return np.minimum(p, q[..., counted, :]).sum(axis=-1)


@pytest.mark.parametrize("heads", [(1, 1), (1, 3), (2, 1), (6, 12)], ids=["one", "one-layer", "one-head", "minilm"])
def test_agreements_are_the_per_head_formula_bit_for_bit(heads):
    rng = np.random.default_rng(sum(heads))
    for trial in range(150):
        m = int(rng.integers(2, 16))
        n = int(rng.integers(1, m + 1))
        real = rng.integers(0, 300, heads + (m, m)).astype(np.int16) if trial % 2 else rng.random(heads + (m, m))
        align = np.sort(rng.choice(m, n, replace=False))
        align[rng.random(n) < 0.2] = -1
        designed = [rng.dirichlet(np.full(n, 0.5), n) for _ in range(4)]
        designed[1][0] = 1 / n  # a flat row
        designed[2][:] = 1 / n  # a flat head: no row counts
        together = agreements(designed, real, align)
        sums, counts = agreement_sums(designed, real, align)
        for d, weights in enumerate(designed):
            plain = _agreement_per_head(weights, real, align)
            assert np.array_equal(together[d], plain)
            assert np.array_equal(together[d].sum(axis=-1), plain.sum(axis=-1))  # the order of the rows too
            assert np.array_equal(sums[d], plain.sum(axis=-1)) and counts[d] == plain.shape[-1]
