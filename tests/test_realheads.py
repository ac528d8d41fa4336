"""Real heads: rounding, word merging, the head finder, the cache and the inspector.

Everything here runs on a tiny random checkpoint the tests write themselves; one test also
runs the inspector on all-MiniLM-L6-v2 (see conftest.minilm_dir).
"""

from __future__ import annotations

import hashlib
import json
import string
from pathlib import Path

import numpy as np
import pytest
from conftest import minilm_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.models.bert import BertConfig, load_model, write_random_checkpoint
from generator.kinds.attention.realheads import PER_MILLE, find_heads, largest_remainder, merge_pieces, word_attention
from generator.kinds.attention.cache import (
    cache_lookup,
    cache_status,
    checkpoint_sha256,
    compute_entry,
    empty_cache,
    entry_attention,
    load_cache,
    load_cache_arrays,
    refresh_cache,
    save_cache,
)
from generator.kinds.attention.commands import inspect_attention
from generator.errors import BuildError, ContentError
from generator.kinds.helpers import json_for_script

TINY = BertConfig(
    vocab_size=120,
    hidden_size=24,
    num_hidden_layers=2,
    num_attention_heads=3,
    intermediate_size=40,
    max_position_embeddings=48,
)
TINY_VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list(string.punctuation + string.ascii_lowercase)
    + ["##" + c for c in string.ascii_lowercase]
    + ["the", "cat", "sat", "on", "mat", "play", "##ing", "did", "##n"]
)
SENTENCE = "The cat sat on the mat, playing."


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-bert")
    write_random_checkpoint(folder, TINY_VOCAB, TINY, seed=3)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tiny_dir):
    return load_model(tiny_dir)


# ---- largest remainder ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "row, total, expected",
    [
        ([1 / 3, 1 / 3, 1 / 3], 100, [34, 33, 33]),  # a tie: the lower index gets the unit
        ([0.5, 0.25, 0.25], 1000, [500, 250, 250]),  # exact: nothing to hand out
        ([0.004, 0.004, 0.992], 100, [1, 0, 99]),  # 0.4, 0.4, 99.2: a remainder tie again
        ([2, 1, 1], 10, [5, 3, 2]),  # unnormalised input is scaled first
        ([0, 0, 0], 1000, [0, 0, 0]),  # nothing to share
        ([0.2], 7, [7]),
    ],
    ids=["thirds", "exact", "tiny-values", "unnormalised", "zero-row", "single"],
)
def test_largest_remainder_examples(row, total, expected):
    assert largest_remainder(row, total) == expected


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=1, max_size=12),
        min_size=1,
        max_size=5,
    ).filter(lambda rows: len({len(r) for r in rows}) == 1),
    total=st.integers(min_value=0, max_value=100_000),
)
def test_largest_remainder_rows_sum_exactly_and_stay_close(rows, total):
    result = np.array(largest_remainder(rows, total))
    x = np.array(rows)
    sums = x.sum(axis=1)
    for r, s, quota_row in zip(result, sums, x):
        if s > 0:
            assert r.sum() == total
            assert np.all(np.abs(r - quota_row / s * total) < 1 + 1e-9), "each value is its quota, floored or raised by one"
        else:
            assert r.sum() == 0


def test_largest_remainder_is_vectorised_and_refuses_bad_input():
    rows = np.random.default_rng(0).random((2, 3, 4, 5))
    result = largest_remainder(rows, 1000)
    assert np.array(result).shape == (2, 3, 4, 5)
    assert np.all(np.array(result).sum(axis=-1) == 1000)
    for bad in ([-0.1, 1.1], [np.nan, 1.0], [np.inf, 1.0]):
        with pytest.raises(ValueError):
            largest_remainder(bad, 100)
    with pytest.raises(ValueError):
        largest_remainder([1.0], 2.5)


# ---- words --------------------------------------------------------------------------------------------


