"""The pattern view's numbers (issues 10 and 11): the shuffle and the closest learned heads.

The shuffle is computed at build in NumPy (generator/kinds/attention/shuffle.py): here its equivariance is
checked to 1e-9 on every self-attention sentence of the lab and on random ones, and the numbers the
page loads (pattern.<hash>.js) are checked against it. The closest learned heads are recomputed from
real-heads.json by a second, loop-by-loop implementation of "agreement" and compared with the page's.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import labs_data

from generator.kinds.attention import shuffle as shuffling
from generator.kinds.attention import teaching
from generator.kinds.attention import cache as cachefile

ROOT = Path(__file__).resolve().parent.parent
LAB = ROOT / "content" / "labs" / "attention"
CONTENT_HEADS = ("syntax", "coreference", "alignment")  # q·k reads tags and flags only


@pytest.fixture(scope="module")
def lab() -> dict:
    return yaml.safe_load((LAB / "lab.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pattern_data(shipped_site) -> dict:
    """Labs.data.pattern as the built page loads it."""
    (script,) = (shipped_site / "labs" / "attention").glob("pattern.*.js")
    return labs_data(script.read_text(encoding="utf-8"), "pattern")


def _self_sentences(lab: dict) -> list[tuple[str, str]]:
    return [(s["id"], s["text"]) for s in lab["widget"]["sentences"] if s.get("kind", "self") == "self"]


def _top(row: np.ndarray) -> int:
    return int(np.argmax(row))


def _one_draw_at_a_time(n: int, seed: int) -> np.ndarray:
    """shuffled_order as it was written, one rng.permutation at a time: the reference."""
    rng = np.random.default_rng(seed)
    best, best_kept = np.arange(n), 2 * n + 1
    for _ in range(shuffling.MAX_DRAWS):
        order = rng.permutation(n)
        kept = int((order == np.arange(n)).sum()) + int((order[1:] == order[:-1] + 1).sum())
        if kept < best_kept:
            best, best_kept = order, kept
        if kept == 0:
            break
    return best


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 11, 24, 60])
def test_shuffled_order_draws_what_one_permutation_at_a_time_drew(n):
    for seed in [*range(25), shuffling.seed_for("cat-mat"), 2**32 - 1]:
        expected = _one_draw_at_a_time(n, seed)
        got = shuffling.shuffled_order(n, seed)
        assert got.dtype == expected.dtype and got.tolist() == expected.tolist(), (n, seed)


@pytest.mark.parametrize("seed", range(40))
def test_shuffle_gives_content_weights_of_both_orders_bit_for_bit(seed):
    """One softmax for every head and both orders gives what one attention call each gave."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 61))
    words = teaching.parse_sentence(" ".join(f"w{i}/{r}" for i, r in enumerate(rng.choice(teaching.ROLES, n))))
    order = shuffling.shuffled_order(n, seed)
    x = teaching.embed(words)
    moved = x[order].copy()
    moved[:, shuffling._POSITION_DIMS] = x[:, shuffling._POSITION_DIMS]
    for hid, (before, after) in shuffling.shuffle(words, order, teaching.HEAD_IDS).items():
        h = teaching.head(hid)
        assert before.tobytes() == shuffling.content_weights(x, h).tobytes()
        assert after.tobytes() == shuffling.content_weights(moved, h).tobytes()


@pytest.mark.parametrize("seed", range(40))
def test_shuffling_permutes_the_content_heads_weights_and_moves_the_previous_word_head(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 30))
    roles = rng.choice([r for r in teaching.ROLES if r != "PUNCT"], n)
    words = teaching.parse_sentence(" ".join(f"w{i}/{r}" for i, r in enumerate(roles)))
    order = shuffling.shuffled_order(n, seed)
    result = shuffling.shuffle(words, order, teaching.HEAD_IDS)
    for hid in CONTENT_HEADS:
        before, after = result[hid]
        np.testing.assert_allclose(after, before[np.ix_(order, order)], rtol=0, atol=1e-9, err_msg=hid)
    before, after = result["previous"]
    for slot, word in enumerate(order):  # the previous-word head follows the slot: its top key is the word now before
        assert order[_top(after[slot])] == (order[slot - 1] if slot else word)
        assert _top(before[word]) == max(word - 1, 0)


def test_the_pages_shuffles_are_the_numpy_ones_and_break_the_previous_word_head(lab, pattern_data):
    shown = pattern_data["shuffle"]
    assert sorted(shown) == sorted(sid for sid, _ in _self_sentences(lab))
    for sid, text in _self_sentences(lab):
        words = teaching.parse_sentence(text)
        order = shuffling.shuffled_order(len(words), shuffling.seed_for(sid))
        assert shown[sid]["order"] == order.tolist()
        assert sorted(order.tolist()) == list(range(len(words))) and (order != np.arange(len(words))).all(), sid
        result = shuffling.shuffle(words, order, lab["widget"]["heads"])
        for hid, (before, after) in result.items():
            page_before, page_after = np.array(shown[sid]["heads"][hid]["before"]), np.array(shown[sid]["heads"][hid]["after"])
            np.testing.assert_allclose(page_before, before, atol=5e-4)  # the page has 3 decimals
            np.testing.assert_allclose(page_after, after, atol=5e-4)
            if hid in CONTENT_HEADS:  # equivariant: the shuffled weights are the written ones, permuted
                np.testing.assert_allclose(after, before[np.ix_(order, order)], rtol=0, atol=1e-9, err_msg=(sid, hid))
        before, after = result["previous"]
        # The previous-word head's top key changes for every word: the shuffle splits every neighbour pair.
        kept = [words[w].text for slot, w in enumerate(order) if order[_top(after[slot])] == _top(before[w])]
        assert kept == [], (sid, order.tolist(), kept)


