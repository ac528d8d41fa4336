"""What the next-token lab shows of a text, computed by the NumPy decoder (:mod:`generator.models.llama`).

Every text is read after ``<|endoftext|>``, the token that stands between documents, so that its
first token has something to be predicted from. For a text of n tokens the model makes n + 1
predictions: position k (0 … n) is the distribution over the token after the first k text tokens.
Position k < n is scored against the text's token k + 1; position n is the guess for what follows.

:func:`read_text` is the one place the model runs for an authored text; it returns a JSON-ready
record, which is what is stored (everything the page and the claims use of a text):

``ids``        [n + 1] token ids, ``<|endoftext|>`` first
``text``       {id: the token's text} for every id the record names (the page has no tokenizer
               until the learner loads the model); bytes that are not whole UTF-8 as ``<0xNN>``
``p``          [n] the probability the model gave each text token before seeing it
``top``        [n + 1][TOP] [id, probability] of the most likely tokens at each position
``lens``       [n + 1][L + 1] [top id, its probability, the target's probability] for each layer's
               reading (:func:`generator.models.llama.logit_lens`): row 0 the embeddings, row l the
               residual stream after layer l, row L the model's own output; the target is the text's
               next token, or at position n the model's own top guess

and :func:`decode_greedy` the generation the KV-cache part steps through. The rest are pure
functions of such records (cross-entropy, perplexity, when the lens settles) and of a config (the
cache's size), so the build checks claims without the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from generator.models import bpe, llama

TOP = 5  # alternatives listed at each position
DOC_START = "<|endoftext|>"  # what every text is read after


def _number(x: float) -> float:
    """A probability kept to 6 significant digits: what the page needs, and far inside 1e-4."""
    return float(f"{x:.6g}")


def token_text(tokenizer: bpe.BPETokenizer, token_id: int) -> str:
    """The text a token stands for: its bytes as UTF-8, or :func:`bpe.visible` where they are not
    whole characters (a token can hold part of one)."""
    data = bpe.token_bytes(token_id, tokenizer)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return bpe.visible(data)


def text_ids(tokenizer: bpe.BPETokenizer, text: str) -> list[int]:
    """``<|endoftext|>`` then the text's tokens (special tokens in the text read as plain text)."""
    return [tokenizer.tokens.index(DOC_START)] + list(bpe.encode(text, tokenizer, special=False).ids)


def read_text(model: llama.LlamaModel, text: str) -> dict[str, Any]:
    """The record of ``text`` (module docstring): one forward pass, then the final norm and
    unembedding over every layer's residual stream at every position."""
    ids = text_ids(model.tokenizer, text)
    n = len(ids) - 1
    out = llama.forward(model.weights, model.config, ids)
    states = out.hidden_states  # [L+1, n+1, d]
    lens, top, p = [], [], []
    named: set[int] = set(ids)
    for k in range(n + 1):
        probs = llama.probabilities(llama.logit_lens(model.weights, model.config, states[:, k]))  # [L+1, V]
        final = probs[-1]
        best = np.argsort(-final, kind="stable")[:TOP]
        top.append([[int(j), _number(final[j])] for j in best])
        target = ids[k + 1] if k < n else int(best[0])
        if k < n:
            p.append(_number(final[target]))
        leaders = probs.argmax(axis=-1)  # [L+1]
        lens.append([[int(j), _number(row[j]), _number(row[target])] for j, row in zip(leaders, probs)])
        named.update(int(j) for j in best)
        named.update(int(j) for j in leaders)
    return {"ids": ids, "text": {str(j): token_text(model.tokenizer, j) for j in sorted(named)}, "p": p,
            "top": top, "lens": lens}


def per_mille(weights: np.ndarray) -> np.ndarray:  # [..., m] rows summing to 1 -> [..., m] int, rows summing to 1000
    """Whole thousandths by largest remainder: every row adds up to exactly 1000, ties to the
    earlier key."""
    scaled = np.asarray(weights, dtype=np.float64) * 1000
    floor = np.floor(scaled)
    short = 1000 - floor.sum(axis=-1, keepdims=True)  # [..., 1]
    order = np.argsort(-(scaled - floor), axis=-1, kind="stable")  # [..., m] largest remainder first
    rank = np.argsort(order, axis=-1, kind="stable")
    return (floor + (rank < short)).astype(np.int64)