def test_merge_pieces_sums_columns_and_averages_rows():
    # pieces: [CLS] play ##ing [SEP] -> words: [CLS] playing [SEP]
    pieces = np.array(
        [
            [0.1, 0.2, 0.3, 0.4],
            [0.5, 0.1, 0.1, 0.3],
            [0.2, 0.2, 0.2, 0.4],
            [0.7, 0.1, 0.1, 0.1],
        ]
    )
    words = merge_pieces(pieces, [0, 1, 1, 2])
    expected = np.array(
        [
            [0.1, 0.5, 0.4],
            [(0.5 + 0.2) / 2, (0.2 + 0.4) / 2, (0.3 + 0.4) / 2],
            [0.7, 0.2, 0.1],
        ]
    )
    assert np.allclose(words, expected)


def test_word_attention_rows_still_sum_to_one(tiny_model):
    view = word_attention(tiny_model, "The cat didn't play, playing!")
    assert view.words == ("[CLS]", "The", "cat", "didn", "'", "t", "play", ",", "playing", "!", "[SEP]")
    assert view.special == (True,) + (False,) * 9 + (True,)
    assert view.pieces[9:11] == ("play", "##ing") and view.piece_words[9:11] == (8, 8)
    assert view.attention.shape == (2, 3, 11, 11)
    assert np.allclose(view.attention.sum(axis=-1), 1, atol=1e-6)


def test_empty_sentence_is_a_build_error(tiny_model):
    with pytest.raises(BuildError, match="empty"):
        word_attention(tiny_model, "  ")


# ---- head finder -----------------------------------------------------------------------------------


def synthetic_attention(n: int, gold: dict[int, int], layers: int = 2, heads: int = 3) -> np.ndarray:
    """Uniform attention, except that head (1, 2) puts its mass on the gold key of each query,
    and every head gives [CLS] (index 0) and the query itself even more (which must be ignored)."""
    a = np.full((layers, heads, n, n), 1.0)
    a[:, :, :, 0] = 50  # [CLS] soaks up attention
    a[:, :, np.arange(n), np.arange(n)] = 40  # self-attention
    for q, k in gold.items():
        a[1, 2, q, k] = 30
    return a / a.sum(axis=-1, keepdims=True)


def test_head_finder_finds_the_planted_head():
    n = 8  # [CLS] w1..w6 [SEP]
    special = [True] + [False] * 6 + [True]
    relations = [(1, 3, "subj"), (2, 3, "subj"), (4, 6, "obj"), (5, 6, "obj"), (6, 5, "obj")]
    gold = {q: k for q, k, _ in relations}
    reports = find_heads(synthetic_attention(n, gold), relations, special, top=2)
    assert list(reports) == ["obj", "subj"]
    obj = reports["obj"]
    assert (obj.best_heads[0].layer, obj.best_heads[0].head) == (1, 2)
    assert obj.best_heads[0].accuracy == 1.0 and obj.best_heads[0].hits == 3 and obj.total == 3
    # Offsets -1 (6->5), +1 (5->6) and +2 (4->6) each catch one of three; the tie goes to -1.
    assert obj.baseline_offset == -1 and obj.baseline_accuracy == pytest.approx(1 / 3)
    assert obj.beats_baseline
    subj = reports["subj"]
    assert subj.best_heads[0].accuracy == 1.0
    assert subj.baseline_offset == 1 and subj.baseline_accuracy == 0.5  # 2->3 is +1; 1->3 is +2
    assert subj.beats_baseline
    # The other heads' top word is [CLS] or the query itself until those are excluded: then
    # uniform rows tie, and ties go to the lowest index, word 1.
    assert subj.best_heads[1].accuracy == 0.0


