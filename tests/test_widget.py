"""The spotlight widget: reading lab.yaml's ``widget:`` with positioned errors, the payload
of docs/spotlight-data.md, and the claims the build enforces."""

from __future__ import annotations

import gzip
import json
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from generator.kinds.attention import teaching
from generator.kinds.attention.reading import read_widget
from generator.kinds.attention.widget import check_claims, compute_widget, percentages, top_keys
from generator.errors import Diagnostics
from generator.source import Reader, load_yaml

EXAMPLE = """\
widget:
  prompt: Click any word to make it the query.
  default: {sentence: cat-mat, head: syntax, query: sat}
  heads: [syntax, previous, coreference, alignment]
  sentences:
    - id: cat-mat
      text: The cat/NOUN sat/VERB on the mat/NOUN
      claims:
        syntax:
          - sat -> cat, mat (>= 60%)
          - The -> cat
          - the -> mat
          - on -> mat
    - id: animal
      text: The animal/NOUN didn't cross/VERB the street/NOUN because it was too tired/ADJ
      claims:
        coreference:
          - it -> animal
    - id: decoder
      kind: causal
      note: A decoder cannot look ahead.
      text: The dog/NOUN chased/VERB the ball/NOUN into the garden/NOUN.
    - id: translate
      kind: cross
      text: The black/ADJ cat/NOUN sleeps/VERB
      source: Le/DET chat/NOUN noir/ADJ dort/VERB
      source_label: French source
      claims:
        alignment:
          - black -> noir
          - cat -> chat
"""

LONG = """\
    - id: long
      text: >-
        On a cold/ADJ morning/NOUN the old/ADJ fisherman/NOUN pulled/VERB his small/ADJ boat/NOUN
        onto the beach/NOUN, because the storm/NOUN that had kept/VERB him at home/NOUN all week/NOUN
        was finally/ADV moving/VERB away/ADV, and he hoped/VERB the fish/NOUN would return/VERB to the
        bay/NOUN soon.
      claims:
        syntax:
          - pulled -> fisherman
          - hoped -> he
"""

DOC_ARRAYS = ("q", "k", "v", "scores", "bias", "scaled", "weights", "weights_unscaled", "pct", "pct_unscaled", "out", "o")


def read(tmp_path, text: str):
    """(spec, ["path:line:col: error: …", …]) for a lab.yaml holding ``text``."""
    path = tmp_path / "lab.yaml"
    path.write_text(text, encoding="utf-8")
    diags = Diagnostics()
    spec = read_widget(Reader(load_yaml(path, root=tmp_path), diags), ("widget",))
    return spec, [str(d) for d in diags.items]


@pytest.fixture
def example(tmp_path):
    spec, errors = read(tmp_path, EXAMPLE)
    assert errors == []
    return spec, compute_widget(spec)


# ---------------------------------------------------------------------------- reading


def test_the_example_reads_into_a_spec(example):
    spec, _ = example
    assert spec.head_ids == ("syntax", "previous", "coreference", "alignment")
    assert (spec.default_sentence, spec.default_head, spec.default_query) == ("cat-mat", "syntax", 2)
    cat_mat = spec.sentence("cat-mat")
    assert cat_mat.queries == cat_mat.keys == ("The", "cat", "sat", "on", "the", "mat")
    assert cat_mat.label == "The cat sat on the mat"
    assert [(c.query, c.keys, c.min_share) for c in cat_mat.claims] == [(2, (1, 5), 0.6), (0, (1,), None),
                                                                       (4, (5,), None), (3, (5,), None)]
    translate = spec.sentence("translate")
    assert translate.keys == ("Le", "chat", "noir", "dort") and translate.key_label == "French source"
    assert translate.label == "Le chat noir dort → The black cat sleeps"
    assert spec.sentence("nope") is None


def test_defaults_when_heads_and_default_are_left_out(tmp_path):
    spec, errors = read(tmp_path, "widget:\n  prompt: Hi.\n  sentences:\n    - id: a\n      text: The cat/NOUN\n")
    assert errors == []
    assert spec.head_ids == teaching.DEFAULT_HEADS
    assert (spec.default_sentence, spec.default_head, spec.default_query) == ("a", "syntax", 0)


