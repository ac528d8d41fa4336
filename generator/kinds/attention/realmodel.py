"""Real model heads for a lab: the ``model:`` section of lab.yaml, its cache, its head finder.

Author-facing syntax (in ``lab.yaml``)::

    model:
      name: sentence-transformers/all-MiniLM-L6-v2   # shown on the page
      cache: real-heads.json                         # committed data file beside lab.yaml
      checkpoint: ../../../models/all-MiniLM-L6-v2   # optional local folder (relative to the lab);
                                                     # `labs build --model DIR` overrides it
      relations:                                     # gold relations for the head finder
        cat-mat:                                     # a widget sentence id
          - sat -> cat (subject)                     # query -> key (relation type)
          - The -> cat (determiner)

Every self-attention sentence of the widget (kinds ``self`` and ``causal``; a BERT encoder
reads the whole sentence either way) is run through the checkpoint by our NumPy forward
pass. Results are kept in the cache file, keyed by the checkpoint's SHA-256 and the sentence
text, so that a build needs no checkpoint as long as the cache covers every sentence.
``labs heads --model DIR`` (re)computes the cache; ``labs build`` never writes into content/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator.errors import BuildError, ContentError, Diagnostic, did_you_mean, display_path
from generator.kinds.attention.widget import read_word
from generator.source import Reader

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


@dataclass(frozen=True)
class Relation:
    sentence_id: str
    query: int  # index into the widget sentence's words
    key: int
    kind: str
    at: tuple[str, int, int]


@dataclass(frozen=True)
class ModelSpec:
    name: str
    cache: Path
    cache_shown: str
    checkpoint: Path | None
    relations: tuple[Relation, ...]
    at: tuple[str, int, int]  # where `model:` is written
    sentence_at: dict  # sentence id -> (path, line, col) of its text, for cache-miss errors


def read_model(reader: Reader, where: tuple, widget, lab_dir: Path) -> ModelSpec | None:
    """Validate the ``model:`` mapping (``widget`` is the lab's WidgetSpec, already read)."""
    if reader.mapping(where, required=("name", "cache"), optional=("checkpoint", "relations")) is None:
        return None
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
    relations: list[Relation] = []
    rel = reader.value(where + ("relations",))
    if rel is not None and reader.mapping(where + ("relations",), optional=tuple(rel) if isinstance(rel, dict) else ()) is not None:
        for sentence_id in rel:
            sw = where + ("relations", sentence_id)
            sentence = widget.sentence(sentence_id) if widget else None
            if widget and sentence is None:
                ids = [s.id for s in widget.sentences]
                reader.error(sw, f"unknown sentence {sentence_id!r}{did_you_mean(sentence_id, ids)}", key=True)
                continue
            if sentence is not None and sentence.kind == "cross":
                reader.error(sw, f"sentence {sentence_id!r} is cross-attention; the model reads one sentence", key=True)
                continue
            for i, _ in enumerate(reader.sequence(sw) or []):
                text = reader.string(sw + (i,), multiline=False)
                if text is None or sentence is None:
                    continue
                m = parse_relation(text)
                if m is None:
                    reader.error(sw + (i,), f"relation {text!r} should read 'query -> key (type)', e.g. 'sat -> cat (subject)'")
                    continue
                words = sentence.queries
                q = read_word(reader, sw + (i,), m[0], words)
                k = read_word(reader, sw + (i,), m[1], words)
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
    sentence_at = {}
    for s_index, s in enumerate(widget.sentences if widget else ()):
        sline, scol = reader.doc.position(("widget", "sentences", s_index, "text"))
        sentence_at[s.id] = (reader.doc.path, sline, scol)
    return ModelSpec(name, cache, display_path(cache), checkpoint, tuple(relations), (reader.doc.path, line, col), sentence_at)


def model_sentences(widget) -> list[Any]:
    """The widget sentences a BERT encoder can read: all but cross-attention pairs."""
    return [s for s in widget.sentences if s.kind != "cross"]


def sentence_text(sentence) -> str:
    return " ".join(sentence.queries)


def _align(teaching_words: tuple[str, ...], model_words: list[str], special: list[bool]) -> list[int | None]:
    """For each teaching word, the index of the model word written the same way (in order), or None."""
    out: list[int | None] = []
    j = 0
    for word in teaching_words:
        k = j
        while k < len(model_words) and (special[k] or model_words[k] != word):
            k += 1
        if k < len(model_words):
            out.append(k)
            j = k + 1
        else:
            out.append(None)
    return out


def refresh(spec: ModelSpec, widget, model_dir: Path | None) -> tuple[list[str], Path]:
    """Recompute the cache file from the checkpoint; returns the sentences computed and the file."""
    from generator.kinds.attention import cache as cachefile
    from generator.attention.bert import load_model

    folder = model_dir or spec.checkpoint
    if folder is None:
        raise BuildError(f"no checkpoint: pass --model DIR or set model.checkpoint; {CHECKPOINT_HELP}", spec.at[0])
    sha = cachefile.checkpoint_sha256(folder)
    cache = cachefile.load_cache(spec.cache)
    model = load_model(folder)
    cache, computed = cachefile.refresh_cache(cache, model, sha, [sentence_text(s) for s in model_sentences(widget)])
    cachefile.save_cache(spec.cache, cache)
    return computed, spec.cache


def compute_real(spec: ModelSpec, widget, model_dir: Path | None) -> tuple[dict, list[str]]:
    """The ``real`` part of the spotlight payload. Returns it with notes for the author
    (sentences computed from the checkpoint but not yet in the cache).

    Raises ContentError when a sentence is not cached and no checkpoint is at hand.
    """
    from generator.kinds.attention import cache as cachefile

    cache = cachefile.load_cache(spec.cache)
    folder = model_dir or (spec.checkpoint if spec.checkpoint and spec.checkpoint.is_dir() else None)
    notes: list[str] = []
    model = None
    if folder is not None:
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
    for s in model_sentences(widget):
        text = sentence_text(s)
        entry = cachefile.cache_lookup(cache, sha, text)
        if entry is None and folder is not None:
            if model is None:
                from generator.attention.bert import load_model

                model = load_model(folder)
            entry = cachefile.compute_entry(model, text)
            notes.append(f"{spec.cache_shown}: {text!r} computed from the checkpoint but not cached; "
                         f"run `labs heads --model {display_path(folder)}` to store it")
        if entry is None:
            path, line, col = spec.sentence_at[s.id]
            status = cachefile.cache_status(cache, sha, text)
            why = "was cached for a different checkpoint" if status == "stale" else "is not in the cache"
            problems.append(Diagnostic(path, line, col, f"sentence {text!r} {why} ({spec.cache_shown}); {CHECKPOINT_HELP}"))
            continue
        entries[s.id] = entry
        sentences[s.id] = {"words": entry["words"], "special": entry["special"], "attention": entry["attention"]}
    if problems:
        raise ContentError(problems)
    first = next(iter(entries.values()), None)
    layers = len(first["attention"]) if first else 0
    heads = len(first["attention"][0]) if first else 0
    return {
        "model": spec.name,
        "sha256": sha,
        "layers": layers,
        "heads": heads,
        "per_mille": True,
        "sentences": sentences,
        "finder": _finder(spec, widget, entries),
    }, notes


def _finder(spec: ModelSpec, widget, entries: dict[str, dict]) -> list[dict]:
    """Score every head on the declared relations (pooled over sentences), with the baseline."""
    from generator.attention import realheads

    by_kind: dict[str, list[tuple[str, int, int]]] = {}
    problems = []
    for r in spec.relations:
        entry = entries.get(r.sentence_id)
        if entry is None:
            continue
        sentence = widget.sentence(r.sentence_id)
        align = _align(sentence.queries, entry["words"], entry["special"])
        q, k = align[r.query], align[r.key]
        if q is None or k is None:
            missing = sentence.queries[r.query if q is None else r.key]
            problems.append(Diagnostic(*r.at, f"the model splits {missing!r} into pieces of other words; "
                                       "relate whole words only"))
            continue
        by_kind.setdefault(r.kind, []).append((r.sentence_id, q, k))
    if problems:
        raise ContentError(problems)
    reports = []
    arrays = {sid: np.asarray(entry["attention"], dtype=np.int32) for sid, entry in entries.items()}  # [L, H, n, n]
    for kind in sorted(by_kind):
        hits_total = None
        baseline = None
        total = 0
        # Pool sentences: score each head on each sentence, then add the hits up.
        for sentence_id in sorted({s for s, _, _ in by_kind[kind]}):
            entry = entries[sentence_id]
            rels = [(q, k, kind) for s, q, k in by_kind[kind] if s == sentence_id]
            per_head = _head_hits(arrays[sentence_id], rels, entry["special"])
            hits_total = per_head if hits_total is None else hits_total + per_head
            b = _baseline_hits(rels, entry["special"])
            baseline = b if baseline is None else baseline + b
            total += len(rels)
        assert hits_total is not None and baseline is not None
        flat = hits_total.ravel()
        order = np.lexsort((np.arange(flat.size), -flat))[:3]
        n_heads = hits_total.shape[1]
        best_b = int(np.argmax(baseline))
        reports.append({
            "relation": kind,
            "count": total,
            "best": [{"layer": int(i // n_heads), "head": int(i % n_heads), "score": round(float(flat[i]) / total, 4)}
                     for i in order],
            "baseline": {"offset": realheads.BASELINE_OFFSETS[best_b], "score": round(float(baseline[best_b]) / total, 4)},
            "beats_baseline": bool(flat[order[0]] > baseline[best_b]),
        })
    return reports


def _head_hits(attention: np.ndarray, rels, special) -> np.ndarray:  # [L, H, n, n] -> [L, H] hits
    from generator.attention import realheads

    report = realheads.find_heads(attention, rels, special, top=attention.shape[0] * attention.shape[1])
    (only,) = report.values()
    hits = np.zeros(attention.shape[:2], dtype=np.int64)
    for h in only.best_heads:
        hits[h.layer, h.head] = h.hits
    return hits


def _baseline_hits(rels, special) -> np.ndarray:  # -> [len(BASELINE_OFFSETS)] hits
    from generator.attention import realheads

    return realheads.offset_baseline_hits([q for q, _, _ in rels], [k for _, k, _ in rels], special)
