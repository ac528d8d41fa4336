"""What position is for: the designed heads on a sentence whose words are shuffled.

Attention itself is blind to order. Permute the rows of its input and its output rows and weight
rows are permuted the same way — softmax(P·Q·(P·K)ᵀ/√d) = P·softmax(Q·Kᵀ/√d)·Pᵀ for a permutation
matrix P: it is *permutation-equivariant*. Everything a head knows about order comes from
position: in the designed model, the ``position``, ``position²`` and ``constant`` dimensions of the
embedding (the previous-word head is made of nothing else) and the additive biases of syntax,
coreference and alignment, which compare positions.

So a shuffle keeps each word's own part of its vector — its role and its ``subject`` flag (worked out
from the written order, as earlier layers of a real model would have) — and gives it the position
dimensions of the slot it lands in, as a Transformer adds the position embedding of the slot. Each
head then runs without its additive bias (the bias is position information too) on both orders:
what is left is softmax(q·kᵀ/√d_k). Heads whose q·k reads only roles and flags (syntax,
coreference, alignment) give the same weights, moved with the words; the previous-word head, whose
q·k reads only positions, looks at whatever word now stands before each word.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

from generator.kinds.attention import teaching
from generator.models.core import softmax_into, scaled_dot_product_attention

_POSITION_DIMS = [teaching.EMBEDDING_DIMS.index(d) for d in ("position", "position²", "constant")]
MAX_DRAWS = 1000  # permutations tried for one that moves every word and splits every neighbour pair


def shuffled_order(n: int, seed: int) -> np.ndarray:  # -> [n] int: original index of the word in each new slot
    """A seeded permutation of ``range(n)`` in which, if any such is found among :data:`MAX_DRAWS`
    draws, no word keeps its slot and no word keeps its left neighbour; else the draw that breaks
    the most of both (the first such). Deterministic for a given ``(n, seed)``.

    The draws are those of ``rng.permutation(n)`` called again and again, made :data:`_BATCH` at a
    time (``rng.permuted`` shuffles each row as ``permutation`` would, from the same stream) and
    judged together."""
    rng = np.random.default_rng(seed)
    best, best_kept = np.arange(n), 2 * n + 1
    drawn = 0
    while drawn < MAX_DRAWS:
        batch = min(_BATCH, MAX_DRAWS - drawn)
        orders = rng.permuted(np.tile(np.arange(n), (batch, 1)), axis=1)  # [batch, n]
        kept = (orders == np.arange(n)).sum(axis=1) + (orders[:, 1:] == orders[:, :-1] + 1).sum(axis=1)
        first = int(np.argmin(kept))  # the first of the fewest
        if kept[first] < best_kept:
            best, best_kept = orders[first].copy(), int(kept[first])
        if best_kept == 0:
            break
        drawn += batch
    return best


_BATCH = 32  # draws judged at once: most sentences find one among their first dozen


def seed_for(sentence_id: str) -> int:
    """The seed of a sentence's shuffle: CRC-32 of its id, so each sentence has its own, fixed one."""
    return zlib.crc32(sentence_id.encode("utf-8"))


def content_weights(x: np.ndarray, head: teaching.Head) -> np.ndarray:  # [n, d_model] -> [n, n]
    """softmax(q·kᵀ/√d_k) of one designed head with no bias and no mask: the part of the head that
    the shuffle carries along (see the module docstring)."""
    q, k, v = x @ head.w_q, x @ head.w_k, x @ head.w_v
    return scaled_dot_product_attention(q, k, v)[1]


def shuffle(words: Sequence[teaching.Word], order: np.ndarray, heads: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    # -> {head_id: ([n, n] in the written order, [n, n] in the shuffled order)}
    """Each head's bias-free weights on the written sentence and on its words in ``order`` (row a of
    the second matrix is the word ``words[order[a]]``, now in slot a): :func:`content_weights` of
    both orders, with one softmax for all of them (the same numbers to the bit)."""
    x = teaching.embed(words)  # [n, d_model]
    moved = x[order].copy()
    moved[:, _POSITION_DIMS] = x[:, _POSITION_DIMS]  # each slot keeps its own position dimensions
    logits = np.empty((2 * len(heads), len(words), len(words)))
    for i, head_id in enumerate(heads):
        h = teaching.head(head_id)
        for j, y in enumerate((x, moved)):
            q, k = y @ h.w_q, y @ h.w_k
            np.matmul(q * (1.0 / np.sqrt(h.d_k)), k.T, out=logits[2 * i + j])  # as scaled_dot_product_attention
    weights = softmax_into(logits, logits, axis=-1)
    return {head_id: (weights[2 * i], weights[2 * i + 1]) for i, head_id in enumerate(heads)}
