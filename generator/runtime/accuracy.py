"""How far a bundle's 8-bit weights move the model from the full checkpoint: measured once, when the
bundle is exported, and written into its ``bundle.json`` (``"accuracy"``), so that a page states a
figure that holds for sentences nobody wrote in advance.

The test set is generated, not chosen: :func:`generated_sentences` with :data:`SEED` gives
:data:`COUNT` sentences of :data:`MIN_WORDS`-:data:`MAX_WORDS` words (common and rare words,
numbers, punctuation, accents, made-up compounds). Both models run in float64 through
:mod:`generator.models.bert` — the full model on the checkpoint's float32 weights, the 8-bit one on
exactly the numbers the page multiplies by — so the figures measure the weights' rounding alone,
and another machine's BLAS gives the same digits. :func:`measure` returns what bundle.json keeps
(all-MiniLM-L6-v2's committed bundle)::

    "accuracy": {
      "sentences": {"generator": "generator.runtime.accuracy.generated_sentences",
                    "seed": 2201, "count": 300, "words": [3, 60]},
      "attention": {"worst": 4.71, "p99": 3.57, "median": 2.34,  # points: per sentence, the largest
                    "same_top_key": 0.9937, "rows": 951264},      # change of any weight of any head
      "embedding": {"worst": 0.007, "median": 0.0009, "pairs": 89700}}  # cosine: 8-bit query, full item

``attention``: for each sentence, the largest difference between the two models in any attention
weight of any head (in points: weights x 100); ``worst``, ``p99`` and ``median`` are taken over the
sentences. ``same_top_key``: the share of attention rows (one query in one head) whose largest
weight is on the same key in both. ``embedding``: the change in the cosine between a sentence
embedded by the 8-bit model (a learner's query) and another embedded by the full model (a lab's
stored item), over every ordered pair of different sentences, as live search compares them
(mean of the last layer, L2-normalised: sentence-transformers' pooling).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from generator.models.bert import BertModel, bert_forward
from generator.models.wordpiece import encode

GENERATOR = "generator.runtime.accuracy.generated_sentences"
SEED = 2201
COUNT = 300
MIN_WORDS, MAX_WORDS = 3, 60
BATCH = 16  # sentences per forward pass: similar lengths padded together, a few tens of MB in float64
FIRST_WHOLE_WORD = 1996  # BERT's vocabulary lists whole words roughly by frequency from this id on

PUNCTUATION = [".", ",", "!", "?", ";", ":", "(", ")", "\"", "'", "-", "—", "…", "%", "&", "/"]
ACCENTED = ["café", "naïve", "Zürich", "façade", "señor", "résumé", "Ångström", "Dvořák", "São", "crème"]


def generated_sentences(vocab: Mapping[str, int], count: int = COUNT, seed: int = SEED,
                        min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> list[str]:
    """``count`` sentences of ``min_words``..``max_words`` words, reproducible from ``seed``.

    Words are drawn from the vocabulary's whole words with a Zipf law over their ids (from
    :data:`FIRST_WHOLE_WORD` on, or all of them in a vocabulary that small), plus words drawn
    uniformly (rare ones), punctuation, numbers, accented words, made-up compounds that break
    into several pieces, and capitals.
    """
    rng = random.Random(seed)
    whole = [(i, w) for w, i in vocab.items() if w.isascii() and w.isalpha()]
    words = [w for i, w in sorted(whole) if i >= FIRST_WHOLE_WORD] or [w for _, w in sorted(whole)]
    assert words, "the vocabulary has no whole words to make sentences of"
    ranks = list(itertools.accumulate(1 / (r + 20) for r in range(len(words))))

    def word() -> str:
        pick = rng.random()
        if pick < 0.70:
            w = rng.choices(words, cum_weights=ranks)[0]
        elif pick < 0.80:
            w = rng.choice(words)
        elif pick < 0.87:
            w = rng.choice(PUNCTUATION)
        elif pick < 0.93:
            w = rng.choice([str(rng.randrange(100)), str(rng.randrange(10**6)), f"{rng.uniform(0, 100):.2f}", f"{rng.randrange(1, 20)}0s"])
        elif pick < 0.96:
            w = rng.choice(ACCENTED)
        else:
            w = rng.choice(words) + rng.choice(words)
        if rng.random() < 0.1:
            w = w.capitalize()
        if rng.random() < 0.1:
            w += rng.choice(".,!?;:")
        return w

    return [" ".join(word() for _ in range(rng.randint(min_words, max_words))) for _ in range(count)]


def token_ids(model: BertModel, texts: Sequence[str]) -> list[list[int]]:
    """Each text's ids, ``[CLS]`` … ``[SEP]``; one longer than the model reads keeps its first
    pieces and its ``[SEP]`` (only a small test model is that short)."""
    most = model.config.max_position_embeddings
    ids = [list(encode(text, model.tokenizer).ids) for text in texts]
    return [i if len(i) <= most else i[:most - 1] + i[-1:] for i in ids]


def _padded(batch: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:  # -> [B, n] ids, [B, n] mask
    n = max(len(ids) for ids in batch)
    padded = np.zeros((len(batch), n), dtype=np.int64)
    mask = np.zeros((len(batch), n), dtype=bool)
    for i, ids in enumerate(batch):
        padded[i, :len(ids)] = ids
        mask[i, :len(ids)] = True
    return padded, mask


def compare(small: BertModel, full: BertModel, ids: list[list[int]]) -> tuple[np.ndarray, int, int, np.ndarray, np.ndarray]:
    """Both models over ``ids``, a batch of similar lengths at a time (padding changes no real row:
    padded keys get weight 0). Returns, in the order of ``ids``: each sentence's largest change of
    any attention weight [S] (fractions), the rows whose top key is the same, the rows, and the
    mean-pooled, normalised last layer of each model [S, d] (small's, full's)."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    worst = np.zeros(len(ids))
    same = rows = 0
    d = full.config.hidden_size
    small_vec, full_vec = np.zeros((len(ids), d)), np.zeros((len(ids), d))
    for start in range(0, len(order), BATCH):
        chosen = order[start:start + BATCH]
        padded, mask = _padded([ids[i] for i in chosen])
        a = bert_forward(small.weights, small.config, padded, attention_mask=mask)
        b = bert_forward(full.weights, full.config, padded, attention_mask=mask)
        for k, i in enumerate(chosen):
            n = len(ids[i])
            mine, theirs = a.attentions[k, :, :, :n, :n], b.attentions[k, :, :, :n, :n]  # [L, H, n, n]
            worst[i] = float(np.abs(mine - theirs).max())
            same += int((mine.argmax(-1) == theirs.argmax(-1)).sum())
            rows += mine.shape[0] * mine.shape[1] * n
            for out, vectors in ((a, small_vec), (b, full_vec)):
                mean = out.last_hidden_state[k, :n].astype(np.float64).mean(axis=0)  # [d]
                vectors[i] = mean / np.linalg.norm(mean)
    return worst, same, rows, small_vec, full_vec