def test_head_finder_baseline_can_win():
    n = 6
    special = [True, False, False, False, False, True]
    relations = [(2, 1, "prev"), (3, 2, "prev"), (4, 3, "prev")]
    attention = synthetic_attention(n, {2: 4, 3: 4, 4: 1})  # the planted head is wrong every time
    report = find_heads(attention, relations, special)["prev"]
    assert report.baseline_offset == -1 and report.baseline_accuracy == 1.0
    assert not report.beats_baseline


def test_head_finder_baseline_counts_real_words_only():
    # [CLS] a [SEP] b c [SEP]: from "b" (index 3), the real word 1 to the left is "a" (index 1).
    special = [True, False, True, False, False, True]
    report = find_heads(synthetic_attention(6, {}), [(3, 1, "left")], special)["left"]
    assert report.baseline_offset == -1 and report.baseline_accuracy == 1.0


@pytest.mark.parametrize(
    "relation, message",
    [((0, 2, "x"), "special"), ((1, 7, "x"), "outside"), ((2, 2, "x"), "itself"), ((1, 5, "x"), "special")],
    ids=["special-query", "out-of-range", "self", "special-key"],
)
def test_head_finder_refuses_bad_relations(relation, message):
    special = [True, False, False, False, False, True]
    with pytest.raises(ValueError, match=message):
        find_heads(synthetic_attention(6, {}), [relation], special)


def test_head_finder_accepts_per_mille_integers_from_the_cache(tiny_model):
    entry = compute_entry(tiny_model, SENTENCE)
    relations = [(2, 3, "nsubj"), (4, 6, "pobj")]
    from_ints = find_heads(np.array(entry["attention"]), relations, entry["special"])
    from_floats = find_heads(entry_attention(entry), relations, entry["special"])
    assert from_ints == from_floats


# ---- cache -------------------------------------------------------------------------------------------


def test_compute_entry_rows_sum_to_1000(tiny_model):
    entry = compute_entry(tiny_model, SENTENCE)
    attention = np.array(entry["attention"])
    assert attention.shape == (2, 3, len(entry["words"]), len(entry["words"]))
    assert attention.dtype.kind == "i" and np.all(attention.sum(axis=-1) == PER_MILLE)
    assert entry["words"][0] == "[CLS]" and entry["words"][-1] == "[SEP]"
    assert entry["words"][1] == "The"  # as written; the pieces show what the model saw
    assert entry["pieces"][1] == "the"
    assert len(entry["piece_words"]) == len(entry["pieces"])
    exact = word_attention(tiny_model, SENTENCE).attention
    assert np.max(np.abs(entry_attention(entry) - exact)) < 1e-3 + 1e-6


def test_checkpoint_sha256_is_the_file_digest(tiny_dir, tmp_path):
    assert checkpoint_sha256(tiny_dir) == hashlib.sha256((tiny_dir / "model.safetensors").read_bytes()).hexdigest()
    with pytest.raises(BuildError, match="model.safetensors"):
        checkpoint_sha256(tmp_path)


def test_cache_hit_miss_and_stale(tiny_model, tiny_dir, tmp_path):
    sha = checkpoint_sha256(tiny_dir)
    cache, computed = refresh_cache(empty_cache(), tiny_model, sha, [SENTENCE, "the cat"])
    assert computed == ["The cat sat on the mat, playing.", "the cat"]
    assert cache_status(cache, sha, SENTENCE) == "hit"
    assert cache_lookup(cache, sha, SENTENCE) == compute_entry(tiny_model, SENTENCE)
    assert cache_status(cache, sha, "a new sentence") == "miss"
    assert cache_lookup(cache, sha, "a new sentence") is None

    new_sha = "f" * 64  # the checkpoint changed
    assert cache_status(cache, new_sha, SENTENCE) == "stale"
    assert cache_lookup(cache, new_sha, SENTENCE) is None

    # A second refresh for the same checkpoint computes only what is missing...
    again, computed = refresh_cache(cache, tiny_model, sha, [SENTENCE, "the mat"])
    assert computed == ["the mat"]
    assert set(again["entries"][sha]) == {SENTENCE, "the mat"}  # pruned: "the cat" is no longer used
    # ...one for a new checkpoint recomputes the stale entries and drops the old checkpoint.
    moved, computed = refresh_cache(cache, tiny_model, new_sha, [SENTENCE])
    assert computed == [SENTENCE] and list(moved["entries"]) == [new_sha]
    kept, _ = refresh_cache(cache, tiny_model, new_sha, [SENTENCE], prune=False)
    assert set(kept["entries"]) == {sha, new_sha}
    assert set(cache["entries"][sha]) == {SENTENCE, "the cat"}, "refresh must not modify its input"


