"""Real model heads: word-level attention of a pretrained BERT and a head finder (pure NumPy).

Pipeline: a sentence is tokenised and run through :mod:`generator.models.bert`; the
piece-level attention [L, H, n, n] is merged into words (:func:`merge_pieces`); the lab
shows it, and :func:`find_heads` scores every head against gold relations.

Words
    ``[CLS]``, the sentence's words as BERT splits them (whitespace, then every punctuation
    character on its own: "didn't" is ``didn ' t``), ``[SEP]``. A word *receives* the SUM of
    what its pieces receive (columns add) and *sends* the MEAN of its pieces' rows, so every
    row still sums to 1.

The cache file that keeps these results for builds is :mod:`generator.kinds.attention.cache`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from generator.models.bert import BertModel, run_sentence
from generator.models.wordpiece import Encoding
from generator.kinds import BuildError

PER_MILLE = 1000
BASELINE_OFFSETS = (-1, 1, -2, 2, -3, 3)  # in order of preference when two score the same


# ---- rounding -----------------------------------------------------------------------------------


def largest_remainder(row_floats, total: int) -> list:  # [..., n] floats -> [..., n] ints (nested lists)
    """:func:`largest_remainder_array` as nested Python lists (``list[int]`` for one row), for JSON."""
    return largest_remainder_array(row_floats, total).tolist()


def largest_remainder_array(row_floats, total: int) -> np.ndarray:  # [..., n] floats -> [..., n] int64
    """Integers proportional to each row that sum to exactly ``total`` (Hamilton's method).

    Each row is scaled to ``total``, floored, and the units still missing go to the entries
    with the largest remainders (ties: the lower index first; zero entries never get one).
    Rows need not be normalised. Vectorised over leading axes. A row summing to 0 stays all
    zeros. Raises ValueError for negative or non-finite input. The project's one rounding of
    shares: the spotlight's percentages and the real heads' per-mille cache use it.
    """
    x = np.asarray(row_floats, dtype=np.float64)
    if x.ndim == 0:
        raise ValueError("largest_remainder needs at least one row of numbers")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("largest_remainder needs finite, non-negative numbers")
    if type(total) is not int or total < 0:
        raise ValueError(f"total must be a non-negative integer, not {total!r}")
    n = x.shape[-1]
    sums = x.sum(axis=-1, keepdims=True)  # [..., 1]
    quota = np.divide(x * total, sums, out=np.zeros_like(x), where=sums > 0)  # [..., n]
    base = np.floor(quota)
    short = np.where(sums[..., 0] > 0, total - base.sum(axis=-1), 0)  # [...] units still to hand out
    short = np.clip(np.rint(short), 0, n)
    remainder = np.where(x > 0, quota - base, -1.0)  # an entry of 0 (masked) never gets a unit
    order = np.argsort(-remainder, axis=-1, kind="stable")  # largest remainder first
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n), order.shape), axis=-1)
    return (base + (rank < short[..., None])).astype(np.int64)


# ---- words ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WordAttention:
    """A sentence's attention merged to words, ``[CLS]`` and ``[SEP]`` included."""

    words: tuple[str, ...]  # n words as written; "[CLS]" first, "[SEP]" last
    special: tuple[bool, ...]  # n flags: True for [CLS]/[SEP]
    pieces: tuple[str, ...]  # p word pieces
    piece_words: tuple[int, ...]  # p indexes into ``words``
    attention: np.ndarray  # [L, H, n, n]; rows sum to 1


def piece_word_index(encoding: Encoding, unk_token: str | None = None) -> tuple[list[str], list[bool], list[int]]:
    """Words (as written), special flags and, per piece, its word index, for an encoding. A word
    whose one piece is ``unk_token`` (an emoji, say) is that token: it is all the model read."""
    read = [unk_token if unk_token is not None and [t for t, w in zip(encoding.tokens, encoding.word_ids) if w == i] == [unk_token]
            else word for i, word in enumerate(encoding.source_words)]
    words = [encoding.tokens[0], *read, encoding.tokens[-1]]
    special = [True] + [False] * len(encoding.source_words) + [True]
    last = len(words) - 1
    piece_words = [0 if i == 0 else last if w is None else w + 1 for i, w in enumerate(encoding.word_ids)]
    return words, special, piece_words


def merge_pieces(attention: np.ndarray, piece_words: Sequence[int]) -> np.ndarray:
    # [..., p, p] piece attention, p word indexes -> [..., n, n] word attention
    """Sum columns and average rows over each word's pieces; rows that summed to 1 still do."""
    owner = np.asarray(piece_words)  # [p]
    n = int(owner.max()) + 1
    membership = np.zeros((len(owner), n), dtype=attention.dtype)  # [p, n] one-hot
    membership[np.arange(len(owner)), owner] = 1
    counts = membership.sum(axis=0)  # [n]
    assert np.all(counts > 0), "every word needs at least one piece"
    mean_rows = (membership / counts).T  # [n, p]
    return mean_rows @ attention @ membership


def word_attention(model: BertModel, sentence: str) -> WordAttention:
    """Run ``sentence`` through ``model`` and merge its attention to words.

    Raises :class:`BuildError` for an empty sentence or one longer than the model reads.
    """
    if not sentence.strip():
        raise BuildError("the sentence is empty")
    encoding, output = run_sentence(model, sentence)
    words, special, piece_words = piece_word_index(encoding, model.tokenizer.unk_token)
    return WordAttention(
        words=tuple(words),
        special=tuple(special),
        pieces=encoding.tokens,
        piece_words=tuple(piece_words),
        attention=merge_pieces(output.attentions, piece_words),
    )


# ---- head finder ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadScore:
    layer: int  # from 0
    head: int  # from 0
    accuracy: float  # hits / total
    hits: int
    total: int


@dataclass(frozen=True)
class RelationReport:
    """How well heads find one relation type, next to the best fixed-offset guess."""

    relation: str
    total: int  # how many gold relations of this type
    best_heads: tuple[HeadScore, ...]  # best first; ties by (layer, head)
    baseline_offset: int  # the k in ±1..±3 that scores best: -1 = the real word just before
    baseline_accuracy: float
    beats_baseline: bool  # the best head's accuracy is strictly higher than the baseline's


def offset_baseline_hits(queries, keys, special) -> np.ndarray:  # [R], [R], [n] -> [len(BASELINE_OFFSETS)]
    """How many of the relations ``queries[r] -> keys[r]`` each fixed-offset guess gets right: the
    guess for a query is the real (non-special) word k places away among real words, for each k
    in :data:`BASELINE_OFFSETS`; a query with no word at that offset is a miss."""
    special = np.asarray(special, dtype=bool)
    queries, keys = np.asarray(queries, dtype=np.int64), np.asarray(keys, dtype=np.int64)
    real = np.flatnonzero(~special)  # positions of real words, in order
    rank = np.full(special.shape[0], -1)
    rank[real] = np.arange(len(real))
    offsets = np.asarray(BASELINE_OFFSETS)[:, None]  # [O, 1]
    target = rank[queries][None, :] + offsets  # [O, R]
    valid = (target >= 0) & (target < len(real))
    guess = np.where(valid, real[np.clip(target, 0, max(len(real) - 1, 0))] if len(real) else -1, -1)
    return (guess == keys[None, :]).sum(axis=-1)


def find_heads(
    attention: np.ndarray,  # [L, H, n, n] word-level (floats, or per-mille integers from the cache)
    relations: Sequence[tuple[int, int, str]],  # (query_word_index, key_word_index, relation_type)
    special: Sequence[bool],  # n flags; True words are never predicted (nor may appear in relations)
    top: int = 3,
) -> dict[str, RelationReport]:
    """Score every head on every relation type; returns reports sorted by relation name.

    A head's prediction for a query word is the word it attends to most, *excluding special
    words* ([CLS]/[SEP] soak up much of BERT's attention as a no-op) *and the query itself*
    (a relation always links two different words, and a head's self-attention says nothing
    about which other word it picks). Ties go to the lower word index. A head's score for a
    type is the share of that type's relations whose prediction is the declared key word.

    The baseline always predicts the real (non-special) word ``k`` places away among real
    words, for the best ``k`` in ±1..±3 (ties: nearer first, left before right); a word with
    no word at that offset counts as a miss.

    Indexes are into the word axis of ``attention`` ([CLS] is usually 0). Raises ValueError
    for an index out of range, a special word or a self-relation in ``relations``.
    """
    attention = np.asarray(attention)
    assert attention.ndim == 4 and attention.shape[-1] == attention.shape[-2], "attention must be [L, H, n, n]"
    _, n_heads, n, _ = attention.shape
    special_mask = np.asarray(special, dtype=bool)
    assert special_mask.shape == (n,), f"special must have one flag per word ({n})"
    for q, k, kind in relations:
        for role, index in (("query", q), ("key", k)):
            if not 0 <= index < n:
                raise ValueError(f"{kind}: {role} word index {index} is outside 0..{n - 1}")
            if special_mask[index]:
                raise ValueError(f"{kind}: {role} word index {index} is a special token")
        if q == k:
            raise ValueError(f"{kind}: a word cannot be related to itself (index {q})")

    queries = np.array([r[0] for r in relations], dtype=np.int64)  # [R]
    keys = np.array([r[1] for r in relations], dtype=np.int64)  # [R]
    blocked = special_mask[None, :] | (np.arange(n)[None, :] == queries[:, None])  # [R, n]
    rows = attention[:, :, queries, :].astype(np.float64)  # [L, H, R, n]
    predicted = np.where(blocked, -np.inf, rows).argmax(axis=-1)  # [L, H, R]
    hits = predicted == keys  # [L, H, R]

    reports: dict[str, RelationReport] = {}
    kinds = np.array([r[2] for r in relations], dtype=object)
    for kind in sorted(set(kinds)):
        chosen = kinds == kind
        total = int(chosen.sum())
        head_hits = hits[:, :, chosen].sum(axis=-1)  # [L, H]
        flat = head_hits.ravel()
        order = np.lexsort((np.arange(flat.size), -flat))  # most hits first, then (layer, head)
        best = tuple(
            HeadScore(int(i // n_heads), int(i % n_heads), float(flat[i] / total), int(flat[i]), total)
            for i in order[: max(top, 1)]
        )
        baseline_hits = offset_baseline_hits(queries[chosen], keys[chosen], special_mask)
        b = int(np.argmax(baseline_hits))  # first maximum = the preferred offset
        baseline_accuracy = int(baseline_hits[b]) / total
        reports[kind] = RelationReport(
            relation=kind,
            total=total,
            best_heads=best,
            baseline_offset=BASELINE_OFFSETS[b],
            baseline_accuracy=baseline_accuracy,
            beats_baseline=best[0].accuracy > baseline_accuracy,
        )
    return reports


# ---- held-out head finder ---------------------------------------------------------------------------
# find_heads above scores heads on every pair it is given. The lab's finder (generator/kinds/attention/
# realmodel.py) instead picks a head on one half of the sentences and scores it on the other, against
# two baselines; these are its pure parts.


def pair_outcomes(attention: np.ndarray, queries, keys, special) -> tuple[np.ndarray, np.ndarray]:
    # [L, H, n, n], [R], [R], [n] -> hits [L, H, R] bool, weights [L, H, R] float
    """For each pair ``queries[r] -> keys[r]`` of one sentence and each head: whether the key is the
    word the head's query row weights most among non-special words other than the query itself
    (ties: the lower index), and the weight the key gets (a share of the whole row, [CLS] and
    [SEP] included). Per-mille integers are read as thousandths."""
    queries, keys = np.asarray(queries, dtype=np.int64), np.asarray(keys, dtype=np.int64)
    attention = np.asarray(attention)
    rows = attention[:, :, queries, :].astype(np.float64)  # [L, H, R, n]: only the rows asked for
    if np.issubdtype(attention.dtype, np.integer):
        rows = rows / PER_MILLE
    n = attention.shape[-1]
    blocked = np.asarray(special, dtype=bool)[None, :] | (np.arange(n)[None, :] == queries[:, None])  # [R, n]
    hits = np.where(blocked, -np.inf, rows).argmax(axis=-1) == keys  # [L, H, R]
    weights = np.take_along_axis(rows, keys[None, None, :, None], axis=-1)[..., 0]  # [L, H, R]
    return hits, weights


def pair_outcomes_of(groups) -> tuple[np.ndarray, np.ndarray]:
    # [(attention [L, H, n, n] per-mille ints, queries [R], keys [R], special [n]), ...] -> hits, weights [L, H, ΣR]
    """:func:`pair_outcomes` of several sentences of one model at once, their pairs one after the
    other (the same hits and the same weights, bit for bit). The rows asked for are laid out pair
    by pair and word by word ([P, w, L, H], padded to the longest sentence with words no head may
    pick), so that "is the key the first largest weight" is a few operations across all of them."""
    assert all(np.issubdtype(a.dtype, np.integer) for a, *_ in groups), "per-mille integers, as the cache holds"
    width, total = max(a.shape[-1] for a, *_ in groups), sum(len(q) for _, q, _, _ in groups)
    rows = np.full((total, width) + groups[0][0].shape[:2], -1, dtype=np.int16)  # [P, w, L, H]; -1: blocked
    blocked = np.zeros((total, width), dtype=bool)  # [CLS], [SEP] and the query itself never count
    keys: list[int] = []
    at = 0
    for attention, queries, pair_keys, special in groups:
        n, count = attention.shape[-1], len(queries)
        rows[at:at + count, :n] = attention.take(queries, axis=2).transpose(2, 3, 0, 1)
        blocked[at:at + count, :n] = special
        blocked[range(at, at + count), queries] = True
        keys += pair_keys
        at += count
    pairs, key_at = range(total), np.array(keys)
    weights = rows[pairs, key_at] / PER_MILLE  # [P, L, H] a share of the whole row
    rows[blocked] = -1
    key_now = rows[pairs, key_at]  # [P, L, H] -1 where the key itself is blocked
    largest = rows.max(axis=1)
    rows[np.arange(width) >= key_at[:, None]] = -2  # what is left: the words before the key
    hits = (key_now == largest) & (rows.max(axis=1) < key_now)  # the key is largest, and nothing before it as large
    return hits.transpose(1, 2, 0), weights.transpose(1, 2, 0)


def offset_guesses(queries, special) -> np.ndarray:  # [R], [n] -> [len(BASELINE_OFFSETS), R] word index or -1
    """The word each fixed-offset rule picks for each query: the real word k places away among real
    words, for each k in :data:`BASELINE_OFFSETS`; -1 where there is none."""
    return np.array(offset_guess_lists(queries, special), dtype=np.int64).reshape(len(BASELINE_OFFSETS), len(queries))


def offset_guess_lists(queries, special) -> list[list[int]]:  # [R], [n] -> [len(BASELINE_OFFSETS)][R]
    """:func:`offset_guesses` as lists (a sentence has a handful of pairs: plain Python is quicker)."""
    real = [i for i, flag in enumerate(special) if not flag]  # positions of real words, in order
    rank = {at: i for i, at in enumerate(real)}
    ranks, size = [rank.get(int(q), -1) for q in queries], len(real)
    return [[real[r + k] if 0 <= r + k < size else -1 for r in ranks] for k in BASELINE_OFFSETS]


def nearest_tag_guesses(queries, tags, wanted) -> np.ndarray:  # [R], [n] tags (None: untagged) -> [R] index or -1
    """The word the rule "attend to the nearest word whose tag is in ``wanted``" picks for each query
    (either side, never the query itself; at equal distance the earlier word); -1 if there is none."""
    return np.array([nearest_tag_guess(int(q), tags, wanted) for q in queries], dtype=np.int64)


def nearest_tag_guess(query: int, tags, wanted) -> int:
    """:func:`nearest_tag_guesses` for one query: looking outwards from it, the left word first."""
    n = len(tags)
    for distance in range(1, max(query + 1, n - query)):
        for j in (query - distance, query + distance):
            if 0 <= j < n and tags[j] in wanted:
                return j
    return -1


def sign_test_p(wins: int, losses: int) -> float:
    """One-sided exact sign test: the chance of at least ``wins`` wins out of ``wins + losses``
    discordant pairs if winning and losing were equally likely (1.0 when there are none)."""
    from math import comb

    n = wins + losses
    if n == 0:
        return 1.0
    return sum(comb(n, i) for i in range(wins, n + 1)) / 2**n
