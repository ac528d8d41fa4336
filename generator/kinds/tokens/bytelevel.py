"""The second tokenizer a tokens lab may set beside WordPiece: a decoder's byte-level BPE
(``bpe: smollm2-135m-instruct``), read from the model's GGUF with :mod:`generator.models.bpe`.

Only the tokenizer is used, never the weights: at build for the lab's BPE claims and questions,
and in the page as the runtime's ``Labs.runtime.BPE`` (static/bpe.js) over the tokenizer's data
script, which the page loads alone (``Labs.runtime.tokenizer``) when the learner asks to compare.
The GGUF is found through :func:`generator.models.store.locate`; without it, the lab is built
with WordPiece only and the build says what to run (:func:`missing_note`).

A BPE token is written as :func:`generator.models.bpe.visible` shows it: a space as ``␣``, a
byte that is not a whole UTF-8 character as ``<0xF0>``; so ``" world"`` is ``␣world``, and an
emoji is the bytes its tokens hold.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from generator.kinds import BuildError
from generator.kinds.tokens.pieces import Counted
from generator.models import bpe, gguf_io, store


def model_names() -> list[str]:
    """The models with a byte-level BPE tokenizer: the decoders, whose main file is a GGUF."""
    return sorted(n for n, m in store.MODELS.items() if (m.main or "").endswith(".gguf"))


def locate(name: str) -> Path | None:
    """The model's GGUF as fetched, or None when it is not (or not whole)."""
    try:
        return store.locate(name)
    except BuildError:
        return None


def missing_note(name: str) -> str:
    return (f"the BPE tokenizer of {name} is not fetched, so this lab compares WordPiece only and its BPE claims "
            f"and questions are not checked; run `{store.fetch_command(name)}` and build again")


def tokenizer(path: str | Path) -> bpe.BPETokenizer:
    """The GGUF's tokenizer: the one the page's engine and the NumPy decoder use, read once per
    process while the file stays the same (:func:`generator.models.gguf_io.read_gguf`)."""
    return bpe.tokenizer_from_gguf(gguf_io.read_gguf(Path(path)))


def count(text: str, tok: bpe.BPETokenizer) -> Counted:
    """``text`` in BPE tokens, as WordPiece's :func:`.pieces.count` gives it: each token as
    :func:`bpe.visible` writes it (special tokens are text here: a learner's ``<|im_start|>`` is
    spelt, not obeyed), words counted as runs between whitespace."""
    enc = bpe.encode(text, tok, special=False)
    shown = tuple(bpe.visible(bpe.token_bytes(i, tok)) for i in enc.ids)
    return Counted(text, shown, tuple(enc.ids), (), (), len(text), len(text.split()))


def page_ref(name: str, path: Path | None) -> dict[str, Any]:
    """What the page needs to load the tokenizer alone (the manifest, relative to the lab page, which
    names the tokenizer's script, and that script's gzip size), or why it cannot."""
    if path is None:
        return {"reason": f"This copy of the site was built without the {name} tokenizer, so only "
                                        f"WordPiece is shown."}
    from generator.runtime.site import decoder_page_ref

    ref = decoder_page_ref(path)
    script = next(data for p, data in site_files(path).items() if p.endswith(ref["tokenizer"].rsplit("/", 1)[-1]))
    # no code: the runtime's one script serves both tokenizers, and the page has it for WordPiece
    return {"model": ref["model"], "manifest": ref["manifest"],
            "gzip": len(gzip.compress(script, 6, mtime=0))}


def site_files(path: Path) -> dict[str, bytes]:
    """The decoder's page files a tokenizer needs: the runtime's code, the manifest and the
    tokenizer's data, and not the weight shards (a lab that runs the model adds those)."""
    from generator.runtime.site import decoder_site_files

    return {p: data for p, data in decoder_site_files(path).items() if "model-weights-" not in p.rsplit("/", 1)[-1]}