def test_cache_file_round_trips_deterministically(tiny_model, tiny_dir, tmp_path):
    sha = checkpoint_sha256(tiny_dir)
    cache, _ = refresh_cache(empty_cache(), tiny_model, sha, ["the cat", SENTENCE, "Café — naïve"])
    path = tmp_path / "heads.json"
    save_cache(path, cache)
    text = path.read_text(encoding="utf-8")
    assert load_cache(path) == cache
    save_cache(path, load_cache(path))
    assert path.read_text(encoding="utf-8") == text, "saving what was loaded changes nothing"
    lines = text.split("\n")
    assert lines[2] == f'"{sha}": {{'
    assert [json.loads("{" + line.rstrip(",") + "}").popitem()[0] for line in lines[3:6]] == sorted(
        ["the cat", SENTENCE, "Café — naïve"]
    ), "one sentence per line, sorted"
    assert "Café — naïve" in text, "non-ASCII stays readable"
    assert text.endswith("}\n")


def test_cache_arrays_are_the_cache_read_once_per_content(tiny_model, tiny_dir, tmp_path):
    sha = checkpoint_sha256(tiny_dir)
    cache, _ = refresh_cache(empty_cache(), tiny_model, sha, ["the cat", SENTENCE])
    path, copy = tmp_path / "heads.json", tmp_path / "copy.json"
    save_cache(path, cache)
    save_cache(copy, cache)
    arrays = load_cache_arrays(path)
    for sentence, entry in cache["entries"][sha].items():
        got = arrays["entries"][sha][sentence]
        assert got["attention"].dtype == np.int16 and not got["attention"].flags.writeable
        assert got["attention"].tolist() == entry["attention"]
        # The numbers keep the exact text they were read from, so a page writes them by copying it.
        assert got["attention"].json == json.dumps(entry["attention"], separators=(",", ":"))
        assert json_for_script(got["attention"]) == json_for_script(entry["attention"])
        assert got["attention"][0].json is None and got["attention"].astype(np.int32).json is None
        assert {k: v for k, v in got.items() if k != "attention"} == {k: v for k, v in entry.items() if k != "attention"}
    assert load_cache_arrays(copy) is arrays, "a file with the same bytes is decoded once"
    _rewrite_entry(copy, "the cat", lambda e: e["attention"][0][0][0].__setitem__(0, e["attention"][0][0][0][0] + 1))
    with pytest.raises(ContentError, match="sum to exactly 1000"):
        load_cache_arrays(copy)  # new bytes: read and checked again


