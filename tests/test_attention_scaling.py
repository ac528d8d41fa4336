"""The ÷√d demo's numbers (generator/kinds/attention/scaling.py): what the page says they show, they show."""

from __future__ import annotations

import json
import re
import math

import numpy as np
import pytest

from generator.kinds.attention import scaling


@pytest.fixture(scope="module")
def results():
    return {r.d: r for r in scaling.experiment()}


def test_the_spread_of_q_dot_k_grows_like_the_square_root_of_d(results):
    for d, r in results.items():
        assert r.spread == pytest.approx(math.sqrt(d), rel=0.05), d  # variance of a sum of d unit products
        assert r.spread_scaled == pytest.approx(1.0, rel=0.05), d  # ÷√d brings it back to 1
    # And not like d: from d = 2 to 512 (256×), the spread grows about 16× (√256).
    ratio = results[512].spread / results[2].spread
    assert 14 < ratio < 18


def test_the_scaled_softmax_stays_soft_while_the_unscaled_one_collapses(results):
    ds = sorted(results)
    for d in ds:
        r = results[d]
        assert r.top_scaled < r.top, d
        assert r.entropy_scaled > r.entropy, d
        assert r.slope_scaled > r.slope, d
    # Unscaled: the top weight only grows and the entropy only falls as d grows…
    assert all(results[a].top < results[b].top for a, b in zip(ds, ds[1:]))
    assert all(results[a].entropy > results[b].entropy for a, b in zip(ds, ds[1:]))
    assert all(results[a].slope > results[b].slope for a, b in zip(ds, ds[1:]))
    # …to nearly one-hot at d = 512, where the gradient through the softmax has shrunk ~6×.
    assert results[512].top > 0.9 and results[512].entropy < 0.3
    assert results[512].slope < results[2].slope / 4
    # Scaled: the same at every size (the spread is ~1 whatever d), well short of one-hot.
    tops = [results[d].top_scaled for d in ds]
    assert max(tops) - min(tops) < 0.05 and max(tops) < 0.5
    assert all(2.3 < results[d].entropy_scaled < math.log2(scaling.N_KEYS) for d in ds)


def test_helpers_on_known_rows():
    even = np.full(8, 1 / 8)
    one_hot = np.eye(8)[3]
    assert scaling.entropy_bits(even) == pytest.approx(3.0)
    assert scaling.entropy_bits(one_hot) == 0.0
    assert scaling.jacobian_norm(one_hot) == pytest.approx(0.0)
    w = np.array([0.5, 0.3, 0.2])
    jac = np.diag(w) - np.outer(w, w)
    assert scaling.jacobian_norm(w) == pytest.approx(np.linalg.norm(jac))
    # Vectorised over leading axes.
    assert scaling.entropy_bits(np.stack([even, one_hot])).tolist() == pytest.approx([3.0, 0.0])


def test_seeded_and_per_size():
    a = scaling.scores(32, draws=50)
    assert np.array_equal(a, scaling.scores(32, draws=50))
    assert not np.array_equal(a, scaling.scores(32, draws=50, seed=scaling.SEED + 1))
    # Each d has its own generator: the numbers at d = 32 do not depend on which other sizes run.
    only = scaling.experiment(d_values=(32,), draws=200)[0]
    both = [r for r in scaling.experiment(d_values=(8, 32), draws=200) if r.d == 32][0]
    assert only.spread == both.spread and np.array_equal(only.example_scores, both.example_scores)
    with pytest.raises(ValueError):
        scaling.scores(0)


def test_payload_is_small_rounded_and_consistent(results):
    data = scaling.payload()
    assert data == scaling.payload() and data is not scaling.payload()  # a fresh copy each time
    assert len(json.dumps(data, separators=(",", ":"))) < 1600
    assert [s["d"] for s in data["sizes"]] == list(scaling.D_VALUES)
    assert data["n"] == scaling.N_KEYS and data["max_entropy"] == 3.0
    for s in data["sizes"]:
        r = results[s["d"]]
        assert s["top"] == round(r.top, 3) and s["entropy_scaled"] == round(r.entropy_scaled, 2)
        assert sum(s["pct"]) == 100 and sum(s["pct_scaled"]) == 100
        assert s["scores"] == sorted(s["scores"], reverse=True)  # strongest first
        assert s["pct"] == sorted(s["pct"], reverse=True) and s["pct_scaled"] == sorted(s["pct_scaled"], reverse=True)
        # The example is the median trial by unscaled top weight: typical, not picked for effect.
        trials = scaling.softmax(scaling.scores(s["d"])).max(axis=-1)
        assert max(r.example_weights) == pytest.approx(np.sort(trials)[len(trials) // 2])
    big = data["sizes"][-1]
    assert big["pct"][0] >= 99 and big["pct_scaled"][0] < 50


def test_the_lab_text_quotes_the_computed_numbers():
    """The FAQ quotes the d = 512 averages; they must be the ones the demo computes."""
    from pathlib import Path

    faq = (Path(__file__).resolve().parent.parent / "content" / "labs" / "attention" / "faq.yaml").read_text("utf-8")
    said = re.search(r"at\s+\$d = (\d+)\$ the (?:demo's )?unscaled softmax gives its top key (\d+)% on average, "
                     r"the scaled one (\d+)%", " ".join(faq.split()), re.I)
    assert said, "the FAQ's scaling answer no longer quotes the demo's numbers"
    d, raw, scaled = (int(x) for x in said.groups())
    size = next(s for s in scaling.payload()["sizes"] if s["d"] == d)
    assert (raw, scaled) == (round(100 * size["top"]), round(100 * size["top_scaled"]))


def test_a_change_to_one_payload_reaches_no_other():
    data = scaling.payload()
    data["sizes"][0]["scores"].append(1.0)
    data["sizes"][1]["top"] = 0
    data["n"] = 0
    assert scaling.payload() == scaling._payload(scaling.D_VALUES, scaling.N_KEYS, scaling.DRAWS, scaling.SEED) != data
