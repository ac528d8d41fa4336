"""What makes a bundle the model it was exported from, beyond hashes an editor can recompute:
bundle.json's ``reference`` holds the token ids and sentence vectors the exported model computed
on :data:`REFERENCE_TEXTS`, and a process reading the bundle computes them again (once for
each bundle.json it meets: :func:`generator.runtime.bundle.read_bundle`). A bundle whose weights,
configuration, vocabulary or tokenizer switches were changed (and its hashes with them) computes
other numbers; a model that computes NaN or infinities is refused too.

    "reference": {"texts": [str, ...], "ids": [[int, ...], ...], "vectors": [[float, ...], ...]}

``ids`` include [CLS] and [SEP]; a vector is the last layer averaged over the tokens and
L2-normalised (sentence-transformers' pooling), rounded to 7 decimals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from generator.errors import BuildError, display_path
from generator.models import bert
from generator.models.bert import BertModel
from generator.models.wordpiece import encode

# Together they reach every layer with ordinary words, rare words cut into pieces, accents, CJK,
# digits and punctuation.
REFERENCE_TEXTS = (
    "The cat sat on the mat because it was tired.",
    "Antidisestablishmentarianism: unhappiness, café and naïve résumés in 東京, 3.14159!",
    "Which sentence is nearest to a furry animal? I can't sign in to my account.",
)
# Two reads of one bundle compute the same vectors to float32 rounding (1e-7 on entries of a unit
# vector, whichever BLAS sums them); one int8 weight moved by a few steps, another head count or
# LayerNorm epsilon move them by more than this.
REFERENCE_TOLERANCE = 1e-4
MAX_TEXTS, MAX_CHARS = 8, 200


# The SHA-256 of each bundle.json whose model this process has run on its reference and found as
# stored. Its bytes fix the config, the reference and the SHA-256 of every file the model is made
# of (each checked against the file's bytes before the model runs), so the same bytes are the same
# model and the same expected numbers wherever the folder is: a site's bundle read again from another
# folder, a copy of the site, is not run again. Other bytes (a weight changed with its hash) are.
REFERENCES_MET: set[str] = set()


def reference_outputs(model: BertModel, texts: Sequence[str]) -> dict:
    """What ``model`` computes on ``texts``, as bundle.json's ``reference`` keeps it."""
    ids, vectors = [], []
    for text in texts:
        encoding, out = bert.run_sentence(model, text)
        pooled = out.last_hidden_state.astype(np.float64).mean(axis=0)  # [d]
        ids.append(list(encoding.ids))
        vectors.append([round(float(x), 7) for x in pooled / np.linalg.norm(pooled)])
    return {"texts": list(texts), "ids": ids, "vectors": vectors}


def check_reference(meta: Mapping, model: BertModel, path: Path, weights: Path, vocab: Path,
                    described: str | None = None) -> None:
    """The model computes the token ids and sentence vectors stored at export; a
    :class:`BuildError` naming bundle.json (its ``reference`` malformed), the vocabulary (other
    ids) or the weights (other or non-finite vectors) otherwise. ``described``: the SHA-256 of
    bundle.json's bytes, noted in :data:`REFERENCES_MET` once the check passes."""
    ref = meta.get("reference")
    fix = "export the bundle again from its checkpoint"
    if not (isinstance(ref, dict) and set(ref) == {"texts", "ids", "vectors"} and isinstance(ref["texts"], list)
            and 1 <= len(ref["texts"]) <= MAX_TEXTS
            and all(isinstance(t, str) and 0 < len(t) <= MAX_CHARS for t in ref["texts"])
            and isinstance(ref["ids"], list) and isinstance(ref["vectors"], list)
            and len(ref["ids"]) == len(ref["vectors"]) == len(ref["texts"])):
        raise BuildError(f"'reference' must hold 'texts' (1 to {MAX_TEXTS}), and for each its 'ids' and 'vectors', "
                         f"as export writes them; {fix}", path=display_path(path))
    for text, ids, stored in zip(ref["texts"], ref["ids"], ref["vectors"]):
        if list(encode(text, model.tokenizer).ids) != ids:
            raise BuildError(f"the tokenizer gives other token ids for {text!r} than at export: the vocabulary or "
                             f"its switches changed; {fix}", path=display_path(vocab))
        if not (isinstance(stored, list) and len(stored) == model.config.hidden_size
                and all(type(x) in (int, float) and math.isfinite(x) for x in stored)):
            raise BuildError(f"'reference' vector of {text!r} must be {model.config.hidden_size} finite numbers; "
                             f"{fix}", path=display_path(path))
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is said below, not warned about
            got = np.array(reference_outputs(model, [text])["vectors"][0])
        if not np.isfinite(got).all():
            raise BuildError(f"the model computes NaN or infinite numbers on {text!r}: its weights overflow float32",
                             path=display_path(weights))
        moved = float(np.abs(got - np.array(stored, dtype=np.float64)).max())
        if moved > REFERENCE_TOLERANCE:
            raise BuildError(f"the model computes another sentence vector for {text!r} than at export (an entry "
                             f"moved by {moved:.2g}, over {REFERENCE_TOLERANCE}): its weights or configuration "
                             f"changed; {fix}", path=display_path(weights))
    if described is not None:
        REFERENCES_MET.add(described)