def test_a_file_the_kept_ones_make_room_for_is_decoded_after_they_go(tmp_path, monkeypatch):
    """The files kept decoded (cache._LOADED) give way to a new one before it is decoded, so a build
    worker, which reads one lab's file after another, never holds two decoded at once; within the
    budget they stay, and the newest is kept whatever its size."""
    from generator.kinds.attention import cache as cachefile

    paths = []
    for i, shapes in enumerate([[(6, 12, 9)], [(6, 12, 10)], [(1, 1, 2)]]):
        paths.append(tmp_path / f"heads-{i}.json")
        save_cache(paths[-1], _random_cache(np.random.default_rng(i), shapes))
    big, small = paths[0].stat().st_size, paths[2].stat().st_size
    monkeypatch.setattr(cachefile, "_LOADED", [])
    monkeypatch.setattr(cachefile, "_LOADED_BYTES", paths[1].stat().st_size + small)  # one large file and the small one fit
    held = []
    parse = cachefile._parse
    monkeypatch.setattr(cachefile, "_parse", lambda *a, **k: held.append(len(cachefile._LOADED)) or parse(*a, **k))
    for path in paths:
        load_cache_arrays(path)
    assert held == [0, 0, 1]  # the second large file displaced the first before it was read
    assert [len(seen) for seen, *_ in cachefile._LOADED] == [paths[1].stat().st_size, small]
    monkeypatch.setattr(cachefile, "_LOADED_BYTES", 1)
    load_cache_arrays(paths[0])
    assert [len(seen) for seen, *_ in cachefile._LOADED] == [big]


def test_cache_arrays_from_any_layout_and_the_same_errors_as_json(tiny_model, tiny_dir, tmp_path):
    sha = checkpoint_sha256(tiny_dir)
    cache, _ = refresh_cache(empty_cache(), tiny_model, sha, ["the cat", SENTENCE])
    path = tmp_path / "heads.json"
    path.write_text(json.dumps(cache, indent=2), encoding="utf-8")  # reformatted by hand: read by json
    arrays = load_cache_arrays(path)
    assert {s: e["attention"].tolist() for s, e in arrays["entries"][sha].items()} == \
        {s: e["attention"] for s, e in cache["entries"][sha].items()}
    save_cache(path, cache)
    text = path.read_text(encoding="utf-8")
    first = cache["entries"][sha]["the cat"]["attention"][0][0][0]
    row = "[" + ",".join(map(str, first)) + "]"
    assert row in text
    for damaged in (text.replace(row, "[0" + row[1:], 1),  # a leading zero: not JSON
                    text.replace(row, row[:-1] + ",1]", 1),  # a row one longer
                    text.replace(row, row.replace(",", ", ", 1), 1),  # a space: still JSON, same entry
                    text.replace("},\n", "}\n", 1)):  # a missing comma between entries
        path.write_text(damaged, encoding="utf-8")
        try:
            expected = load_cache(path)
        except ContentError as exc:
            with pytest.raises(ContentError) as got:
                load_cache_arrays(path)
            assert [str(d) for d in got.value.diagnostics] == [str(d) for d in exc.diagnostics]
        else:
            got = load_cache_arrays(path)
            assert {s: e["attention"].tolist() for s, e in got["entries"][sha].items()} == \
                {s: e["attention"] for s, e in expected["entries"][sha].items()}


def _random_cache(rng: np.random.Generator, shapes: list[tuple[int, int, int]], sha: str = "a" * 64) -> dict:
    """A cache of made-up sentences, one per (layers, heads, words), rows per mille as a model's are."""
    entries = {}
    for i, (layers, heads, n) in enumerate(shapes):
        rows = rng.dirichlet(np.full(n, 0.3), size=(layers, heads, n))
        words = ["[CLS]"] + [f"w{i}x{j}" for j in range(n - 2)] + ["[SEP]"]
        entries[" ".join(words[1:-1]) or f"s{i}"] = {
            "attention": largest_remainder(rows, PER_MILLE), "pieces": list(words),
            "piece_words": list(range(n)), "special": [True] + [False] * (n - 2) + [True], "words": words}
    return {"entries": {sha: entries}, "format": "attention-labs/real-heads-cache", "version": 1}


def _read_as(load, path: Path):
    """What ``load`` makes of a cache file, comparable across loaders: its diagnostics, or its data
    with the attention as nested lists."""
    try:
        cache = load(path)
    except ContentError as exc:
        return [str(d) for d in exc.diagnostics]
    for by_sentence in cache["entries"].values():
        for entry in by_sentence.values():
            array = entry["attention"]
            if isinstance(array, np.ndarray):
                assert array.dtype == np.int16 and not array.flags.writeable
                if getattr(array, "json", None) is not None:  # the text it carries is what json writes
                    assert array.json == json.dumps(array.tolist(), separators=(",", ":"))
    return {**cache, "entries": {sha: {sentence: {**entry, "attention": np.asarray(entry["attention"]).tolist()}
                                       for sentence, entry in by_sentence.items()}
                                 for sha, by_sentence in cache["entries"].items()}}