def test_a_sentence_opens_on_its_query_word(tmp_path):
    spec, errors = read(tmp_path, "widget:\n  prompt: Hi.\n  sentences:\n"
                                  "    - id: a\n      text: The cat/NOUN sat/VERB\n      query: sat\n"
                                  "    - id: b\n      text: the cat/NOUN saw/VERB the dog/NOUN\n      query: the#2\n")
    assert errors == []
    assert [s.query for s in spec.sentences] == [2, 3]
    assert (spec.default_sentence, spec.default_query) == ("a", 2)  # the first sentence's word, with no default
    assert [s["query"] for s in compute_widget(spec)["sentences"]] == [2, 3]


def test_an_absent_widget_is_none_without_an_error(tmp_path):
    assert read(tmp_path, "title: x\n") == (None, [])


def sentence_yaml(*lines: str) -> str:
    body = "".join(f"      {line}\n" for line in lines)
    return "widget:\n  prompt: Hi.\n  sentences:\n    - id: s\n" + body


# Each case is (lab.yaml, the exact error lines). Lines and columns count from 1.
ERROR_CASES = {
    "untagged-unknown-word": (
        sentence_yaml("text: The cat/NOUN frobbled on the mat/NOUN"),
        ["lab.yaml:5:26: error: 'frobbled' needs a tag: it is not a built-in function word, so write it as "
         "'frobbled/NOUN', 'frobbled/VERB', 'frobbled/ADJ' …; tags: " + teaching.VALID_TAGS_TEXT],
    ),
    "bad-tag": (
        sentence_yaml("text: The cat/NOUN sat/VREB on the mat/NOUN"),
        ["lab.yaml:5:30: error: unknown tag 'VREB' on 'sat' (did you mean 'VERB'?); tags: "
         + teaching.VALID_TAGS_TEXT],
    ),
    "second-of-two-same-words": (
        sentence_yaml("text: the blick/NOUN saw/VERB the blick"),
        ["lab.yaml:5:41: error: 'blick' needs a tag: it is not a built-in function word, so write it as "
         "'blick/NOUN', 'blick/VERB', 'blick/ADJ' …; tags: " + teaching.VALID_TAGS_TEXT],
    ),
    "folded-text-second-line": (
        sentence_yaml("text: >-", "  The cat/NOUN sat/VERB", "  on the zorp"),
        ["lab.yaml:7:16: error: 'zorp' needs a tag: it is not a built-in function word, so write it as "
         "'zorp/NOUN', 'zorp/VERB', 'zorp/ADJ' …; tags: " + teaching.VALID_TAGS_TEXT],
    ),
    "bad-kind": (
        sentence_yaml("text: The cat/NOUN", "kind: casual"),
        ["lab.yaml:6:13: error: unknown kind 'casual' (did you mean 'causal'?); kinds: self, causal, cross"],
    ),
    "source-without-cross": (
        sentence_yaml("text: The cat/NOUN", "source: Le/DET chat/NOUN"),
        ["lab.yaml:6:7: error: 'source' is only for kind: cross (this sentence is self)"],
    ),
    "cross-without-source": (
        sentence_yaml("text: The cat/NOUN", "kind: cross"),
        ["lab.yaml:4:7: error: missing required key 'source' in a kind: cross sentence (the words the queries read)"],
    ),
    "unknown-sentence-key": (
        sentence_yaml("text: The cat/NOUN", "claim: {}"),
        ["lab.yaml:6:7: error: unknown key 'claim' (did you mean 'claims'?)"],
    ),
    "unknown-head": (
        "widget:\n  prompt: Hi.\n  heads: [syntax, coref]\n  sentences:\n    - id: s\n      text: The cat/NOUN\n",
        ["lab.yaml:3:19: error: unknown head 'coref' (did you mean 'coreference'?); heads: syntax, previous, coreference, alignment"],
    ),
    "duplicate-sentence-id": (
        sentence_yaml("text: The cat/NOUN") + "    - id: s\n      text: The dog/NOUN\n",
        ["lab.yaml:6:11: error: duplicate sentence id 's' (first used on line 4)"],
    ),
    "claim-head-unknown": (
        sentence_yaml("text: The cat/NOUN", "claims:", "  sintax: [The -> cat]"),
        ["lab.yaml:7:9: error: unknown head 'sintax' (did you mean 'syntax'?); heads: syntax, previous, coreference"],
    ),
    "claim-head-not-shown": (
        sentence_yaml("text: The cat/NOUN", "claims:", "  alignment: [The -> cat]"),
        ["lab.yaml:7:9: error: head 'alignment' is not shown in this widget (heads: syntax, previous, coreference)"],
    ),
    "claim-unknown-word": (
        sentence_yaml("text: The cat/NOUN sat/VERB", "claims:", "  syntax:", "    - sat -> dog"),
        ["lab.yaml:8:20: error: no word 'dog' in the sentence; words: The cat sat"],
    ),
    "claim-ambiguous-word": (
        sentence_yaml("text: The cat/NOUN saw/VERB the cat/NOUN", "claims:", "  syntax:", "    - saw -> cat"),
        ["lab.yaml:8:20: error: 'cat' occurs 2 times in the sentence; say which with cat#1 … cat#2"],
    ),
    "claim-occurrence-out-of-range": (
        sentence_yaml("text: The cat/NOUN saw/VERB the cat/NOUN", "claims:", "  syntax:", "    - the#2 -> cat#1"),
        ["lab.yaml:8:13: error: 'the#2': the sentence has 1 'the'; write the#1 … the#1"],
    ),
    "claim-malformed": (
        sentence_yaml("text: The cat/NOUN", "claims:", "  syntax:", "    - The => cat"),
        ["lab.yaml:8:13: error: cannot read the claim 'The => cat': write 'query -> key', 'query -> key1, key2' "
         "or 'query -> key1, key2 (>= 60%)'"],
    ),
    "claim-with-a-long-run-of-spaces": (  # once a catastrophic backtrack: minutes for 600 spaces
        sentence_yaml("text: The cat/NOUN sat/VERB on the mat/NOUN", "claims:", "  syntax:",
                      "    - on ->" + " " * 600 + "mat("),
        ["lab.yaml:8:13: error: cannot read the claim 'on ->" + " " * 600 + "mat(': write 'query -> key', "
         "'query -> key1, key2' or 'query -> key1, key2 (>= 60%)'"],
    ),
    "claim-superscript-occurrence": (
        sentence_yaml("text: The cat/NOUN saw/VERB the cat/NOUN", "claims:", "  syntax:", "    - saw -> cat#\u00b2"),
        ["lab.yaml:8:20: error: 'cat#\u00b2': the sentence has 2 'cat'; write cat#1 … cat#2"],
    ),
    "claim-share-in-arabic-indic-digits": (
        sentence_yaml("text: The cat/NOUN sat/VERB", "claims:", "  syntax:", "    - sat -> cat (>= \u0667\u0660%)"),
        ["lab.yaml:8:13: error: cannot read the claim 'sat -> cat (>= \u0667\u0660%)': write 'query -> key', "
         "'query -> key1, key2' or 'query -> key1, key2 (>= 60%)'"],
    ),
    "sentences-a-number": (
        "widget:\n  prompt: Hi.\n  sentences: 3\n",
        ["lab.yaml:3:14: error: 'sentences' must be a list, not a number"],
    ),
    "sentences-true": (
        "widget:\n  prompt: Hi.\n  sentences: true\n",
        ["lab.yaml:3:14: error: 'sentences' must be a list, not true/false"],
    ),
    "default-unknown-sentence": (
        "widget:\n  prompt: Hi.\n  default: {sentence: cat-mta, query: sat}\n  sentences:\n"
        "    - id: cat-mat\n      text: The cat/NOUN sat/VERB\n",
        ["lab.yaml:3:23: error: unknown sentence 'cat-mta' (did you mean 'cat-mat'?); sentences: cat-mat"],
    ),
    "sentence-unknown-query": (
        "widget:\n  prompt: Hi.\n  sentences:\n"
        "    - id: cat-mat\n      text: The cat/NOUN sat/VERB\n      query: sits\n",
        ["lab.yaml:6:14: error: no word 'sits' in the sentence; words: The cat sat"],
    ),
    "sentence-ambiguous-query": (
        "widget:\n  prompt: Hi.\n  sentences:\n"
        "    - id: a\n      text: the cat/NOUN saw/VERB the dog/NOUN\n      query: the\n",
        ["lab.yaml:6:14: error: 'the' occurs 2 times in the sentence; say which with the#1 … the#2"],
    ),
    "default-unknown-query": (
        "widget:\n  prompt: Hi.\n  default: {sentence: cat-mat, query: sits}\n  sentences:\n"
        "    - id: cat-mat\n      text: The cat/NOUN sat/VERB\n",
        ["lab.yaml:3:39: error: no word 'sits' in sentence 'cat-mat'; words: The cat sat"],
    ),
}


