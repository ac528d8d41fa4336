"""Real model heads for a lab: the ``model:`` section of lab.yaml, its cache, its head finder.

Author-facing syntax (in ``lab.yaml``)::

    model:
      name: sentence-transformers/all-MiniLM-L6-v2   # shown on the page
      cache: real-heads.json                         # committed data file beside lab.yaml
      checkpoint: ../../../models/all-MiniLM-L6-v2   # optional local folder (relative to the lab);
                                                     # `labs build --model DIR` overrides it
      bundle: ../../models/all-minilm-l6-v2          # optional: the 8-bit bundle the page runs on a
                                                     # learner's sentence (see inpage.py)
      max_drift: 3                                   # optional, with bundle: fail the build when the
                                                     # 8-bit model moves a weight of the lab's sentences
                                                     # more points than this (default: never fails)
      sentences:                                     # optional: sentences for the head finder only
        - id: f-birds                                # (not in the spotlight; cached like the others)
          text: The old/ADJ man/NOUN fed/VERB the birds/NOUN   # tagged like a widget sentence
      relations:                                     # gold relations for the head finder
        cat-mat:                                     # a widget or finder sentence id
          - sat -> cat (subject)                     # query -> key (relation type)
          - The -> cat (determiner)

Every self-attention sentence of the widget (kinds ``self`` and ``causal``; a BERT encoder
reads the whole sentence either way) is run through the checkpoint by our NumPy forward
pass. Results are kept in the cache file, keyed by the checkpoint's SHA-256 and the sentence
text, so that a build needs no checkpoint as long as the cache covers every sentence.
``labs heads --model DIR`` (re)computes the cache; ``labs build`` never writes into content/.

The head finder and the learned-head matching that the build runs on these entries are in
:mod:`.headfinder`.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds import BuildError, ContentError, Diagnostic, Reader, did_you_mean, display_path, pickled_as_call
from generator.kinds.attention import headreport, teaching
from generator.kinds.attention.headfinder import model_sentences, sentence_text
from generator.kinds.attention.permille import decoded
from generator.kinds.attention.reading import read_word

_RELATION_TYPE = re.compile(r"[A-Za-z][\w -]*")  # one character class after a literal: linear time
CHECKPOINT_HELP = (
    "put a BERT-family checkpoint (config.json, model.safetensors, vocab.txt) in a local folder — "
    "e.g. sentence-transformers/all-MiniLM-L6-v2 — and run `labs heads --model DIR` to store its attention "
    "(see README: Real model heads)"
)


def parse_relation(text: str) -> tuple[str, str, str] | None:
    """``query -> key (type)`` as (query, key, type), or None when it does not read so.

    Parsed by hand (a regular expression with optional spaces around a lazy group
    backtracked quadratically on long lines of spaces)."""
    text = text.strip()
    if not text.endswith(")") or "(" not in text:
        return None
    paren = text.rfind("(")
    kind = text[paren + 1 : -1].strip()
    if not _RELATION_TYPE.fullmatch(kind):
        return None
    words = text[:paren].split()
    if len(words) == 3 and words[1] == "->":
        query, key = words[0], words[2]
    elif len(words) == 2 and words[0].endswith("->") and len(words[0]) > 2:
        query, key = words[0][:-2], words[1]
    elif len(words) == 2 and words[1].startswith("->") and len(words[1]) > 2:
        query, key = words[0], words[1][2:]
    elif len(words) == 1 and "->" in words[0].strip("->"):
        query, _, key = words[0].rpartition("->")
    else:
        return None
    return query, key, kind


@pickled_as_call
@dataclass(frozen=True, slots=True)
class FinderSentence:
    """A sentence read by the model for the head finder only (``model.sentences``)."""

    id: str
    query_words: tuple[teaching.Word, ...]
    kind: str = "self"

    @property
    def queries(self) -> tuple[str, ...]:
        return tuple(w.text for w in self.query_words)


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Relation:
    sentence_id: str
    query: int  # index into the widget sentence's words
    key: int
    kind: str
    at: tuple[str, int, int]


@pickled_as_call
@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    cache: Path
    cache_shown: str
    checkpoint: Path | None
    relations: tuple[Relation, ...]
    at: tuple[str, int, int]  # where `model:` is written
    sentence_at: dict  # sentence id -> (path, line, col) of its text, for cache-miss errors
    finder_sentences: tuple[FinderSentence, ...] = ()
    checkpoint_at: tuple[str, int, int] | None = None  # where `checkpoint:` is written
    bundle: Path | None = None  # the model bundle the page runs (inpage.py)
    bundle_at: tuple[str, int, int] | None = None  # where `bundle:` is written
    max_drift: float | None = None  # points: the most the lab lets the bundle move a weight (inpage.py)
    max_drift_at: tuple[str, int, int] | None = None  # where `max_drift:` is written
    content: Path | None = None  # the site's content folder: links in the bundle may lead within it


def read_max_drift(reader: Reader, where: tuple, bundle_name: str | None) -> float | None:
    """``model.max_drift``: points from 0 to 100, and only beside a ``bundle:`` (it bounds that bundle)."""
    value = reader.value(where)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 100):
        reader.error(where, f"max_drift must be a number of points above 0 and at most 100, not {value!r}")
    elif value is not None and bundle_name is None:
        reader.error(where, "max_drift bounds the 8-bit model of a bundle: it needs 'bundle:' beside it", key=True)
    elif value is not None:
        return float(value)
    return None


def read_model(reader: Reader, where: tuple, widget, lab_dir: Path) -> ModelSpec | None:
    """Validate the ``model:`` mapping (``widget`` is the lab's WidgetSpec, already read)."""
    if reader.mapping(where, required=("name", "cache"), optional=("checkpoint", "bundle", "max_drift", "sentences", "relations")) is None:
        return None
    finder = _read_finder_sentences(reader, where + ("sentences",), widget)
    name = reader.string(where + ("name",), multiline=False)
    cache_name = reader.string(where + ("cache",), multiline=False)
    checkpoint_name = reader.string(where + ("checkpoint",), required=False, multiline=False)
    cache = None
    if cache_name:
        cache = (lab_dir / cache_name).resolve()
        if not cache.is_relative_to(lab_dir.resolve()):
            reader.error(where + ("cache",), f"cache {cache_name!r} must be inside the lab folder")
            cache = None
    checkpoint = (lab_dir / checkpoint_name).resolve() if checkpoint_name else None
    bundle_name = reader.value(where + ("bundle",))
    bundle = reader.folder(where + ("bundle",), lab_dir, "bundle") if bundle_name else None
    max_drift = read_max_drift(reader, where + ("max_drift",), bundle_name)
    relations: list[Relation] = []
    rel = reader.value(where + ("relations",))
    if rel is not None and reader.mapping(where + ("relations",), optional=tuple(rel) if isinstance(rel, dict) else ()) is not None:
        for sentence_id in rel:
            sw = where + ("relations", sentence_id)
            sentence = (widget.sentence(sentence_id) if widget else None) or next(
                (f for f, _ in finder if f.id == sentence_id), None)
            if widget and sentence is None:
                ids = [s.id for s in widget.sentences] + [f.id for f, _ in finder]
                reader.error(sw, f"unknown sentence {sentence_id!r}{did_you_mean(sentence_id, ids)}", key=True)
                continue
            if sentence is not None and sentence.kind == "cross":
                reader.error(sw, f"sentence {sentence_id!r} is cross-attention; the model reads one sentence", key=True)
                continue
            words = sentence.queries if sentence is not None else ()
            for i, _ in enumerate(reader.sequence(sw) or []):
                text = reader.string(sw + (i,), multiline=False)
                if text is None or sentence is None:
                    continue
                m = parse_relation(text)
                if m is None:
                    reader.error(sw + (i,), f"relation {text!r} should read 'query -> key (type)', e.g. 'sat -> cat (subject)'")
                    continue
                q = _read_word(reader, sw + (i,), m[0], words)
                k = _read_word(reader, sw + (i,), m[1], words)
                if q is None or k is None:
                    continue
                if q == k:
                    reader.error(sw + (i,), "a relation links two different words")
                    continue
                line, col = reader.doc.position(sw + (i,))
                relations.append(Relation(sentence_id, q, k, m[2], (reader.doc.path, line, col)))
    if not (name and cache):
        return None
    line, col = reader.doc.position(where, key=True)
    sentence_at = {s.id: (reader.doc.path, *reader.doc.position(("widget", "sentences", i, "text")))
                   for i, s in enumerate(widget.sentences if widget else ())} | {f.id: at for f, at in finder}
    checkpoint_at = (reader.doc.path, *reader.doc.position(where + ("checkpoint",))) if checkpoint else None
    bundle_at = (reader.doc.path, *reader.doc.position(where + ("bundle",))) if bundle else None
    max_drift_at = (reader.doc.path, *reader.doc.position(where + ("max_drift",))) if max_drift is not None else None
    return ModelSpec(name, cache, display_path(cache), checkpoint, tuple(relations), (reader.doc.path, line, col),
                     sentence_at, tuple(f for f, _ in finder), checkpoint_at, bundle, bundle_at, max_drift, max_drift_at,
                     reader.content)


def _read_word(reader: Reader, where: tuple, written: str, words: tuple[str, ...]) -> int | None:
    """:func:`read_word`, answered at once for the usual case: a word written without ``#n`` that
    the sentence has once (a lab has a hundred relations and more)."""
    if "#" not in written and words.count(written) == 1:
        return words.index(written)
    return read_word(reader, where, written, words)


def _read_finder_sentences(reader: Reader, where: tuple, widget) -> list[tuple[FinderSentence, tuple]]:
    """``model.sentences``: id and tagged text of each finder-only sentence, with where its text is."""
    from generator.kinds.attention.reading import SENTENCE_ID, read_words

    found: list[tuple[FinderSentence, tuple]] = []
    if reader.value(where) is None:
        return found
    taken = {s.id for s in widget.sentences} if widget else set()
    for i, _ in enumerate(reader.sequence(where) or []):
        if reader.mapping(where + (i,), required=("id", "text")) is None:
            continue
        sentence_id = reader.string(where + (i, "id"), multiline=False)
        words, _text = read_words(reader, where + (i, "text"))
        if sentence_id is None or words is None:
            continue
        if not SENTENCE_ID.fullmatch(sentence_id):
            reader.error(where + (i, "id"), f"sentence id {sentence_id!r} may use only letters, digits, '-' and '_'")
            continue
        if sentence_id in taken:
            reader.error(where + (i, "id"), f"duplicate sentence id {sentence_id!r}")
            continue
        taken.add(sentence_id)
        line, col = reader.doc.position(where + (i, "text"))
        found.append((FinderSentence(sentence_id, words), (reader.doc.path, line, col)))
    return found


@contextmanager
def _blamed_on_lab_yaml(spec: ModelSpec, model_dir: Path | None):
    """A checkpoint named by lab.yaml's ``checkpoint:`` (not by ``--model``) that cannot be read
    is that line's mistake: its BuildError becomes a diagnostic there, naming the file at fault."""
    try:
        yield
    except BuildError as exc:
        if model_dir is not None or spec.checkpoint_at is None:
            raise
        path, line, col = spec.checkpoint_at
        raise ContentError([Diagnostic(path, line, col, f"checkpoint {display_path(spec.checkpoint)}/ cannot be "
                                       f"used: {str(exc).replace(' error: ', ' ', 1)}")]) from None


def compute_real(spec: ModelSpec, widget, model_dir: Path | None) -> tuple[dict, list[str], dict[str, dict]]:
    """The ``real`` part of the spotlight payload. Returns it with notes for the author
    (sentences computed from the checkpoint but not yet in the cache), and every sentence's
    entry (from the cache, or computed now) by its text.

    Raises ContentError when a sentence is not cached and no checkpoint is at hand.
    """
    from generator.kinds.attention import cache as cachefile

    # Attention as int16 arrays, read once per file content; decoded when used (a stored report's
    # key holds their text), checked as a whole when the report must be computed (below).
    cache = cachefile.load_cache_arrays(spec.cache, lazy=True)
    folder = model_dir or (spec.checkpoint if spec.checkpoint and spec.checkpoint.is_dir() else None)
    notes: list[str] = []
    model = None
    if folder is not None:
        with _blamed_on_lab_yaml(spec, model_dir):
            sha = cachefile.checkpoint_sha256(folder)
    else:
        shas = sorted(cache["entries"])
        if len(shas) != 1:
            path, line, col = spec.at
            what = "is empty or missing" if not shas else f"holds {len(shas)} checkpoints"
            raise ContentError([Diagnostic(path, line, col, f"{spec.cache_shown} {what} and no checkpoint was given; "
                                           + CHECKPOINT_HELP)])
        sha = shas[0]
    sentences: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    entries: dict[str, dict] = {}
    cached: dict[str, str] = {}  # sentence id -> its text, for the entries read from the cache
    for s in [*model_sentences(widget), *spec.finder_sentences]:
        text = sentence_text(s)
        entry = cachefile.cache_lookup(cache, sha, text)
        if entry is not None:
            cached[s.id] = text
        elif folder is not None:
            if model is None:
                from generator.models.bert import load_model

                with _blamed_on_lab_yaml(spec, model_dir):
                    model = load_model(folder)
            entry = cachefile.compute_entry(model, text)
            entry = {**entry, "attention": np.asarray(entry["attention"], dtype=np.int16)}
            notes.append(f"{spec.cache_shown}: {text!r} computed from the checkpoint but not cached; "
                         f"run `labs heads --model {display_path(folder)}` to store it")
        if entry is None:
            path, line, col = spec.sentence_at[s.id]
            status = cachefile.cache_status(cache, sha, text)
            why = "was cached for a different checkpoint" if status == "stale" else "is not in the cache"
            problems.append(Diagnostic(path, line, col, f"sentence {text!r} {why} ({spec.cache_shown}); {CHECKPOINT_HELP}"))
            continue
        entries[s.id] = entry
    if problems:
        raise ContentError(problems)
    found = headreport.stored_report(spec, widget, sha, entries, cache)
    if found is None:  # computed from every sentence's numbers: the file read and checked as a whole
        whole = cachefile.load_cache_arrays(spec.cache)
        entries = {sid: cachefile.cache_lookup(whole, sha, cached[sid]) if sid in cached else entry
                   for sid, entry in entries.items()}
        found = headreport.compute(spec, widget, entries)
    finder, learned = found
    for s in model_sentences(widget):  # finder-only sentences are scored at build, not shown
        if s.id in entries:
            entry = entries[s.id]
            sentences[s.id] = {"words": entry["words"], "special": entry["special"], "attention": decoded(entry["attention"])}
    first = next((entries[sid] for sid in sentences), None)
    layers, heads = first["attention"].shape[:2] if first else (0, 0)
    by_text = {sentence_text(s): entries[s.id] for s in [*model_sentences(widget), *spec.finder_sentences]}
    return {
        "model": spec.name,
        "sha256": sha,
        "layers": layers,
        "heads": heads,
        "per_mille": True,
        "sentences": sentences,
        "finder": finder,
        "learned": learned,
    }, notes, by_text
