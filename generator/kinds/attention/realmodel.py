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

The head finder (:func:`_finder`) splits the sentences that carry relations into two halves,
fixed in advance: every other one in the order they are written (widget sentences first, then
the finder's own). For each relation type it picks the head with the best hit rate on the
first half (ties broken by the mean weight on the target; how many heads shared the best hit
rate is reported), then scores that head — and two baselines chosen on the same half, the best
fixed offset and "the nearest word with the target's tag" — on the second, held-out half. It
says a head *beats the baselines* only when, on the held-out pairs, it hits at least
:data:`BEATS_MIN_HIT` of them and wins more pairs against each baseline than it loses, by
a one-sided sign test at p < :data:`BEATS_MAX_P`.
"""

from __future__ import annotations


import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from generator.kinds import BuildError, ContentError, Diagnostic, Reader, did_you_mean, display_path, pickled_as_call
from generator.kinds.attention import teaching
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


BEATS_MIN_HIT = 0.6  # a head said to beat its baselines finds at least this share of held-out pairs…
BEATS_MAX_P = 0.05  # …and wins against each baseline by a one-sided sign test below this


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

    cache = cachefile.load_cache_arrays(spec.cache)  # attention as int16 arrays, read once per file content
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
    shown = {s.id for s in model_sentences(widget)}
    for s in [*model_sentences(widget), *spec.finder_sentences]:
        text = sentence_text(s)
        entry = cachefile.cache_lookup(cache, sha, text)
        if entry is None and folder is not None:
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
        if s.id in shown:  # finder-only sentences are scored at build, not shown
            sentences[s.id] = {"words": entry["words"], "special": entry["special"], "attention": entry["attention"]}
    if problems:
        raise ContentError(problems)
    aligned = _Aligned([*model_sentences(widget), *spec.finder_sentences], entries)
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
        "finder": _finder(spec, widget, entries, aligned),
        "learned": learned_matches(widget, spec.finder_sentences, entries, aligned),
    }, notes, by_text


class _Aligned(dict):
    """Sentence id -> :func:`_align` of its words with the model's, for the sentences with an entry;
    worked out once for the finder and the learned matches."""

    def __init__(self, sentences, entries: dict[str, dict]):
        super().__init__((s.id, _align(s.queries, entries[s.id]["words"], entries[s.id]["special"]))
                         for s in sentences if s.id in entries)


def learned_matches(widget, finder_sentences, entries: dict[str, dict], aligned: dict | None = None) -> dict[str, Any]:
    """For each designed head of the widget, the real head whose rows agree best with its rows
    (:mod:`generator.kinds.attention.agreement`), over the widget's self-attention sentences and the
    finder's sentences (their words aligned by :func:`_align`; a causal sentence's designed rows
    cannot see ahead and a BERT encoder's can, so it is left out). Also, per widget sentence, the
    model word that the spotlight opens for each of its words (the first piece of a split word).
    JSON-ready: ``{"heads": {head_id: {layer, head, agreement, words, sentences, next}}, "sentences":
    [...], "words": {sentence id: [model word index, ...]}}``. ``aligned``: :class:`_Aligned` of
    these sentences, when already worked out."""
    from generator.kinds.attention.agreement import agreement_sums

    used = [s for s in [*model_sentences(widget), *finder_sentences] if s.kind == "self" and s.id in entries]
    if aligned is None:
        aligned = _Aligned([*model_sentences(widget), *finder_sentences], entries)
    head_ids = tuple(widget.head_ids)
    totals = 0  # [D, L, H] each head's agreements, added row by row and sentence by sentence
    counts = np.zeros(len(head_ids), dtype=np.int64)  # [D] rows counted
    sentences = np.zeros(len(head_ids), dtype=np.int64)  # [D] sentences with a row counted
    for s in used:
        align = np.array([-1 if a is None else a for a in aligned[s.id]])
        # The designed heads' ÷√d weights [D, n, n], computed for each lab and not remembered across
        # labs: a memo by sentence would make a benchmark whose labs share sentences cheaper than a
        # real site, whose labs do not.
        designed = teaching.self_weights(tuple(s.query_words), head_ids)
        sums, rows = agreement_sums(designed, np.asarray(entries[s.id]["attention"]), align)
        totals = totals + sums
        counts += rows
        sentences += rows > 0
    heads = {}
    for hid, total, count, sentence_count in zip(head_ids, totals if used else (), counts.tolist(), sentences.tolist()):
        if not count:
            continue
        mean = total / count  # [L, H]
        order = np.argsort(-mean, axis=None, kind="stable")  # ties: the lower layer, then head
        (layer, head), (layer2, head2) = (np.unravel_index(int(i), mean.shape) for i in order[:2])
        heads[hid] = {"layer": int(layer), "head": int(head), "agreement": round(float(mean[layer, head]), 4),
                      "words": count, "sentences": sentence_count,
                      "next": {"layer": int(layer2), "head": int(head2), "agreement": round(float(mean[layer2, head2]), 4)}}
    words = {}
    for s in model_sentences(widget):
        if s.id not in entries:
            continue
        at: list[int] = []
        for a in aligned[s.id]:  # a split word: the piece after the last word
            at.append(a if a is not None else (at[-1] + 1 if at else 1))
        words[s.id] = at
    return {"heads": heads, "sentences": [s.id for s in used], "words": words}


def _finder(spec: ModelSpec, widget, entries: dict[str, dict], aligned: dict | None = None) -> list[dict]:
    """Per relation type: the head picked on one half of the sentences, scored on the other half
    against two baselines (see the module docstring). JSON-ready, sorted by relation name.
    ``aligned``: :class:`_Aligned` of the sentences, when already worked out."""
    from generator.kinds.attention import realheads

    order = [s for s in [*model_sentences(widget), *spec.finder_sentences] if s.id in entries]
    if aligned is None:
        aligned = _Aligned(order, entries)
    relations: dict[str, list[Relation]] = {}
    for r in spec.relations:
        relations.setdefault(r.sentence_id, []).append(r)
    with_pairs = [s for s in order if s.id in relations]
    shown = {s.id for s in model_sentences(widget)}
    pairs: dict[str, list[dict]] = {}
    groups = []  # per sentence with pairs: what realheads.pair_outcomes_of needs
    offset_hits: list[list[bool]] = []  # per pair, in the order of ``groups``
    problems = []
    for half, s in enumerate(with_pairs):  # every other sentence: 0 picks the head, 1 is held out
        entry = entries[s.id]
        align = aligned[s.id]
        tags: list[str | None] = [None] * len(entry["words"])
        for word, at in zip(s.query_words, align):
            if at is not None:
                tags[at] = word.role
        ok = []
        for r in relations[s.id]:
            q, k = align[r.query], align[r.key]
            if q is None or k is None:
                missing = s.queries[r.query if q is None else r.key]
                problems.append(Diagnostic(*r.at, f"the model splits {missing!r} into pieces of other words; "
                                           "relate whole words only"))
                continue
            ok.append((r, q, k))
        if not ok:
            continue
        qs, ks = [q for _, q, _ in ok], [k for _, _, k in ok]
        groups.append((entry["attention"], qs, ks, entry["special"]))
        offsets = realheads.offset_guess_lists(qs, entry["special"])  # [O][R]
        for i, (r, q, k) in enumerate(ok):
            pairs.setdefault(r.kind, []).append({
                "at": len(offset_hits), "sentence": s.id, "half": half % 2, "shown": s.id in shown, "q": q, "k": k,
                "tags": tags, "key_tag": tags[k], "words": entry["words"]})
            offset_hits.append([guess[i] == k for guess in offsets])
    if problems:
        raise ContentError(problems)
    if not pairs:
        return []
    hits, weights = realheads.pair_outcomes_of(groups)  # [L, H, P]
    return [_relation_report(kind, pairs[kind], (hits, weights, offset_hits)) for kind in sorted(pairs)]


def _share(x: np.ndarray) -> float:
    return round(float(x.mean()), 4) if x.size else 0.0


def _relation_report(kind: str, pairs: list[dict], outcomes: tuple[np.ndarray, np.ndarray, list]) -> dict:
    """One relation type's report; ``outcomes``: every pair's hits and weights [L, H, P] and the
    offset rules' hits (a list per pair), a pair's place at its ``"at"``. Shares of hits are
    counts over sizes; the mean weights are NumPy's means, as :func:`_share` takes them."""
    from generator.kinds.attention import realheads

    pick = [p for p in pairs if p["half"] == 0]
    held = [p for p in pairs if p["half"] == 1]
    report: dict[str, Any] = {
        "relation": kind, "count": len(pairs), "sentences": len({p["sentence"] for p in pairs}),
        "pick": {"count": len(pick), "sentences": len({p["sentence"] for p in pick})},
        "held": {"count": len(held), "sentences": len({p["sentence"] for p in held})},
    }
    if not pick or not held:
        return {**report, "head": None, "beats_baseline": False}
    hits, weights, offset_hits = outcomes
    pick_at, held_at = [p["at"] for p in pick], [p["at"] for p in held]
    pick_hits = hits[:, :, pick_at].sum(axis=-1)  # [L, H]
    tied = pick_hits == pick_hits.max()
    pick_weight = np.ascontiguousarray(weights[:, :, pick_at]).mean(axis=-1)  # summed pairwise along each [R]
    layer, head = np.unravel_index(int(np.where(tied, pick_weight, -np.inf).argmax()), tied.shape)
    held_hits_all = hits[:, :, held_at].sum(axis=-1)  # [L, H]
    best_held = np.unravel_index(int(held_hits_all.argmax()), tied.shape)
    held_hits = hits[layer, head, held_at].tolist()
    # Baselines, each chosen on the pick half like the head.
    offset_pick = [sum(offset_hits[i][o] for i in pick_at) for o in range(len(realheads.BASELINE_OFFSETS))]
    o = offset_pick.index(max(offset_pick))
    offset_held = [offset_hits[i][o] for i in held_at]
    wanted = sorted({p["key_tag"] for p in pick if p["key_tag"]})
    wanted_set = set(wanted)
    tag_held = [realheads.nearest_tag_guess(p["q"], p["tags"], wanted_set) == p["k"] for p in held]
    versus = []
    for name, base in (("offset", offset_held), ("tag", tag_held)):
        wins = sum(h and not b for h, b in zip(held_hits, base))
        losses = sum(b and not h for h, b in zip(held_hits, base))
        # The test sees only the pairs where head and rule disagree: the fewest wins among them it
        # would accept says how weak it is at this size (None: too few pairs for any to pass).
        needed = next((w for w in range(wins + losses + 1)
                       if realheads.sign_test_p(w, wins + losses - w) < BEATS_MAX_P), None)
        versus.append({"baseline": name, "wins": wins, "losses": losses,
                       "p": round(realheads.sign_test_p(wins, losses), 4), "needed": needed})
    beats = bool(sum(held_hits) / len(held) >= BEATS_MIN_HIT and all(v["p"] < BEATS_MAX_P for v in versus))
    examples = {}
    chosen = hits[layer, head]
    for label, want in (("works", True), ("fails", False)):
        p = next((p for p in pairs if p["shown"] and bool(chosen[p["at"]]) == want), None)
        if p is not None:  # a widget sentence, so the spotlight can open it
            examples[label] = {"sentence": p["sentence"], "q": p["q"], "word": p["words"][p["q"]],
                               "target": p["words"][p["k"]]}
    return {
        **report,
        "head": {"layer": int(layer), "head": int(head), "ties": int(tied.sum()),
                 "pick_hit": _rate(int(pick_hits[layer, head]), len(pick)), "pick_weight": _share(pick_weight[layer, head]),
                 "held_hit": _rate(sum(held_hits), len(held)), "held_weight": _share(weights[layer, head, held_at])},
        "best_held": {"layer": int(best_held[0]), "head": int(best_held[1]),
                      "held_hit": _rate(int(held_hits_all[best_held]), len(held))},
        "baselines": [
            {"baseline": "offset", "offset": realheads.BASELINE_OFFSETS[o], "pick_hit": _rate(offset_pick[o], len(pick)),
             "held_hit": _rate(sum(offset_held), len(held))},
            {"baseline": "tag", "tags": wanted, "held_hit": _rate(sum(tag_held), len(held))},
        ],
        "versus": versus,
        "beats_baseline": beats,
        "examples": examples,
    }


def _rate(hits: int, total: int) -> float:
    """:func:`_share` of ``total`` yes-or-no outcomes, ``hits`` of them yes (the same number)."""
    return round(hits / total, 4) if total else 0.0