@pytest.mark.parametrize(("text", "expected"), list(ERROR_CASES.values()), ids=list(ERROR_CASES))
def test_mistakes_are_reported_at_their_exact_position(tmp_path, text, expected):
    spec, errors = read(tmp_path, text)
    assert spec is None
    assert errors == expected


def test_every_mistake_of_a_widget_is_reported_at_once(tmp_path):
    text = sentence_yaml("text: A zorp sat/VRB", "kind: crosss")
    _, errors = read(tmp_path, text)
    assert [e.split(": error:")[0] for e in errors] == ["lab.yaml:6:13", "lab.yaml:5:15", "lab.yaml:5:24"]


# ---------------------------------------------------------------------------- claims


def test_the_example_claims_hold(example):
    spec, payload = example
    assert check_claims(spec, payload) == []


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ("sat -> on", "claim 'sat -> on' fails in head 'syntax': sat's top key is cat (55%)"),
        ("sat -> cat, on", "claim 'sat -> cat, on' fails in head 'syntax': sat's top-2 keys are cat (55%), mat (30%)"),
        ("sat -> cat, mat (>= 95%)",
         "claim 'sat -> cat, mat (>= 95%)' fails in head 'syntax': cat (55%), mat (30%) hold 85.6% together, "
         "less than 95%"),
    ],
    ids=["wrong-top", "wrong-top-2", "share-too-small"],
)
def test_a_failing_claim_is_reported_at_the_claim(tmp_path, claim, message):
    text = sentence_yaml("text: The cat/NOUN sat/VERB on the mat/NOUN", "claims:", "  syntax:",
                         "    - The -> cat", f"    - {claim}")
    spec, errors = read(tmp_path, text)
    assert errors == []
    problems = check_claims(spec, compute_widget(spec))
    assert [str(p) for p in problems] == [f"lab.yaml:9:13: error: {message}"]
    assert problems[0].source_line == f"          - {claim}"