def measure(small: BertModel, full: BertModel, count: int = COUNT, seed: int = SEED) -> dict[str, Any]:
    """The ``"accuracy"`` entry of bundle.json (module docstring): ``small`` (the bundle's model)
    against ``full`` (the checkpoint's) on the generated sentences; both should be float64."""
    from threadpoolctl import threadpool_limits

    texts = generated_sentences(full.tokenizer.vocab, count, seed)
    with threadpool_limits(1):  # small matrices: a second BLAS thread spins more than it computes
        worst, same, rows, query, item = compare(small, full, token_ids(full, texts))
    points = worst * 100
    change = np.abs(query @ item.T - item @ item.T)  # [S, S] cosine of 8-bit i and full j, minus full's
    pairs = change[~np.eye(len(texts), dtype=bool)]  # [S·(S-1)] every ordered pair of different sentences
    return {
        "sentences": {"generator": GENERATOR, "seed": seed, "count": count, "words": [MIN_WORDS, MAX_WORDS]},
        "attention": {"worst": _round(points.max(), 2), "p99": _round(np.percentile(points, 99), 2),
                      "median": _round(np.median(points), 2), "same_top_key": _round(same / rows, 4), "rows": rows},
        "embedding": {"worst": _round(pairs.max(), 4), "median": _round(np.median(pairs), 4), "pairs": int(pairs.size)},
    }


def _round(x: float, digits: int) -> float:
    return round(float(x), digits)


FIELDS = {"attention": ("worst", "p99", "median", "same_top_key", "rows"), "embedding": ("worst", "median", "pairs")}


def accuracy_problem(meta: Mapping) -> str | None:
    """What is wrong with bundle.json's ``"accuracy"`` (a page prints its numbers), or None. A
    bundle without one is allowed: nothing was measured, and a page says so."""
    if "accuracy" not in meta:
        return None
    acc = meta["accuracy"]
    if not isinstance(acc, dict) or sorted(acc) != ["attention", "embedding", "sentences"]:
        return "'accuracy' must be an object of 'sentences', 'attention' and 'embedding'"
    sentences = acc["sentences"]
    words = sentences.get("words") if isinstance(sentences, dict) else None
    if not (isinstance(sentences, dict) and sorted(sentences) == ["count", "generator", "seed", "words"]
            and isinstance(sentences["generator"], str) and type(sentences["seed"]) is int
            and type(sentences["count"]) is int and sentences["count"] > 0 and isinstance(words, list)
            and len(words) == 2 and all(type(w) is int for w in words) and 0 < words[0] <= words[1]):
        return "'accuracy' 'sentences' must name the generator, its seed, the count and the words [fewest, most]"
    for part, keys in FIELDS.items():
        values = acc[part]
        if not isinstance(values, dict) or sorted(values) != sorted(keys):
            return f"'accuracy' {part!r} must hold exactly {', '.join(keys)}"
        for key in keys:
            value, whole = values[key], key in ("rows", "pairs")
            top = {"same_top_key": 1, "rows": None, "pairs": None}.get(key, 100 if part == "attention" else 2)
            if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)) \
                    or not 0 <= value <= (top if top is not None else value) or (whole and value == 0):
                return f"'accuracy' {part} {key!r} must be {'a whole number above 0' if whole else f'a number from 0 to {top}'}, not {value!r}"
    return None
