"""Where a tokens lab's vocabulary comes from, and what its page loads for it.

``vocabulary:`` names a folder, either

* a model bundle (``bundle.json`` …, :mod:`generator.runtime.bundle`): the page loads the bundle's
  own runtime script and vocabulary script from ``assets/runtime/<bundle id>/``
  (:func:`generator.runtime.site.site_files`), the very files an attention lab of the same bundle
  loads — same path, same bytes; or
* a plain WordPiece folder (``vocab.txt``, optionally ``tokenizer_config.json``), e.g. the small
  demo vocabulary ``labs new --kind tokens`` writes: the page loads the runtime's code script and a
  vocabulary script made the same way (:func:`generator.runtime.pagefiles.code_script`,
  :func:`generator.runtime.vocab.tokenizer_data`), from ``assets/runtime/vocab-<id>/``.

Either way the tokenizer is :mod:`generator.models.wordpiece` at build and
``static/wordpiece.js`` of the runtime in the page: one tokenizer, no copy.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

from generator.models.wordpiece import WordPieceTokenizer, load_tokenizer
from generator.kinds.helpers import fingerprint, json_for_script
from generator.runtime import site
from generator.runtime.bundle import BUNDLE_FILE
from generator.runtime.pagefiles import code_script, data_script
from generator.runtime.vocab import tokenizer_data

SITE_FOLDER = "assets/runtime"
_FROM_LAB_PAGE = "../../"  # a lab page is labs/<slug>/index.html


def is_bundle(folder: Path) -> bool:
    """A folder with a bundle.json (whatever it is: read_bundle says what is wrong with it)."""
    return os.path.lexists(Path(folder) / BUNDLE_FILE)


def _stamp(folder: Path) -> tuple:
    try:
        return tuple(sorted((p.name, p.lstat().st_mode, p.lstat().st_size, p.lstat().st_mtime_ns)
                            for p in folder.iterdir()))
    except OSError:
        return ()


@functools.lru_cache(maxsize=4)
def _plain(folder: Path, inside: Path | None, stamp: tuple) -> WordPieceTokenizer:
    return load_tokenizer(folder, site.link_boundary(folder, inside))  # no link out of content/ is followed


def tokenizer(folder: Path, inside: Path | None = None) -> WordPieceTokenizer:
    """The folder's tokenizer, read once per process while its files stay the same. ``inside``:
    the folder links may lead within (the site's content folder; None: the vocabulary's own).
    Raises BuildError naming the file for anything wrong."""
    folder = Path(folder).resolve()
    return site.bundle_at(folder, inside).tokenizer if is_bundle(folder) else _plain(folder, inside, _stamp(folder))


@functools.lru_cache(maxsize=4)
def _plain_files(folder: Path, inside: Path | None, stamp: tuple) -> tuple[str, dict[str, bytes], str, str]:
    code_name, code = code_script()
    vocab = json_for_script(tokenizer_data(_plain(folder, inside, stamp)))
    vocab_name = fingerprint("model-vocab.js", vocab.encode("utf-8"))
    script = data_script(vocab_name, vocab)
    ident = "vocab-" + hashlib.sha256(script).hexdigest()[:16]
    return ident, {code_name: code, vocab_name: script}, code_name, vocab_name


def site_files(folder: Path, inside: Path | None = None) -> dict[str, bytes]:
    """The files the page of a lab with this vocabulary loads, by path in the site."""
    folder = Path(folder).resolve()
    if is_bundle(folder):
        return site.site_files(site.bundle_at(folder, inside))
    ident, files, _, _ = _plain_files(folder, inside, _stamp(folder))
    return {f"{SITE_FOLDER}/{ident}/{name}": data for name, data in files.items()}


def page_refs(folder: Path, inside: Path | None = None) -> dict:
    """What the page needs: the URLs (relative to the lab page) of the runtime's code and of the
    vocabulary script, the vocabulary script's bytes, the model's name and its number of positions
    (None for a plain vocabulary)."""
    folder = Path(folder).resolve()
    if is_bundle(folder):
        bundle = site.bundle_at(folder, inside)
        ref = site.page_ref(bundle)
        files = site.site_files(bundle)
        vocab_path = next(p for p in files if p.rsplit("/", 1)[-1].startswith("model-vocab."))
        return {"code": ref["code"], "vocab": ref["code"].rsplit("/", 1)[0] + "/" + vocab_path.rsplit("/", 1)[-1],
                "vocab_script": files[vocab_path], "model": ref["model"],
                "positions": bundle.config.max_position_embeddings}
    ident, files, code_name, vocab_name = _plain_files(folder, inside, _stamp(folder))
    base = f"{_FROM_LAB_PAGE}{SITE_FOLDER}/{ident}/"
    return {"code": base + code_name, "vocab": base + vocab_name, "vocab_script": files[vocab_name],
            "model": None, "positions": None}