def _same_as_json(path: Path) -> None:
    """load_cache_arrays (NumPy on save_cache's layout) gives what load_cache (json) gives: the same
    numbers and text, or the same diagnostics."""
    assert _read_as(load_cache_arrays, path) == _read_as(load_cache, path)


@pytest.mark.parametrize("shapes", [[(1, 1, 2)], [(2, 3, 4), (2, 3, 7)], [(6, 12, 8), (6, 12, 15), (6, 12, 2)],
                                    [(3, 1, 9), (3, 1, 3)]], ids=["smallest", "two", "minilm", "one-head"])
def test_cache_arrays_read_with_numpy_are_what_json_reads(tmp_path, shapes):
    path = tmp_path / "heads.json"
    save_cache(path, _random_cache(np.random.default_rng(len(shapes)), shapes))
    _same_as_json(path)
    got = load_cache_arrays(path)
    assert all(e["attention"].json is not None for e in got["entries"]["a" * 64].values()), "read by the fast path"


@pytest.mark.parametrize("batch", [1, 3000, 1 << 30], ids=["one-text-a-batch", "a-few", "all-at-once"])
def test_per_mille_texts_read_in_batches_give_the_same_arrays_and_the_same_refusals(monkeypatch, batch):
    """A lab's file is read a batch of texts at a time (permille.BATCH_BYTES): any batching gives
    the same arrays, and a text that is not such an array refuses the whole read, in any batch."""
    from generator.kinds.attention import permille

    cache = _random_cache(np.random.default_rng(7), [(6, 12, 8), (2, 3, 4), (6, 12, 15), (3, 1, 9), (6, 12, 2)])
    entries = list(cache["entries"]["a" * 64].values())
    texts = [json.dumps(e["attention"], separators=(",", ":")) for e in entries]
    sizes = [len(e["words"]) for e in entries]
    monkeypatch.setattr(permille, "BATCH_BYTES", batch)
    got = permille.per_mille_arrays(texts, sizes)
    assert got is not None and [a.tolist() for a in got] == [e["attention"] for e in entries]
    for k in (0, len(texts) - 1):
        damaged = list(texts)
        damaged[k] = damaged[k].replace(",", ",0", 1)  # a leading zero: not JSON
        assert permille.per_mille_arrays(damaged, sizes) is None


def test_cache_arrays_with_brackets_in_words_are_what_json_reads(tmp_path):
    """A word holding what ends the numbers (]]]],") or looks like them: read all the same."""
    cache = _random_cache(np.random.default_rng(3), [(2, 2, 4), (2, 2, 5)])
    (by_sentence,) = cache["entries"].values()
    for entry, odd in zip(by_sentence.values(), [']]]],"', "[[1,2]]"]):
        entry["words"][1] = entry["pieces"][1] = odd
    path = tmp_path / "heads.json"
    save_cache(path, cache)
    _same_as_json(path)