def test_claims_in_a_cross_sentence_name_source_words(example):
    spec, _ = example
    [black, cat] = spec.sentence("translate").claims
    assert (black.query, black.keys) == (1, (2,))  # black -> noir
    assert (cat.query, cat.keys) == (2, (1,))  # cat -> chat


# ---------------------------------------------------------------------------- the payload


def test_payload_follows_the_documented_contract(example):
    spec, payload = example
    assert list(payload) == ["version", "precision", "heads", "residual_dims", "default", "sentences", "real"]
    assert payload["version"] == 1 and payload["real"] is None
    assert payload["precision"] == {"vectors": 3, "weights": 3}
    assert payload["default"] == {"sentence": "cat-mat", "head": "syntax", "query": 2}
    assert [h["id"] for h in payload["heads"]] == list(spec.head_ids)
    for h in payload["heads"]:
        assert set(h) == {"id", "name", "description", "q_dims", "k_dims", "v_dims", "o_dims", "bias", "cross"}
        assert len(h["o_dims"]) == len(h["v_dims"]) and set(h["o_dims"]) <= set(payload["residual_dims"])
        assert len(h["q_dims"]) == len(h["k_dims"])
    for s in payload["sentences"]:
        assert set(s) == {"id", "label", "kind", "note", "queries", "keys", "key_label", "query", "roles_q", "roles_k",
                          "residual", "heads"}
        assert 0 <= s["query"] < len(s["queries"])
        n_q, n_k = len(s["queries"]), len(s["keys"])
        assert len(s["roles_q"]) == n_q and len(s["roles_k"]) == n_k
        assert list(s["heads"]) == list(spec.head_ids)
        for h in payload["heads"]:
            arrays = s["heads"][h["id"]]
            assert tuple(arrays) == DOC_ARRAYS
            d_k, d_v = len(h["q_dims"]), len(h["v_dims"])
            shapes = {"q": (n_q, d_k), "k": (n_k, d_k), "v": (n_k, d_v), "out": (n_q, d_v), "o": (n_q, d_v)}
            for name in DOC_ARRAYS:
                if arrays[name] is None:
                    assert name == "bias"
                    continue
                assert np.array(arrays[name], dtype=float).shape == shapes.get(name, (n_q, n_k)), name


