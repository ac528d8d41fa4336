"""Lab contexts on the decoder's real next-token distribution (SmolLM2-135M-Instruct, all 49,152
tokens), read from the lab's stored file (:mod:`generator.runtime.decoded`), never computed at build.

Two computations are stored: ``vocabulary`` (every token as the page writes it, a leading space as
␣, so claims can name tokens and a build needs no model) and ``next-token`` (the logits after a
prompt, rounded to 4 decimals: every probability the page shows then stays within 0.01 points of
the model's). ``labs decode`` computes them; :func:`requests` says which ones a lab reads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from generator.kinds import Diagnostic
from generator.models import bpe, llama
from generator.runtime import decoded

MODEL = "smollm2-135m-instruct"
TOP = 10  # tokens the page lists by name; the rest is "all other tokens"
TOP_K_CHOICES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 50, 100, 1000)  # the page's top-k menu on the real model


def vocabulary(model, inputs) -> dict:
    """Every token of the model, as :func:`generator.models.bpe.visible` writes it (␣ for a space)."""
    tok = model.tokenizer
    return {"tokens": [bpe.visible(bpe.token_bytes(i, tok)) for i in range(len(tok.tokens))]}


def next_token(model, inputs) -> dict:
    """The logits for the token after ``inputs["text"]`` (wrapped in the chat template as the
    user's message when ``inputs["chat"]``), and the prompt's token ids."""
    tok = model.tokenizer
    text = bpe.render_chat(tok, [{"role": "user", "content": inputs["text"]}]) if inputs["chat"] else inputs["text"]
    ids = [int(i) for i in bpe.encode(text, tok).ids]
    logits, _ = llama.next_token_logits(model, ids)
    return {"ids": ids, "logits": decoded.rounded(logits, 4)}


VOCABULARY = decoded.Computation("vocabulary", 1, vocabulary)
NEXT_TOKEN = decoded.Computation("next-token", 1, next_token)


def vocabulary_request(at: Diagnostic) -> decoded.Request:
    return decoded.Request(MODEL, VOCABULARY, {}, at)


def next_token_request(text: str, chat: bool, at: Diagnostic) -> decoded.Request:
    return decoded.Request(MODEL, NEXT_TOKEN, {"chat": bool(chat), "text": text}, at)


def stored_context(stored: decoded.Store, text: str, chat: bool, at: Diagnostic
                   ) -> tuple[tuple[decoded.Request, ...], Any, list[Diagnostic]]:
    """The requests one real context reads, and (words, logits, prompt tokens) from the store —
    or None and the diagnostics saying what is missing or stale."""
    wanted = (vocabulary_request(at), next_token_request(text, chat, at))
    found = [decoded.find(stored, r) for r in wanted]
    problems = [p for _, p in found if p is not None]
    if problems:
        return wanted, None, problems[-1:]  # one message: labs decode fixes both
    words, result = tuple(found[0][0]["tokens"]), found[1][0]
    shown = tuple(words[i] for i in result["ids"])
    return wanted, (words, tuple(result["logits"]), shown), []


def tail_runs(parts) -> list[list[int]]:  # [m] ints, non-increasing -> [[value, count], ...]
    """The parts of the tokens past the top ones, in rank order, as runs of equal values: what the
    page needs to cut and draw over the whole vocabulary without naming each token."""
    parts = np.asarray(parts)  # [m]
    if parts.size == 0:
        return []
    starts = np.concatenate([[0], np.flatnonzero(parts[1:] != parts[:-1]) + 1])  # [r], where each run begins
    counts = np.diff(np.append(starts, parts.size))  # [r]
    return [[v, c] for v, c in zip(parts[starts].tolist(), counts.tolist())]


def top_tokens(probs) -> list[int]:  # [V] -> the TOP listed token ids, most likely first
    """The tokens the page lists by name: the most likely, ties by the lower id (the logits' order)."""
    return np.argsort(-np.asarray(probs, dtype=np.float64), kind="stable")[:TOP].tolist()


def real_payload(words, logits, parts) -> dict:  # parts [t, V] ints over the whole vocabulary
    """The page's view of a real context: the top tokens (ids, words, logits, parts per
    temperature) and, per temperature, the other tokens' parts as runs in rank order."""
    order = np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")  # rank order at every T
    top, rest = order[:TOP], order[TOP:]
    return {"ids": top.tolist(), "words": [words[j] for j in top], "logits": [round(float(logits[j]), 4) for j in top],
            "p": parts[:, top].tolist(), "tail": [tail_runs(row) for row in parts[:, rest]], "vocab": len(words),
            "topk": list(TOP_K_CHOICES)}