def test_cache_arrays_from_damaged_numbers_are_what_json_reads(tmp_path):
    """Damage of every kind inside the numbers (digits, commas, brackets, signs, spaces, leading zeros,
    numbers of five digits, digits against brackets) is judged exactly as json judges it."""
    rng = np.random.default_rng(7)
    cache = _random_cache(rng, [(2, 2, 3), (1, 2, 4)])
    path = tmp_path / "heads.json"
    save_cache(path, cache)
    text = path.read_text(encoding="utf-8")
    start, end = text.index('{"attention":') + 13, text.rindex("]]]]") + 4
    pieces = ["0", "1", "9", "00", "01", "10000", "1000", ",", "[", "]", "],[", " ", "-", "-0", "1.5", "e", "é"]
    for _ in range(400):
        at = int(rng.integers(start, end))
        cut = int(rng.integers(0, 3))
        damaged = text[:at] + pieces[int(rng.integers(len(pieces)))] + text[at + cut:]
        path.write_text(damaged, encoding="utf-8")
        _same_as_json(path)
    for old, new in (("[", "["), (",", ",0,"), ("]", "0]"), ("[", "0["), ("]", "]0"), ("1", "01")):
        for i in range(start, end):
            if text[i] == old[0]:
                path.write_text(text[:i] + new + text[i + 1:], encoding="utf-8")
                _same_as_json(path)
                break


def test_missing_cache_file_is_an_empty_cache(tmp_path):
    assert load_cache(tmp_path / "nothing.json") == empty_cache()


def _saved_cache(tmp_path: Path, tiny_model, tiny_dir) -> Path:
    cache, _ = refresh_cache(empty_cache(), tiny_model, checkpoint_sha256(tiny_dir), ["the cat", "the mat"])
    path = tmp_path / "heads.json"
    save_cache(path, cache)
    return path


def _rewrite_entry(path: Path, sentence: str, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    for by_sentence in data["entries"].values():
        change(by_sentence[sentence])
    save_cache(path, data)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda e: e["attention"][0][0][0].__setitem__(0, e["attention"][0][0][0][0] + 1), "sum to exactly 1000"),
        (lambda e: e["attention"][0][0].pop(), "[layers][heads][4][4]"),
        (lambda e: e["attention"][0][0][1].__setitem__(0, 0.5), "integers"),
        (lambda e: e.pop("pieces"), "lacks pieces"),
        (lambda e: e.__setitem__("extra", 1), "unknown key(s) extra"),
        (lambda e: e["special"].pop(), "one per word"),
        (lambda e: e["piece_words"].reverse(), "in order"),
        (lambda e: e["words"].clear(), "at least 2 strings"),
    ],
    ids=["row-sum", "ragged", "float", "missing-key", "unknown-key", "special-length", "piece-order", "no-words"],
)
def test_bad_cache_entry_is_a_content_error_on_its_line(tmp_path, tiny_model, tiny_dir, change, message):
    path = _saved_cache(tmp_path, tiny_model, tiny_dir)
    _rewrite_entry(path, "the mat", change)
    line = next(i for i, text in enumerate(path.read_text().split("\n"), 1) if text.startswith('"the mat"'))
    with pytest.raises(ContentError) as info:
        load_cache(path)
    [diagnostic] = info.value.diagnostics
    assert diagnostic.path.endswith("heads.json") and diagnostic.line == line == 5  # the second sentence of two
    assert message in diagnostic.message and "'the mat'" in diagnostic.message


@pytest.mark.parametrize(
    "text, line, column, message",
    [
        ('{\n"entries": {\n"x": 1,\n}', 4, 1, "not valid JSON"),
        ("[]", 1, 1, "must be a JSON object"),
        ('{"entries": {}, "format": "attention-labs/real-heads-cache", "version": 2}', 1, 1, "'version' must be 1"),
        ('{"entries": [], "format": "attention-labs/real-heads-cache", "version": 1}', 1, 1, "'entries' must be an object"),
        ('{\n"entries": {\n"abc": {\n}\n},\n"format": "attention-labs/real-heads-cache",\n"version": 1\n}', 1, 1, "not a SHA-256"),
    ],
    ids=["bad-json", "not-object", "wrong-version", "entries-not-object", "bad-sha"],
)
def test_bad_cache_file_is_a_content_error_with_position(tmp_path, text, line, column, message):
    path = tmp_path / "heads.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContentError) as info:
        load_cache(path)
    first = info.value.diagnostics[0]
    assert (first.line, first.column) == (line, column)
    assert message in str(info.value)


