"""The held-out head finder's pure parts (generator/attention/realheads.py)."""

from __future__ import annotations

import numpy as np
import pytest

from generator.attention.realheads import nearest_tag_guesses, offset_guesses, pair_outcomes, sign_test_p


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