def test_residual_after_is_before_plus_every_head_through_w_o(example):
    """Move 4: the blend is not the word's new vector; x + Σ_h out_h·W_O^h is, and our W_O copies
    each head's blend into its own named slots, so a verb stays a verb."""
    _, payload = example
    dims = payload["residual_dims"]
    for s in payload["sentences"]:
        before, after = np.array(s["residual"]["before"]), np.array(s["residual"]["after"])
        expected = np.zeros_like(after)
        expected[:, : before.shape[1]] = before
        for h in payload["heads"]:
            arrays = s["heads"][h["id"]]
            np.testing.assert_allclose(arrays["o"], arrays["out"], atol=1e-9)  # W_O copies the blend…
            cols = [dims.index(d) for d in h["o_dims"]]  # …into this head's slots
            expected[:, cols] += np.array(arrays["o"])
        np.testing.assert_allclose(after, expected, atol=2e-3)
    cat_mat = next(s for s in payload["sentences"] if s["id"] == "cat-mat")
    sat = dict(zip(dims, cat_mat["residual"]["after"][2]))
    assert sat["VERB"] == 1 and sat["NOUN"] == 0 and sat["syntax:noun"] > 0.8


def test_bias_is_null_where_a_head_adds_none(example):
    _, payload = example
    by_id = {s["id"]: s for s in payload["sentences"]}
    assert by_id["cat-mat"]["heads"]["previous"]["bias"] is None
    assert by_id["cat-mat"]["heads"]["syntax"]["bias"] is not None
    assert by_id["translate"]["heads"]["syntax"]["bias"] is None
    assert by_id["translate"]["heads"]["alignment"]["bias"] is not None


def rows(payload, name):
    for s in payload["sentences"]:
        for head_id, arrays in s["heads"].items():
            for i, row in enumerate(arrays[name]):
                yield f"{s['id']}/{head_id}/{s['queries'][i]}", row


@pytest.mark.parametrize("name", ["pct", "pct_unscaled"])
def test_every_percentage_row_sums_to_exactly_100(example, name):
    _, payload = example
    for where, row in rows(payload, name):
        assert sum(row) == 100 and all(isinstance(x, int) and x >= 0 for x in row), where


@pytest.mark.parametrize("name", ["weights", "weights_unscaled"])
def test_every_weight_row_sums_to_one(example, name):
    _, payload = example
    for where, row in rows(payload, name):
        assert sum(row) == pytest.approx(1.0, abs=1e-3), where


def test_masked_entries_are_null_scores_and_zero_weights(example):
    _, payload = example
    decoder = next(s for s in payload["sentences"] if s["id"] == "decoder")
    n = len(decoder["queries"])
    for arrays in decoder["heads"].values():
        for i in range(n):
            for j in range(n):
                future = j > i
                assert (arrays["scores"][i][j] is None) == future
                assert (arrays["scaled"][i][j] is None) == future
                if future:
                    assert arrays["weights"][i][j] == arrays["weights_unscaled"][i][j] == arrays["pct"][i][j] == 0


def test_cross_payload_has_query_rows_and_key_columns(example):
    _, payload = example
    translate = next(s for s in payload["sentences"] if s["id"] == "translate")
    assert translate["kind"] == "cross" and translate["key_label"] == "French source"
    assert translate["roles_k"] == ["DET", "NOUN", "ADJ", "VERB"]
    assert [translate["keys"][top_keys(payload, "translate", "alignment", i)[0]] for i in range(4)] == [
        "Le", "noir", "chat", "dort"]


def test_unscaled_weights_are_peakier_in_the_payload(example):
    _, payload = example
    arrays = payload["sentences"][0]["heads"]["syntax"]
    for i in range(len(arrays["weights"])):
        assert max(arrays["weights_unscaled"][i]) > max(arrays["weights"][i])


def test_numbers_are_rounded_to_the_stated_precision(example):
    _, payload = example
    arrays = payload["sentences"][0]["heads"]["syntax"]
    for x in (x for row in arrays["weights"] for x in row):
        assert round(x, 4) == x
    for x in (x for row in arrays["scaled"] for x in row):
        assert round(x, 3) == x