# ---- inspector ------------------------------------------------------------------------------------------


def test_inspect_json_has_every_layer_and_head(tiny_dir):
    data = json.loads(inspect_attention(tiny_dir, SENTENCE, as_json=True))
    assert data["tokens"][0] == "[CLS]" and data["tokens"][-1] == "[SEP]"
    n = len(data["tokens"])
    attentions = np.array(data["attentions"])
    assert attentions.shape == (2, 3, n, n)
    assert np.allclose(attentions.sum(axis=-1), 1, atol=1e-5)
    assert list(data) == ["tokens", "attentions"]


def test_inspect_table_for_one_head_shows_every_token_and_sums_to_100(tiny_dir):
    text = inspect_attention(tiny_dir, "the cat sat", layer=1, head=2)
    lines = text.splitlines()
    assert lines[0].startswith("Layer 1, head 2")
    assert lines[2].split() == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    rows = lines[3:]
    assert [r.split()[1] for r in rows] == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    for row in rows:
        assert sum(int(v) for v in row.split()[2:] if v != ".") == 100


def test_inspect_overview_and_layer_views(tiny_dir):
    overview = inspect_attention(tiny_dir, "the cat sat")
    assert "layer 0" in overview and "layer 1" in overview and "head 2" in overview
    layer = inspect_attention(tiny_dir, "the cat sat", layer=0)
    assert layer.splitlines()[0].startswith("Layer 0")
    assert sum(line[:4].strip().isdigit() for line in layer.splitlines()) == 3  # one line per head


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"layer": 2}, "layer 2 does not exist: this model has layers 0-1"),
        ({"layer": -1}, "layer -1 does not exist"),
        ({"layer": 0, "head": 3}, "head 3 does not exist: this model has heads 0-2"),
        ({"head": 1}, "give --layer too"),
        ({"layer": 5, "as_json": True}, "layer 5 does not exist"),
    ],
    ids=["layer-too-big", "negative-layer", "head-too-big", "head-without-layer", "json-checks-too"],
)
def test_inspect_refuses_out_of_range_choices(tiny_dir, kwargs, message):
    with pytest.raises(BuildError, match=message):
        inspect_attention(tiny_dir, SENTENCE, **kwargs)


def test_inspect_bad_folder_names_the_file(tiny_dir, tmp_path):
    with pytest.raises(BuildError, match="model folder not found"):
        inspect_attention(tmp_path / "missing", SENTENCE)
    folder = tmp_path / "roberta"
    write_random_checkpoint(folder, TINY_VOCAB, TINY)
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "roberta"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(BuildError, match=r"config.json: error: model_type 'roberta' is not BERT"):
        inspect_attention(folder, SENTENCE)
    with pytest.raises(BuildError, match="empty"):
        inspect_attention(tiny_dir, "")


def test_inspect_real_minilm():
    folder = minilm_dir()
    data = json.loads(inspect_attention(Path(folder), "The keys to the cabinet are on the table.", as_json=True))
    assert data["tokens"] == ["[CLS]", "the", "keys", "to", "the", "cabinet", "are", "on", "the", "table", ".", "[SEP]"]
    assert np.array(data["attentions"]).shape == (6, 12, 12, 12)
    # A well-known property of this checkpoint: layer 0, head 2 attends to the previous token.
    assert "prev 100" in inspect_attention(Path(folder), "The keys to the cabinet are on the table.")


def test_entries_of_one_checkpoint_must_agree_on_layers_and_heads(tmp_path, tiny_model, tiny_dir):
    path = _saved_cache(tmp_path, tiny_model, tiny_dir)
    _rewrite_entry(path, "the mat", lambda e: e["attention"].pop())  # 1 layer instead of 2
    with pytest.raises(ContentError, match="1 layers x 3 heads, but 'the cat' has 2 x 3"):
        load_cache(path)
