""""Your sentence": the designed model run in the learner's browser, on a sentence of their own.

The spotlight's own sentences are computed at build time; a learner's sentence is computed in
the page by a JavaScript port of :mod:`generator.kinds.attention.teaching` (``static/later/own-model.js``), with
the UI in ``static/later/own-ui.js``. Both, and every table they share with the Python model — the lexicon,
the roles and tag aliases, each head's W_Q/W_K/W_V/W_O and texts, the bias constants, the
dimension names — go into one classic script beside the lab page (:func:`own_script`), which
the spotlight adds with ``<script src>`` the first time the learner uses the box. Nothing is
copied into JavaScript by hand: the tables below are read from ``teaching`` at build time, and
``tests/test_attention_own_parity.py`` runs the port against NumPy.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from generator.kinds.attention import teaching
from generator.kinds.helpers import fingerprint, json_for_script, minified

SOURCES = ("own-model.js", "own-ui.js")  # concatenated in this order after the tables
FOLDER = Path(__file__).parent / "static" / "later"  # scripts loaded on demand, not in the kind bundle


def _head(h: teaching.Head) -> dict[str, Any]:
    return {"id": h.id, "name": h.name, "description": h.description, "q_dims": list(h.q_dims),
            "k_dims": list(h.k_dims), "v_dims": list(h.v_dims), "o_dims": list(h.o_dims), "bias": h.bias,
            "cross": h.cross, "w_q": h.w_q.tolist(), "w_k": h.w_k.tolist(), "w_v": h.w_v.tolist(),
            "w_o": h.w_o.tolist(), "bias_rule": h.bias_rule.__name__}


def model_tables() -> dict[str, Any]:
    """Everything the JavaScript port reads from the Python model, JSON-ready."""
    t = teaching
    return {
        "roles": list(t.ROLES),
        "role_names": t.ROLE_NAMES,
        "tag_aliases": t.TAG_ALIASES,
        "valid_tags_text": t.VALID_TAGS_TEXT,
        "lexicon": dict(sorted(t.LEXICON.items())),
        "punct": t.PUNCTUATION,
        "number": t.NUMBER.pattern,  # a Python pattern; own-model.js reads \\d as any decimal digit, as Python does
        "max_words": t.MAX_WORDS,
        "embedding_dims": list(t.EMBEDDING_DIMS),
        "residual_dims": list(t.RESIDUAL_DIMS),
        "heads": [_head(h) for h in t.HEADS],
        "default_heads": list(t.DEFAULT_HEADS),
        "syntax": {"forward_roles": list(t.FORWARD_ROLES), "wrong_side": t.SYNTAX_WRONG_SIDE,
                   "step_forward": t.SYNTAX_STEP_FORWARD, "step_other": t.SYNTAX_STEP_OTHER, "self": t.SYNTAX_SELF},
        "coreference": {"after": t.COREF_AFTER, "step": t.COREF_STEP},
        "alignment": {"place": t.ALIGN_PLACE},
    }


def own_script() -> tuple[str, bytes]:
    """``own.<hash>.js``: ``Labs.data.ownTables`` (:func:`model_tables`), then the port and the UI, minified.
    The same for every lab: made once per process (again if a script's file changes)."""
    return _own_script("\n".join(minified(FOLDER / name) for name in SOURCES))


@functools.lru_cache(maxsize=2)
def _own_script(code: str) -> tuple[str, bytes]:
    script = f"((window.Labs||={{}}).data||={{}}).ownTables={json_for_script(model_tables())};\n{code}\n".encode()
    return fingerprint("own.js", script), script


def own_real_script() -> tuple[str, bytes]:
    """``own-real.<hash>.js``: "Your sentence" through the real model (static/later/own-real.js),
    minified; loaded with :func:`own_script`'s code only when the learner picks the real model."""
    return _own_real(minified(FOLDER / "own-real.js"))


@functools.lru_cache(maxsize=2)
def _own_real(code: str) -> tuple[str, bytes]:
    script = f"{code}\n".encode()
    return fingerprint("own-real.js", script), script