def test_payload_is_deterministic(tmp_path):
    spec_a, _ = read(tmp_path, EXAMPLE)
    spec_b, _ = read(tmp_path, EXAMPLE)
    dump = lambda p: json.dumps(p, separators=(",", ":"))  # noqa: E731
    assert dump(compute_widget(spec_a)) == dump(compute_widget(spec_b)) == dump(compute_widget(spec_a))


def test_the_default_query_is_a_payload_index(example):
    _, payload = example
    default = payload["default"]
    sentence = next(s for s in payload["sentences"] if s["id"] == default["sentence"])
    assert sentence["queries"][default["query"]] == "sat"


def test_top_keys_orders_by_weight_and_breaks_ties_by_position():
    payload = {"sentences": [{"id": "s", "heads": {"h": {"weights": [[0.2, 0.4, 0.4, 0.0]]}}}]}
    assert top_keys(payload, "s", "h", 0, k=3) == [1, 2, 0]


def test_a_forty_word_sentence_fits_the_page_budget(tmp_path):
    spec, errors = read(tmp_path, EXAMPLE.replace("  heads: [syntax, previous, coreference, alignment]\n", "")
                        .replace("        alignment:\n          - black -> noir\n          - cat -> chat\n",
                                 "        syntax:\n          - black -> chat\n") + LONG)
    assert errors == []
    payload = compute_widget(spec)
    assert check_claims(spec, payload) == []
    long = next(s for s in payload["sentences"] if s["id"] == "long")
    assert len(long["queries"]) == 43

    def gzipped(data) -> int:
        return len(gzip.compress(json.dumps(data, separators=(",", ":"), sort_keys=True).encode(), 9))

    # Measured 12.9 KB for the sentence and 17.6 KB for the payload (3 heads, 5 sentences);
    # the bounds leave room for tuning but catch an accidental blow-up.
    assert gzipped(long) < 15_000
    assert gzipped(payload) < 21_000


# ---------------------------------------------------------------------------- percentages


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        ([1 / 3, 1 / 3, 1 / 3], [34, 33, 33]),
        ([0.555, 0.445], [56, 44]),
        ([0.1234, 0.2345, 0.6421], [12, 24, 64]),
        ([0.996, 0.002, 0.002], [100, 0, 0]),
    ],
    ids=["thirds-first-wins-tie", "halves", "plain", "tiny-weights"],
)
def test_largest_remainder_percentages(weights, expected):
    pct = percentages(np.array([weights]), np.ones((1, len(weights)), dtype=bool))
    assert pct.tolist() == [expected]


@given(st.lists(st.floats(min_value=0, max_value=1e3), min_size=1, max_size=50), st.integers(0, 49))
def test_percentages_sum_to_100_and_skip_masked_keys(raw, visible):
    visible = min(visible, len(raw) - 1) + 1
    mask = np.arange(len(raw)) < visible
    values = np.where(mask, np.asarray(raw) + 1e-3, 0.0)
    weights = values / values.sum()
    pct = percentages(weights[None, :], mask[None, :])[0]
    assert pct.sum() == 100 and (pct[~mask] == 0).all() and (pct >= 0).all()
    assert (np.abs(pct - weights * 100) < 1).all()



def test_shares_of_sentences_with_as_many_keys_are_each_sentence_s_own():
    """Rows of sentences with as many keys are rounded together; each row as if alone."""
    from generator.kinds.attention.widget import _shares

    rng = np.random.default_rng(7)
    heads = teaching.DEFAULT_HEADS
    computed = []
    for n in (6, 11, 6, 4, 11, 6, 1):
        words = tuple(teaching.Word(f"w{i}", str(rng.choice(teaching.ROLES)), 0, f"w{i}", True) for i in range(n))
        computed.append(teaching.compute(words, kind=str(rng.choice(["self", "causal"])), heads=heads))
    for results, shares in zip(computed, _shares(computed, heads, 3), strict=True):
        stacked = np.stack([results[h].weights for h in heads] + [results[h].weights_unscaled for h in heads])
        mask = np.stack([results[h].mask for h in heads] * 2)
        pct, fine = percentages(stacked, mask), percentages(stacked, mask, 1000)
        for i, h in enumerate(heads):
            assert shares[h]["pct"].tolist() == pct[i].tolist() and shares[h]["pct_unscaled"].tolist() == pct[3 + i].tolist()
            assert shares[h]["weights"].tolist() == fine[i].tolist()
            assert shares[h]["weights_unscaled"].tolist() == fine[3 + i].tolist()
