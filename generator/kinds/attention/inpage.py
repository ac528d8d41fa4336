"""Lab 07's real model in the page: the ``model.bundle`` key, the bundle's accuracy on the lab's
sentences, and what the page needs to load it.

``model.bundle`` names a bundle folder (:mod:`generator.runtime.bundle`), relative to the lab.
At build, :func:`accuracy` runs the bundle's quantized weights in NumPy
(:func:`generator.runtime.bundle.reference_model`) over every sentence the lab's model reads and
compares the word-level attention with the full model's, already stored in the lab's
real-heads cache (per mille): the largest difference in any weight, in percentage points, is
stated on the page, and the build fails at the ``bundle:`` line if it is over :data:`BOUND`.
No checkpoint is needed. The result is part of the lab's computed payload, so the build cache
keeps it (its inputs include the bundle's ``bundle.json``, which holds every file's SHA-256).

The page's code for it is ``static/later/own-real.js``, loaded with the box's own code on
request; the bundle's page files are written once per site (:func:`site_files`).
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds import BuildError, ContentError, Diagnostic, display_path

BOUND = 2.5  # points: the most an 8-bit weight of the page's model may differ from the full model's
NO_BUNDLE = ("this lab's model section names no model bundle (model.bundle), so only the designed heads "
             "run in the page")
OTHER_CHECKPOINT = ("its model bundle (model.bundle) was made from another checkpoint than the real heads "
                    "this build shows, so its accuracy cannot be checked")
NO_MODEL = "this lab names no pretrained model, so only the designed heads run in the page"


def bundle_of(spec) -> Any:
    """The bundle ``spec`` (a ModelSpec) names, read and checked once per process; a problem with
    it is a diagnostic at the ``bundle:`` line."""
    from generator.runtime.site import bundle_at

    try:
        return bundle_at(spec.bundle)
    except BuildError as exc:
        raise ContentError([Diagnostic(*spec.bundle_at, f"bundle {display_path(spec.bundle)}/ cannot be used: "
                                       f"{str(exc).replace(' error: ', ' ', 1)}")]) from None


def words_of(text: str, tokenizer) -> tuple[list[str], list[bool], list[int]]:
    """The words, [CLS]/[SEP] flags and each piece's word, as the real-heads cache has them."""
    from generator.kinds.attention.realheads import piece_word_index

    return piece_word_index(tokenizer.encode(text))


# The bundle model's word attention by (bundle id, sentence), as accuracy() compares it: computed
# once per process for each, so a rebuild of the same lab (labs serve, or another copy of the
# course in the same process) runs the model only on sentences it has not read. The bundle id is
# a hash of bundle.json, which holds every file's SHA-256: the same id is the same model. Bounded;
# the least recently used go first.
_READ: OrderedDict[tuple[str, str], Any] = OrderedDict()
_READ_MAX = 512


def _bundle_reads(bundle, text: str, model: Callable[[], Any]) -> Any:
    """What the bundle's model (``model()``, made when first needed) gives for ``text``:
    :func:`~generator.kinds.attention.realheads.word_attention`, kept in :data:`_READ`."""
    from generator.kinds.attention.realheads import word_attention
    from generator.runtime.site import bundle_id

    key = (bundle_id(bundle), text)
    if key in _READ:
        _READ.move_to_end(key)
        return _READ[key]
    _READ[key] = found = word_attention(model(), text)
    if len(_READ) > _READ_MAX:
        _READ.popitem(last=False)
    return found


def accuracy(spec, widget, sha: str, bound: float = BOUND) -> dict[str, Any] | None:
    """The largest difference between the bundle's model and the full one (the cache's entries
    under checkpoint ``sha``) over every sentence the lab's model reads (the spotlight's and the
    head finder's), in points: ``{"points": exact, "shown": rounded up to 0.1, "sentences":
    count}``. Raises ContentError at the ``bundle:`` line if it is over ``bound``. None when the
    bundle was made from another checkpoint than ``sha`` (a build with ``--model`` of another
    model): its accuracy cannot be checked, so the page does not offer it."""
    from generator.kinds.attention import cache as cachefile
    from generator.kinds.attention.realmodel import model_sentences, sentence_text
    from generator.runtime.bundle import reference_model

    bundle = bundle_of(spec)
    cache = cachefile.load_cache_arrays(spec.cache)
    texts = [sentence_text(s) for s in [*model_sentences(widget), *spec.finder_sentences]]
    entries = [cachefile.cache_lookup(cache, sha, text) for text in texts]
    if bundle.meta["checkpoint"]["sha256"] != sha:
        return None
    model = functools.cache(lambda: reference_model(bundle))
    worst = 0.0
    for text, entry in zip(texts, entries):
        if entry is None:  # compute_real has said so already
            continue
        mine = _bundle_reads(bundle, text, model)
        if list(mine.words) != list(entry["words"]):
            raise ContentError([Diagnostic(*spec.bundle_at, f"the bundle's tokenizer splits {text!r} into other "
                                           f"words than {spec.cache_shown}")])
        full = np.asarray(entry["attention"], dtype=np.float64) / 10  # per mille -> percent
        worst = max(worst, float(np.abs(mine.attention.astype(np.float64) * 100 - full).max()))
    shown = math.ceil(round(worst * 10, 6)) / 10
    if worst > bound:
        raise ContentError([Diagnostic(*spec.bundle_at, f"the bundle's 8-bit weights move attention up to {worst:.2f} "
                                       f"points from the full model on this lab's sentences; the page may state at "
                                       f"most {bound} (quantize more finely, or leave the bundle out)")])
    return {"points": round(worst, 4), "shown": shown, "sentences": len(texts)}


def page_part(spec, computed: dict | None) -> dict[str, Any]:
    """What the page's "Your sentence" box knows of the real model: where to load it and how close
    it is, or why it is not offered (``{"reason": ...}``)."""
    if spec is None:
        return {"reason": NO_MODEL}
    if spec.bundle is None:
        return {"reason": NO_BUNDLE}
    if not computed:
        return {"reason": OTHER_CHECKPOINT}
    from generator.runtime.site import page_ref

    return {**page_ref(bundle_of(spec)), **computed}


def site_files(specs: Sequence[Any]) -> dict[str, bytes]:
    """The runtime's page files of every bundle the labs name, once each."""
    from generator.runtime.site import site_files as files_of

    files: dict[str, bytes] = {}
    seen: set[Path] = set()
    for spec in specs:
        if spec is not None and spec.bundle is not None and spec.bundle not in seen:
            seen.add(spec.bundle)
            files.update(files_of(bundle_of(spec)))
    return files
