"""The designed teaching model: tagging, the named weights, and the relations the page relies on."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.kinds.attention import teaching
from generator.models.core import softmax
from generator.kinds.attention.teaching import HEADS, ROLES, TaggingError, Word, compute, parse_sentence

CAT_MAT = "The cat/NOUN sat/VERB on the mat/NOUN"
ANIMAL = "The animal/NOUN didn't cross/VERB the street/NOUN because it was too tired/ADJ"
LONG = (  # 43 words: the front end's performance case
    "On a cold/ADJ morning/NOUN the old/ADJ fisherman/NOUN pulled/VERB his small/ADJ boat/NOUN "
    "onto the beach/NOUN, because the storm/NOUN that had kept/VERB him at home/NOUN all week/NOUN "
    "was finally/ADV moving/VERB away/ADV, and he hoped/VERB the fish/NOUN would return/VERB to the "
    "bay/NOUN soon."
)


def weights_of(text: str, head: str, query: str, occurrence: int = 1) -> dict[str, float]:
    """{key word: ÷√d weight} for one query word (repeated keys get '#n')."""
    words = parse_sentence(text)
    row = compute(words, heads=[head])[head].weights[_index(words, query, occurrence)]
    names = [w.text for w in words]
    return {(n if names.count(n) == 1 else f"{n}#{names[:j + 1].count(n)}"): float(row[j])
            for j, n in enumerate(names)}


def _index(words, text: str, occurrence: int = 1) -> int:
    return [i for i, w in enumerate(words) if w.text == text][occurrence - 1]


def top(weights: dict[str, float], k: int = 1) -> list[str]:
    return sorted(weights, key=weights.get, reverse=True)[:k]


# ---------------------------------------------------------------------------- tagging


def test_parse_gives_roles_offsets_and_splits_punctuation():
    words = parse_sentence("The cat/NOUN sat/VERB, didn't it?")
    assert [(w.text, w.role, w.start, w.tagged) for w in words] == [
        ("The", "DET", 0, False),
        ("cat", "NOUN", 4, True),
        ("sat", "VERB", 13, True),
        (",", "PUNCT", 21, False),
        ("didn't", "AUX", 23, False),
        ("it", "PRON", 30, False),
        ("?", "PUNCT", 32, False),
    ]
    assert words[1].written == "cat/NOUN"


@pytest.mark.parametrize(
    ("text", "roles"),
    [
        ("Paris/PROPN", ["NOUN"]),
        ("that/CONJ", ["CONJ"]),
        ("that", ["DET"]),
        ("THE", ["DET"]),
        ("42 cats/NOUN", ["NUM", "NOUN"]),
        ("because/SCONJ", ["CONJ"]),
        ("don’t", ["AUX"]),
        ("— ./PUNCT", ["PUNCT", "PUNCT"]),
    ],
    ids=["propn-is-noun", "tag-overrides-lexicon", "lexicon", "case-insensitive", "digits", "ud-alias",
         "curly-apostrophe", "punctuation"],
)
def test_roles_from_lexicon_tags_and_aliases(text, roles):
    assert [w.role for w in parse_sentence(text)] == roles


@pytest.mark.parametrize(
    ("text", "offset", "fragments"),
    [
        ("The frobble sat/VERB", 4, ["'frobble' needs a tag", "'frobble/NOUN'", "DET, NOUN, PRON"]),
        ("The cat/NOUNN sat/VERB", 8, ["unknown tag 'NOUNN' on 'cat'", "did you mean 'NOUN'?", "tags: DET"]),
        ("The cat/noun", 8, ["tags are written in capitals: 'NOUN'"]),
        ("The cat/ sat/VERB", 4, ["'cat/' has a '/' but no tag"]),
        ("The /NOUN", 4, ["has no word before it"]),
    ],
    ids=["untagged-unknown-word", "misspelt-tag", "lowercase-tag", "empty-tag", "tag-without-word"],
)
def test_tagging_errors_name_the_word_and_carry_its_offset(text, offset, fragments):
    with pytest.raises(TaggingError) as caught:
        parse_sentence(text)
    [problem] = caught.value.problems
    assert problem.offset == offset
    for fragment in fragments:
        assert fragment in problem.message


def test_every_tagging_problem_is_reported_in_text_order():
    with pytest.raises(TaggingError) as caught:
        parse_sentence("A zorp sat/VRB on a blick")
    assert [p.offset for p in caught.value.problems] == [2, 11, 20]


def test_too_many_words_is_an_error_at_the_first_extra_word():
    text = " ".join(["the"] * (teaching.MAX_WORDS + 2))
    with pytest.raises(TaggingError) as caught:
        parse_sentence(text)
    assert caught.value.problems[0].offset == 4 * teaching.MAX_WORDS


@pytest.mark.parametrize(
    ("text", "subjects"),
    [
        (CAT_MAT, ["cat"]),
        (ANIMAL, ["animal"]),
        ("On the mat/NOUN the cat/NOUN sat/VERB", ["cat"]),
        ("The cat/NOUN on the mat/NOUN sat/VERB", ["cat"]),
        ("The dog/NOUN barked/VERB and the cat/NOUN ran/VERB", ["dog", "cat"]),
        ("Look/VERB at the cat/NOUN", []),
    ],
    ids=["simple", "contraction-aux", "fronted-place", "noun-inside-pp", "two-clauses", "no-subject"],
)
def test_subject_flag(text, subjects):
    words = parse_sentence(text)
    flags = teaching.subject_flags([w.role for w in words])
    assert [w.text for w, f in zip(words, flags) if f] == subjects


# ---------------------------------------------------------------------------- the designed weights


@pytest.mark.parametrize("head", HEADS, ids=lambda h: h.id)
def test_head_metadata_matches_its_weights(head):
    assert head.w_q.shape == (len(teaching.EMBEDDING_DIMS), len(head.q_dims))
    assert head.w_k.shape == (len(teaching.EMBEDDING_DIMS), len(head.k_dims))
    assert head.w_v.shape == (len(teaching.EMBEDDING_DIMS), len(head.v_dims))
    assert head.w_o.shape == (len(head.v_dims), len(teaching.RESIDUAL_DIMS)) and len(head.o_dims) == len(head.v_dims)
    assert head.description.endswith(".") and head.cross.endswith(".")
    assert head.bias == "none" or head.bias.endswith(".")


def test_every_head_has_its_own_value_and_output_matrices():
    assert len({id(h.w_v) for h in HEADS}) == len(HEADS)
    assert len({h.o_dims for h in HEADS}) == len(HEADS)  # each head writes its own residual slots
    assert teaching.head("syntax").v_dims != teaching.head("coreference").v_dims


def test_the_layer_adds_to_the_word_instead_of_replacing_it():
    words = parse_sentence(CAT_MAT)
    results = compute(words, heads=teaching.HEAD_IDS)
    before, after = teaching.residual(words, results)
    concat = np.concatenate([results[h].out for h in teaching.HEAD_IDS], axis=1)
    w_o = np.concatenate([teaching.head(h).w_o for h in teaching.HEAD_IDS], axis=0)
    np.testing.assert_allclose(after, before + concat @ w_o, atol=1e-12)  # x + concat(heads)·W_O
    sat = dict(zip(teaching.RESIDUAL_DIMS, after[2]))
    assert sat["VERB"] == 1 and sat["NOUN"] == 0  # "sat" stays a verb…
    assert sat["syntax:noun"] > 0.8  # …and learns that its syntax partners are nouns


def test_a_query_vector_reads_what_the_word_looks_for():
    words = parse_sentence(CAT_MAT)
    result = compute(words, heads=["syntax"])["syntax"]
    named = dict(zip(teaching.head("syntax").q_dims, result.q[0]))  # "The"
    assert named == {"looks-for:noun": teaching.SYNTAX_LOOK, "looks-for:verb": 0, "looks-for:adj": 0}
    offers = dict(zip(teaching.head("syntax").k_dims, result.k[1]))  # "cat"
    assert offers == {"offers:noun": teaching.SYNTAX_OFFER, "offers:verb": 0, "offers:adj": 0}


@given(st.integers(min_value=1, max_value=teaching.MAX_WORDS))
def test_previous_head_scores_are_minus_c_times_squared_distance(n):
    words = parse_sentence(" ".join(["the"] * n))
    result = compute(words, heads=["previous"])["previous"]
    i, j = np.indices((n, n))
    np.testing.assert_allclose(result.scores, -teaching.PREVIOUS_SHARPNESS * (j - (i - 1)) ** 2, atol=1e-9)
    assert (result.weights[1:].argmax(axis=1) == np.arange(n - 1)).all()


# ---------------------------------------------------------------------------- acceptance


def test_sat_attends_to_cat_and_mat():
    w = weights_of(CAT_MAT, "syntax", "sat")
    assert set(top(w, 2)) == {"cat", "mat"}
    assert w["cat"] + w["mat"] >= 0.60


@pytest.mark.parametrize(
    ("query", "occurrence", "key"),
    [("The", 1, "cat"), ("the", 1, "mat"), ("on", 1, "mat"), ("cat", 1, "sat"), ("mat", 1, "sat")],
    ids=["The->cat", "the->mat", "on->mat", "cat->sat", "mat->sat"],
)
def test_cat_mat_syntax_relations(query, occurrence, key):
    assert top(weights_of(CAT_MAT, "syntax", query, occurrence)) == [key]


@pytest.mark.parametrize(
    ("text", "head", "query", "key"),
    [
        (ANIMAL, "coreference", "it", "animal"),
        (ANIMAL.replace("tired/ADJ", "wide/ADJ"), "coreference", "it", "animal"),  # a subject rule, not understanding
        ("The teacher/NOUN thanked/VERB the students/NOUN because she was proud/ADJ", "coreference", "she", "teacher"),
        (ANIMAL, "syntax", "didn't", "cross"),
        (ANIMAL, "syntax", "it", "was"),
        (ANIMAL, "syntax", "too", "tired"),
        ("The black/ADJ cat/NOUN sleeps/VERB", "syntax", "black", "cat"),
    ],
    ids=["it->animal", "it->animal-even-if-wide", "she->teacher", "didn't->cross", "it->was", "too->tired",
         "black->cat"],
)
def test_relations(text, head, query, key):
    assert top(weights_of(text, head, query)) == [key]


def test_it_prefers_animal_over_the_nearer_noun_street():
    w = weights_of(ANIMAL, "coreference", "it")
    assert w["animal"] > 2 * w["street"]
    assert w["animal"] + w["street"] > 0.85


def test_a_word_other_than_a_pronoun_spreads_evenly_in_the_coreference_head():
    w = weights_of(ANIMAL, "coreference", "cross")
    np.testing.assert_allclose(list(w.values()), 1 / len(w))


@pytest.mark.parametrize(
    ("text", "head", "query"),
    [(CAT_MAT, "syntax", "sat"), (CAT_MAT, "syntax", "The"), (CAT_MAT, "syntax", "on"),
     (ANIMAL, "coreference", "it"), (CAT_MAT, "previous", "mat")],
    ids=["sat", "The", "on", "it", "previous-mat"],
)
def test_unscaled_weights_are_peakier(text, head, query):
    words = parse_sentence(text)
    result = compute(words, heads=[head])[head]
    i = _index(words, query)
    assert result.weights_unscaled[i].max() > result.weights[i].max() + 0.05
    assert result.weights_unscaled[i].argmax() == result.weights[i].argmax()


def test_a_forty_word_sentence_works():
    words = parse_sentence(LONG)
    assert len(words) >= 40
    results = compute(words, heads=teaching.HEAD_IDS)
    for result in results.values():
        assert np.isfinite(result.weights).all()
        np.testing.assert_allclose(result.weights.sum(axis=1), 1.0)
    hoped = _index(words, "hoped")
    assert results["syntax"].weights[hoped].argmax() == _index(words, "he")


# ---------------------------------------------------------------------------- kinds and invariants

sentences = st.lists(st.sampled_from(ROLES), min_size=1, max_size=24).map(
    lambda roles: tuple(Word(f"w{i}", r, 0, f"w{i}/{r}", True) for i, r in enumerate(roles))
)


@settings(max_examples=60, deadline=None)
@given(sentences)
def test_causal_rows_never_see_the_future(words):
    for result in compute(words, kind="causal", heads=teaching.HEAD_IDS).values():
        future = np.triu(np.ones((len(words), len(words)), dtype=bool), k=1)
        assert (result.weights[future] == 0).all() and (result.weights_unscaled[future] == 0).all()
        assert np.isneginf(result.scaled[future]).all()
        np.testing.assert_allclose(result.weights.sum(axis=1), 1.0)


@settings(max_examples=60, deadline=None)
@given(sentences, sentences)
def test_cross_attention_shapes_and_rows(queries, keys):
    for head_id, result in compute(queries, keys, kind="cross", heads=teaching.HEAD_IDS).items():
        h = teaching.head(head_id)
        n_q, n_k = len(queries), len(keys)
        assert result.q.shape == (n_q, h.d_k) and result.k.shape == (n_k, h.d_k)
        assert result.v.shape == (n_k, len(h.v_dims)) and result.out.shape == (n_q, len(h.v_dims))
        for name in ("scores", "scaled", "weights", "weights_unscaled", "mask"):
            assert getattr(result, name).shape == (n_q, n_k), name
        np.testing.assert_allclose(result.weights.sum(axis=1), 1.0)


@settings(max_examples=60, deadline=None)
@given(sentences, st.sampled_from(["self", "causal"]))
def test_weights_are_the_softmax_of_the_scaled_scores(words, kind):
    for head_id, result in compute(words, kind=kind, heads=teaching.HEAD_IDS).items():
        bias = 0.0 if result.bias is None else result.bias
        np.testing.assert_allclose(result.weights, softmax(result.scaled), atol=1e-12)
        unscaled = np.where(result.mask, result.scores + bias, -np.inf)
        np.testing.assert_allclose(result.weights_unscaled, softmax(unscaled), atol=1e-12)
        np.testing.assert_allclose(result.out, result.weights @ result.v, atol=1e-12)


def _per_head(queries, keys, kind, heads):
    """compute() as it was written before its heads shared one softmax: one
    scaled_dot_product_attention per head and scale. The reference for the batched one."""
    from generator.models.core import causal_mask, scaled_dot_product_attention

    keys = queries if keys is None else keys
    x_q, x_k = teaching.embed(queries), teaching.embed(keys)
    roles_q, roles_k = teaching.role_indices(queries), teaching.role_indices(keys)
    mask = causal_mask(len(queries)) if kind == "causal" else np.ones((len(queries), len(keys)), dtype=bool)
    results = {}
    for head_id in heads:
        h = teaching.head(head_id)
        q, k, v = x_q @ h.w_q, x_k @ h.w_k, x_k @ h.w_v
        bias = h.bias_rule(roles_q, roles_k, kind)
        out, weights = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias)
        _, weights_unscaled = scaled_dot_product_attention(q, k, v, mask=mask, bias=bias, scale=1.0)
        scores = q @ k.T
        scaled = np.where(mask, scores / np.sqrt(h.d_k) + (0.0 if bias is None else bias), -np.inf)
        results[head_id] = teaching.HeadResult(q, k, v, scores, bias, scaled, weights, weights_unscaled, out,
                                               out @ h.w_o, mask)
    return results


long_sentences = st.lists(st.sampled_from(ROLES), min_size=1, max_size=60).map(
    lambda roles: tuple(Word(f"w{i}", r, 0, f"w{i}/{r}", True) for i, r in enumerate(roles))
)


@settings(max_examples=150, deadline=None)
@given(long_sentences, long_sentences, st.sampled_from(teaching.KINDS),
       st.lists(st.sampled_from(teaching.HEAD_IDS), min_size=1, max_size=4, unique=True))
def test_compute_gives_what_one_attention_call_per_head_gives_bit_for_bit(queries, keys, kind, heads):
    keys = keys if kind == "cross" else None
    fast, slow = compute(queries, keys, kind=kind, heads=heads), _per_head(queries, keys, kind, heads)
    assert list(fast) == list(slow)
    for head_id in heads:
        for name in ("q", "k", "v", "scores", "bias", "scaled", "weights", "weights_unscaled", "out", "written", "mask"):
            a, b = getattr(fast[head_id], name), getattr(slow[head_id], name)
            if b is None:
                assert a is None, name
                continue
            assert a.shape == b.shape and a.dtype == b.dtype, name
            assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes(), (head_id, name)  # -0.0 too


@settings(max_examples=150, deadline=None)
@given(long_sentences, st.lists(st.sampled_from(teaching.HEAD_IDS), min_size=1, max_size=4, unique=True))
def test_self_weights_are_computes_weights_bit_for_bit(words, heads):
    weights = teaching.self_weights(words, heads)
    results = compute(words, kind="self", heads=heads)
    assert weights.shape == (len(heads), len(words), len(words))
    for i, head_id in enumerate(heads):
        assert weights[i].tobytes() == np.ascontiguousarray(results[head_id].weights).tobytes(), head_id


def test_cross_drops_the_within_sentence_biases():
    queries = parse_sentence("The black/ADJ cat/NOUN sleeps/VERB")
    keys = parse_sentence("Le/DET chat/NOUN noir/ADJ dort/VERB")
    results = compute(queries, keys, kind="cross", heads=teaching.HEAD_IDS)
    assert results["syntax"].bias is None and results["coreference"].bias is None
    aligned = results["alignment"].weights.argmax(axis=1)
    assert [keys[j].text for j in aligned] == ["Le", "noir", "chat", "dort"]