# -- the closest learned heads, recomputed -----------------------------------------------------------

def _aligned(words: list[str], model_words: list[str], special: list[bool]) -> list[int | None]:
    """Each word's model word: the next non-special model word written the same way."""
    out, j = [], 0
    for w in words:
        k = next((k for k in range(j, len(model_words)) if not special[k] and model_words[k] == w), None)
        out.append(k)
        j = k + 1 if k is not None else j
    return out


def test_the_closest_learned_heads_are_recomputed_from_real_heads_json(lab, pattern_data):
    cache = cachefile.load_cache(LAB / "real-heads.json")
    (sha,) = cache["entries"]
    texts = _self_sentences(lab) + [(s["id"], s["text"]) for s in lab["model"]["sentences"]]
    heads = lab["widget"]["heads"]
    total: dict[str, np.ndarray] = {h: np.zeros((6, 12)) for h in heads}
    count = {h: 0 for h in heads}
    for sid, text in texts:
        words = teaching.parse_sentence(text)
        entry = cachefile.cache_lookup(cache, sha, " ".join(w.text for w in words))
        real = np.asarray(entry["attention"], dtype=float)
        at = _aligned([w.text for w in words], entry["words"], entry["special"])
        keys = [j for j, a in enumerate(at) if a is not None]
        results = teaching.compute(words, kind="self", heads=heads)
        for hid in heads:
            W = results[hid].weights
            for i in keys:
                if W[i].max() - W[i].min() < 1e-12:  # a flat row: the head looks for nothing from this word
                    continue
                p = np.array([W[i][j] for j in keys])
                p /= p.sum()
                count[hid] += 1
                for L in range(6):
                    for H in range(12):
                        q = np.array([real[L, H, at[i], at[j]] for j in keys])
                        q = q / q.sum() if q.sum() else q
                        total[hid][L, H] += sum(min(a, b) for a, b in zip(p, q))
    assert pattern_data["learned"]["sentences"] == [sid for sid, _ in texts]
    for hid in heads:
        mean = total[hid] / count[hid]
        shown = pattern_data["learned"]["heads"][hid]
        L, H = np.unravel_index(int(np.argmax(mean)), mean.shape)
        assert (shown["layer"], shown["head"]) == (L, H), hid
        assert shown["words"] == count[hid]
        assert shown["agreement"] == pytest.approx(mean[L, H], abs=1e-4)
        runner = sorted(((mean[l, h], l, h) for l in range(6) for h in range(12) if (l, h) != (L, H)), reverse=True)[0]
        assert (shown["next"]["layer"], shown["next"]["head"]) == runner[1:]
    # The previous-word head's match really looks one word back: on cat-mat, most of its rows' top word is the previous word.
    prev = pattern_data["learned"]["heads"]["previous"]
    entry = cachefile.cache_lookup(cache, sha, "The cat sat on the mat")
    A = np.asarray(entry["attention"])[prev["layer"], prev["head"]]
    assert sum(int(np.argmax(A[i, 1:-1])) + 1 == i - 1 for i in range(2, 7)) >= 4


def test_the_agreement_of_a_head_with_itself_is_one_and_with_a_disjoint_head_zero():
    from generator.kinds.attention.agreement import agreement

    d = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5], [1 / 3, 1 / 3, 1 / 3]])
    real = np.zeros((2, 5, 5))
    real[0, 1:4, 1:4] = d * 1000  # model words 1..3 are the sentence's; 0 and 4 are [CLS] and [SEP]
    real[1, 1:4, 1:4] = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 0]]) * 1000
    got = agreement(d, real, np.array([1, 2, 3]))
    assert got.shape == (2, 2)  # the flat third row is not counted
    np.testing.assert_allclose(got[0], [1.0, 1.0])
    np.testing.assert_allclose(got[1], [0.0, 0.0])


def test_agreements_of_several_heads_at_once_equal_each_head_alone():
    from generator.kinds.attention.agreement import agreement, agreements

    rng = np.random.default_rng(7)
    real = rng.random((3, 4, 9, 9))
    align = np.array([1, 2, -1, 3, 5, 6, 7])  # word 2 split by the model: left out
    designed = [rng.random((7, 7)) for _ in range(3)] + [np.full((7, 7), 1 / 7)]  # the last is flat everywhere
    designed[0][4] = 0.25  # one flat row in an otherwise peaked head
    together = agreements(designed, real, align)
    for one, weights in zip(together, designed):
        assert np.array_equal(one, agreement(weights, real, align))  # bit for bit: the same operations per row
    assert together[0].shape == (3, 4, 5) and together[3].shape == (3, 4, 0)
