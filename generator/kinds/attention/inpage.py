"""Lab 07's real model in the page: the ``model.bundle`` key, how close its 8-bit weights come to
the full model on the lab's sentences, and what the page needs to load it.

``model.bundle`` names a bundle folder (:mod:`generator.runtime.bundle`), relative to the lab.
What the page tells a learner to expect of *their* sentence is the bundle's own figure, measured
once when it was exported on 300 generated sentences (bundle.json's ``"accuracy"``). The lab's
own figure goes into the detail: for each sentence the lab's model reads, the largest difference
between the bundle's word-level attention (:func:`generator.runtime.bundle.reference_model`, in
NumPy) and the full model's stored in the real-heads cache (per mille), in percentage points.

That figure depends only on the bundle's model (:func:`generator.runtime.bundle.model_key`) and
the sentence, so it is kept per sentence in the real-heads cache beside the attention
(``"drift"``, written by ``labs heads``; :mod:`.cache`): a build, cold or warm, reads it, and
only a sentence the cache lacks under this bundle is computed, all of them in one NumPy pass
(:func:`sentence_drift`). No checkpoint is needed. It never fails a build unless the lab sets
``model.max_drift``: then a figure above it is an error at that line.

The page's code for it is ``static/later/own-real.js``, loaded with the box's own code on
request; the bundle's page files are written once per site (:func:`site_files`).
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds import BuildError, ContentError, Diagnostic, display_path

NO_BUNDLE = ("this lab's model section names no model bundle (model.bundle), so only the designed heads "
             "run in the page")
OTHER_CHECKPOINT = ("its model bundle (model.bundle) was made from another checkpoint than the real heads "
                    "this build shows, so its accuracy cannot be checked")
NO_MODEL = "this lab names no pretrained model, so only the designed heads run in the page"
PASS_BYTES = 64 << 20  # one forward pass holds at most this much attention; more sentences take more passes


def bundle_of(spec) -> Any:
    """The bundle ``spec`` (a ModelSpec) names, read and checked once per process; a problem with
    it is a diagnostic at the ``bundle:`` line."""
    from generator.runtime.site import bundle_at

    try:
        return bundle_at(spec.bundle, spec.content)
    except BuildError as exc:
        raise ContentError([Diagnostic(*spec.bundle_at, f"bundle {display_path(spec.bundle)}/ cannot be used: "
                                       f"{str(exc).replace(' error: ', ' ', 1)}")]) from None


def refresh_drift(spec, old: dict, fresh: dict, sha: str, texts: list[str]) -> tuple[dict, int]:
    """The ``drift`` section of a refreshed cache: the bundle's 8-bit figure for every sentence
    (kept where the old cache has it under the bundle's model key, else computed), and how many
    were computed; empty when the lab names no bundle, or one of another checkpoint."""
    from generator.kinds.attention import cache as cachefile
    from generator.runtime.bundle import model_key

    if spec.bundle is None:
        return {}, 0
    bundle = bundle_of(spec)
    if bundle.meta["checkpoint"]["sha256"] != sha:
        return {}, 0
    key = model_key(bundle)
    wanted = set(texts)
    kept = {text: points for text, points in cachefile.drift_of(old, key).items() if text in wanted}
    computed = sentence_drift(spec, [t for t in dict.fromkeys(texts) if t not in kept], fresh["entries"][sha])
    return {key: {**kept, **computed}}, len(computed)


def lab_texts(spec, widget) -> list[str]:
    """Every sentence the lab's model reads (the spotlight's and the head finder's), as cached."""
    from generator.kinds.attention.headfinder import model_sentences, sentence_text

    return [sentence_text(s) for s in [*model_sentences(widget), *spec.finder_sentences]]


@functools.lru_cache(maxsize=1)
def _model(bundle):  # the dequantized model of the last bundle asked for: ~90 MB, made once per process
    from generator.runtime.bundle import reference_model

    return reference_model(bundle)


# The bundle model's word attention by (bundle id, sentence): computed once per process for each,
# so a rebuild of a lab whose figures the cache lacks (labs serve while its author writes, or
# another copy of the course in the same process) runs the model only on sentences it has not
# read. The bundle id is a hash of bundle.json, which holds every file's SHA-256: the same id is
# the same model. Bounded; the least recently used go first.
_READ: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_READ_MAX = 512


def sentence_drift(spec, texts: Sequence[str], entries: Mapping[str, Mapping]) -> dict[str, float]:
    """:func:`drift_figures` of the bundle ``spec`` (a ModelSpec) names; a sentence its tokenizer
    splits into other words than the cache holds is a ContentError at the ``bundle:`` line."""
    if not texts:
        return {}
    try:
        return drift_figures(bundle_of(spec), texts, entries)
    except OtherWords as exc:
        raise ContentError([Diagnostic(*spec.bundle_at, f"the bundle's tokenizer splits {exc.args[0]!r} into other "
                                       f"words than {spec.cache_shown}")]) from None
    except OtherShape as exc:
        raise ContentError([Diagnostic(*spec.bundle_at, exc.args[0])]) from None


class OtherWords(ValueError):
    """The bundle's tokenizer splits a sentence (the argument) into other words than its entry has."""


class OtherShape(ValueError):
    """The bundle's model is not the full model's shape, or computes NaN or infinite attention (the message)."""


def drift_figures(bundle, texts: Sequence[str], entries: Mapping[str, Mapping]) -> dict[str, float]:
    """For each of ``texts``, the largest difference between ``bundle``'s word-level attention and
    the full model's stored one (``entries[text]``, a real-heads cache entry), in points, rounded
    to 4 decimals. The sentences run through the bundle's model together: padded to the longest,
    sorted by length, in one forward pass (more only past :data:`PASS_BYTES`); a sentence this
    process has read before (:data:`_READ`) is not run again. Raises :class:`OtherWords` for a
    sentence the bundle's tokenizer splits into other words."""
    from generator.kinds.attention.realheads import merge_pieces, piece_word_index
    from generator.models.bert import bert_forward
    from generator.models.wordpiece import encode
    from generator.runtime.site import bundle_id

    if not texts:
        return {}
    ident = bundle_id(bundle)
    encodings = {text: encode(text, bundle.tokenizer) for text in texts}
    for text, encoding in encodings.items():
        if piece_word_index(encoding)[0] != list(entries[text]["words"]):
            raise OtherWords(text)
    order = sorted((t for t in dict.fromkeys(texts) if (ident, t) not in _READ), key=lambda t: len(encodings[t].ids))
    if order:
        model = _model(bundle)
        config = model.config
        per_row = config.num_hidden_layers * config.num_attention_heads * 4  # float32 attention per key and query
    while order:
        size = 1
        while size < len(order) and (size + 1) * len(encodings[order[size]].ids) ** 2 * per_row <= PASS_BYTES:
            size += 1
        batch, order = order[:size], order[size:]
        n = len(encodings[batch[-1]].ids)
        ids = np.zeros((len(batch), n), dtype=np.int64)  # [B, n]
        mask = np.zeros((len(batch), n), dtype=bool)  # [B, n] False: padding, which no real row attends to
        for i, text in enumerate(batch):
            ids[i, :len(encodings[text].ids)] = encodings[text].ids
            mask[i, :len(encodings[text].ids)] = True
        attentions = bert_forward(model.weights, config, ids, attention_mask=mask).attentions  # [B, L, H, n, n]
        for i, text in enumerate(batch):
            p = len(encodings[text].ids)
            _READ[ident, text] = merge_pieces(attentions[i, :, :, :p, :p].astype(np.float64),
                                              piece_word_index(encodings[text])[2])  # [L, H, w, w]
    out: dict[str, float] = {}
    for text in texts:
        _READ.move_to_end((ident, text))
        full = np.asarray(entries[text]["attention"], dtype=np.float64) / 10  # per mille -> percent
        mine = _READ[ident, text]
        if mine.shape != full.shape:  # another number of layers or heads than the full model's
            raise OtherShape(f"the bundle's model has {mine.shape[0]} layers of {mine.shape[1]} heads, the full "
                             f"model's attention {full.shape[0]} of {full.shape[1]}: not the same model")
        moved = float(np.abs(mine * 100 - full).max())
        if not math.isfinite(moved):  # max(worst, nan) would keep the old worst: say so instead
            raise OtherShape(f"the bundle's 8-bit model computes NaN or infinite attention on {text!r}: "
                             f"its weights overflow float32")
        out[text] = round(moved, 4)
    while len(_READ) > _READ_MAX:
        _READ.popitem(last=False)
    return out


def accuracy(spec, widget, sha: str, entries: Mapping[str, Mapping] | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """How close the bundle's model comes to the full one (``entries``: the real-heads entry of
    each sentence by its text, as the build has them; default: the cache's under checkpoint
    ``sha``) on every sentence the lab's model reads: ``{"points": the largest difference,
    "shown": rounded up to 0.1, "sentences": count}``, and notes for the author (sentences whose
    figure was computed now because the cache lacks it). The figures come from the cache's
    ``"drift"`` under the bundle's :func:`~generator.runtime.bundle.model_key`; only missing ones
    are computed. Raises ContentError at the ``max_drift:`` line when the lab sets one and the
    figure is over it. None (no notes) when the bundle was made from another checkpoint than
    ``sha`` (a build with ``--model`` of another model): its accuracy cannot be checked, so the
    page does not offer it."""
    from generator.kinds.attention import cache as cachefile
    from generator.runtime.bundle import model_key

    bundle = bundle_of(spec)
    if bundle.meta["checkpoint"]["sha256"] != sha:
        return None, []
    cache = cachefile.load_cache_arrays(spec.cache, lazy=True)  # the build's own entries: numbers decoded when used
    texts = lab_texts(spec, widget)
    if entries is None:
        entries = {text: entry for text in texts if (entry := cachefile.cache_lookup(cache, sha, text)) is not None}
    # A figure is read only for a sentence whose attention is the cache's: one computed from a
    # checkpoint by this build is compared anew.
    stored = {text: points for text, points in cachefile.drift_of(cache, model_key(bundle)).items()
              if _same(entries.get(text), cachefile.cache_lookup(cache, sha, text))}
    missing = [text for text in dict.fromkeys(texts) if text in entries and text not in stored]
    figures = {**stored, **sentence_drift(spec, missing, entries)}
    worst = max((figures[text] for text in texts if text in figures), default=0.0)
    notes = []
    if missing:
        notes.append(f"{spec.cache_shown}: the 8-bit model's difference on {len(missing)} sentence"
                     f"{'s' * (len(missing) != 1)} was computed by this build, not read from the cache; "
                     f"run `labs heads` to store it")
    if spec.max_drift is not None and worst > spec.max_drift:
        raise ContentError([Diagnostic(*spec.max_drift_at, f"the bundle's 8-bit weights move attention up to "
                                       f"{worst:.2f} points from the full model on this lab's sentences, over "
                                       f"max_drift {spec.max_drift:g} (quantize more finely, or raise max_drift)")])
    shown = math.ceil(round(worst * 10, 6)) / 10
    return {"points": round(worst, 4), "shown": shown, "sentences": len(texts)}, notes


def _same(entry: Mapping | None, cached: Mapping | None) -> bool:
    """Whether the build's entry is the cache's (the same object as a rule: the build read it there)."""
    if entry is None or cached is None:
        return False
    return entry is cached or (list(entry["words"]) == list(cached["words"])
                               and np.array_equal(np.asarray(entry["attention"]), np.asarray(cached["attention"])))


def expected(bundle) -> dict[str, Any] | None:
    """What the bundle's export measured on generated sentences (bundle.json ``"accuracy"``), as the
    page states it to a learner; None when the bundle carries no measurement."""
    measured = bundle.meta.get("accuracy")
    if measured is None:
        return None
    sentences, config = measured["sentences"], bundle.config
    return {**measured["attention"], "count": sentences["count"], "seed": sentences["seed"], "words": sentences["words"],
            "heads": config.num_hidden_layers * config.num_attention_heads}


def page_part(spec, computed: dict | None) -> dict[str, Any]:
    """What the page's "Your sentence" box knows of the real model: where to load it and how close
    it is — ``expect``, the bundle's figures on generated sentences, and the lab's own figure — or
    why it is not offered (``{"reason": ...}``)."""
    if spec is None:
        return {"reason": NO_MODEL}
    if spec.bundle is None:
        return {"reason": NO_BUNDLE}
    if not computed:
        return {"reason": OTHER_CHECKPOINT}
    from generator.runtime.site import page_ref

    bundle = bundle_of(spec)
    return {**page_ref(bundle), **computed, "expect": expected(bundle)}


def site_files(specs: Iterable[Any]) -> dict[str, bytes]:
    """The runtime's page files of every bundle the labs name, once each (the specs are read one by
    one, and none is kept)."""
    from generator.runtime.site import site_files as files_of

    files: dict[str, bytes] = {}
    seen: set[Path] = set()
    for spec in specs:
        if spec is not None and spec.bundle is not None and spec.bundle not in seen:
            seen.add(spec.bundle)
            files.update(files_of(bundle_of(spec)))
    return files