def read_attention(model: llama.LlamaModel, text: str) -> dict[str, Any]:
    """Every query head's causal attention over ``text`` (after ``<|endoftext|>``): ``{"ids", "weights":
    [L][H] lower triangles, row i holding keys 0 … i in whole thousandths, rows one after another}``."""
    ids = text_ids(model.tokenizer, text)
    maps = per_mille(llama.forward(model.weights, model.config, ids, attentions=True).attentions)  # [L, H, m, m]
    rows, cols = np.tril_indices(len(ids))
    return {"ids": ids, "weights": maps[:, :, rows, cols].tolist()}


def decode_greedy(model: llama.LlamaModel, text: str, steps: int) -> dict[str, Any]:
    """The prompt (``text`` after ``<|endoftext|>``) run at once, then ``steps`` tokens, each the most
    likely one, run one at a time through the KV cache: ``{"ids": prompt ids, "new": [[id,
    probability], …], "text": {id: text}}``. A control token (``<|im_end|>`` …) ends it early."""
    ids = text_ids(model.tokenizer, text)
    logits, cache = llama.next_token_logits(model, ids)
    new: list[list] = []
    for _ in range(steps):
        probs = llama.probabilities(logits)
        j = int(np.argmax(probs))
        new.append([j, _number(probs[j])])
        if model.tokenizer.token_types[j] in (bpe.CONTROL, bpe.USER_DEFINED):
            break
        logits, cache = llama.next_token_logits(model, [j], cache)
    named = sorted({*ids, *(j for j, _ in new)})
    return {"ids": ids, "new": new, "text": {str(j): token_text(model.tokenizer, j) for j in named}}


def config_record(model: llama.LlamaModel) -> dict[str, Any]:
    """The model's numbers the page and the cache's size need, and its name."""
    c = model.config
    return {"name": model.path.name.split(".")[0],  # SmolLM2-135M-Instruct.Q4_1.gguf: the model, not its quantization
            "n_layers": c.n_layers, "n_heads": c.n_heads, "n_kv_heads": c.n_kv_heads, "head_dim": c.head_dim,
            "hidden_size": c.hidden_size, "vocab_size": c.vocab_size, "context_length": c.context_length,
            "tied": bool(c.tied_embeddings)}


# ---- numbers of a record --------------------------------------------------------------------------


def surprise_bits(p: Sequence[float]) -> np.ndarray:  # [n] -> [n]
    """−log₂ p: how surprised the model was by each token, in bits."""
    return -np.log2(np.maximum(np.asarray(p, dtype=np.float64), 1e-300))


def cross_entropy(p: Sequence[float]) -> float:
    """The mean surprise over the text's tokens, in bits per token."""
    return float(surprise_bits(p).mean())


def perplexity(p: Sequence[float]) -> float:
    """2 to the cross-entropy: the number of equally likely tokens that would leave the model as
    unsure, on average, as it was on this text."""
    return float(2.0 ** cross_entropy(p))


def least_likely(p: Sequence[float]) -> int:
    """The index (0-based, into the text's tokens) of the token the model found least likely; the
    first of equals."""
    return int(np.argmin(np.asarray(p)))


def settles_at(lens_rows: Sequence[Sequence], token_id: int) -> int | None:
    """The first layer from which ``token_id`` is the top reading at every layer up to the last; None
    if it is not the top reading of the last layer."""
    leaders = [row[0] for row in lens_rows]
    if leaders[-1] != token_id:
        return None
    layer = len(leaders) - 1
    while layer > 0 and leaders[layer - 1] == token_id:
        layer -= 1
    return layer


def cache_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: int) -> int:
    """The KV cache's size: a key and a value vector (2) per layer, per key/value head, per token."""
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value


def si_bytes(n: float) -> str:
    """Bytes in decimal units with three significant digits: "23.0 MB", "1.07 GB", "46.1 kB"."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.{max(0, 2 - int(math.floor(math.log10(value))))}f} {unit}"
    return f"{int(n)} B"
