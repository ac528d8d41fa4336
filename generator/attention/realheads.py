"""Real model heads: word-level attention of a pretrained BERT, a head finder, a cache, an inspector.

Pipeline: a sentence is tokenised and run through :mod:`generator.attention.bert`; the
piece-level attention [L, H, n, n] is merged into words (:func:`merge_pieces`); the lab
shows it, and :func:`find_heads` scores every head against gold relations. Because the
site build must not need the checkpoint, results live in a committed cache file.

Words
    ``[CLS]``, the sentence's words as BERT splits them (whitespace, then every punctuation
    character on its own: "didn't" is ``didn ' t``), ``[SEP]``. A word *receives* the SUM of
    what its pieces receive (columns add) and *sends* the MEAN of its pieces' rows, so every
    row still sums to 1.

Cache file format (JSON, UTF-8, written by :func:`save_cache`)::

    {
    "entries": {
    "<sha256 of model.safetensors, 64 lowercase hex>": {
    "<sentence text>": {"attention":[[[[...]]]],"pieces":[...],"piece_words":[...],"special":[...],"words":[...]},
    ... one sentence per line, sorted ...
    }
    },
    "format": "attention-labs/real-heads-cache",
    "version": 1
    }

Each entry, for ``n`` words (``[CLS]`` and ``[SEP]`` included) and ``p`` word pieces:

- ``words``: n strings as written in the sentence, ``"[CLS]"`` first and ``"[SEP]"`` last;
- ``special``: n booleans, true for ``[CLS]``/``[SEP]``;
- ``pieces``: p word pieces as the model saw them (``"[CLS]"``, ``"play"``, ``"##ing"``, ...);
- ``piece_words``: p integers, the index in ``words`` that each piece belongs to
  (non-decreasing, every word has at least one piece);
- ``attention``: [layers][heads][n][n] integers per mille, word level; every row sums to
  exactly 1000 (rounded by :func:`largest_remainder`).

A lookup is a *hit* when the entry exists under the current checkpoint's SHA-256, *stale*
when the sentence is cached only under other checkpoints, a *miss* otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from generator.attention.bert import BertModel, load_model, run_sentence
from generator.attention.wordpiece import Encoding
from generator.errors import BuildError, ContentError, Diagnostic, display_path

CACHE_FORMAT = "attention-labs/real-heads-cache"
CACHE_VERSION = 1
PER_MILLE = 1000
ENTRY_KEYS = ("attention", "pieces", "piece_words", "special", "words")
BASELINE_OFFSETS = (-1, 1, -2, 2, -3, 3)  # in order of preference when two score the same
_SHA_RE = re.compile(r"[0-9a-f]{64}")

Cache = dict  # {"entries": {sha: {sentence: entry}}, "format": CACHE_FORMAT, "version": CACHE_VERSION}


# ---- rounding -----------------------------------------------------------------------------------


def largest_remainder(row_floats, total: int) -> list:  # [..., n] floats -> [..., n] ints (nested lists)
    """Integers proportional to each row that sum to exactly ``total`` (Hamilton's method).

    Each row is scaled to ``total``, floored, and the units still missing go to the entries
    with the largest remainders (ties: the lower index first). Rows need not be normalised.
    Vectorised over leading axes; returns nested Python lists (``list[int]`` for one row).
    A row summing to 0 stays all zeros. Raises ValueError for negative or non-finite input.
    """
    x = np.asarray(row_floats, dtype=np.float64)
    if x.ndim == 0:
        raise ValueError("largest_remainder needs at least one row of numbers")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("largest_remainder needs finite, non-negative numbers")
    if type(total) is not int or total < 0:
        raise ValueError(f"total must be a non-negative integer, not {total!r}")
    n = x.shape[-1]
    sums = x.sum(axis=-1, keepdims=True)  # [..., 1]
    quota = np.divide(x * total, sums, out=np.zeros_like(x), where=sums > 0)  # [..., n]
    base = np.floor(quota)
    short = np.where(sums[..., 0] > 0, total - base.sum(axis=-1), 0)  # [...] units still to hand out
    short = np.clip(np.rint(short), 0, n)
    order = np.argsort(-(quota - base), axis=-1, kind="stable")  # largest remainder first
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(n), order.shape), axis=-1)
    return (base + (rank < short[..., None])).astype(np.int64).tolist()


# ---- words ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class WordAttention:
    """A sentence's attention merged to words, ``[CLS]`` and ``[SEP]`` included."""

    words: tuple[str, ...]  # n words as written; "[CLS]" first, "[SEP]" last
    special: tuple[bool, ...]  # n flags: True for [CLS]/[SEP]
    pieces: tuple[str, ...]  # p word pieces
    piece_words: tuple[int, ...]  # p indexes into ``words``
    attention: np.ndarray  # [L, H, n, n]; rows sum to 1


def piece_word_index(encoding: Encoding) -> tuple[list[str], list[bool], list[int]]:
    """Words (as written), special flags and, per piece, its word index, for an encoding."""
    words = [encoding.tokens[0], *encoding.source_words, encoding.tokens[-1]]
    special = [True] + [False] * len(encoding.source_words) + [True]
    last = len(words) - 1
    piece_words = [0 if i == 0 else last if w is None else w + 1 for i, w in enumerate(encoding.word_ids)]
    return words, special, piece_words


def merge_pieces(attention: np.ndarray, piece_words: Sequence[int]) -> np.ndarray:
    # [..., p, p] piece attention, p word indexes -> [..., n, n] word attention
    """Sum columns and average rows over each word's pieces; rows that summed to 1 still do."""
    owner = np.asarray(piece_words)  # [p]
    n = int(owner.max()) + 1
    membership = np.zeros((len(owner), n), dtype=attention.dtype)  # [p, n] one-hot
    membership[np.arange(len(owner)), owner] = 1
    counts = membership.sum(axis=0)  # [n]
    assert np.all(counts > 0), "every word needs at least one piece"
    mean_rows = (membership / counts).T  # [n, p]
    return mean_rows @ attention @ membership


def word_attention(model: BertModel, sentence: str) -> WordAttention:
    """Run ``sentence`` through ``model`` and merge its attention to words.

    Raises :class:`BuildError` for an empty sentence or one longer than the model reads.
    """
    if not sentence.strip():
        raise BuildError("the sentence is empty")
    encoding, output = run_sentence(model, sentence)
    words, special, piece_words = piece_word_index(encoding)
    return WordAttention(
        words=tuple(words),
        special=tuple(special),
        pieces=encoding.tokens,
        piece_words=tuple(piece_words),
        attention=merge_pieces(output.attentions, piece_words),
    )


# ---- head finder ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeadScore:
    layer: int  # from 0
    head: int  # from 0
    accuracy: float  # hits / total
    hits: int
    total: int


@dataclass(frozen=True)
class RelationReport:
    """How well heads find one relation type, next to the best fixed-offset guess."""

    relation: str
    total: int  # how many gold relations of this type
    best_heads: tuple[HeadScore, ...]  # best first; ties by (layer, head)
    baseline_offset: int  # the k in ±1..±3 that scores best: -1 = the real word just before
    baseline_accuracy: float
    beats_baseline: bool  # the best head's accuracy is strictly higher than the baseline's


def find_heads(
    attention: np.ndarray,  # [L, H, n, n] word-level (floats, or per-mille integers from the cache)
    relations: Sequence[tuple[int, int, str]],  # (query_word_index, key_word_index, relation_type)
    special: Sequence[bool],  # n flags; True words are never predicted (nor may appear in relations)
    top: int = 3,
) -> dict[str, RelationReport]:
    """Score every head on every relation type; returns reports sorted by relation name.

    A head's prediction for a query word is the word it attends to most, *excluding special
    words* ([CLS]/[SEP] soak up much of BERT's attention as a no-op) *and the query itself*
    (a relation always links two different words, and a head's self-attention says nothing
    about which other word it picks). Ties go to the lower word index. A head's score for a
    type is the share of that type's relations whose prediction is the declared key word.

    The baseline always predicts the real (non-special) word ``k`` places away among real
    words, for the best ``k`` in ±1..±3 (ties: nearer first, left before right); a word with
    no word at that offset counts as a miss.

    Indexes are into the word axis of ``attention`` ([CLS] is usually 0). Raises ValueError
    for an index out of range, a special word or a self-relation in ``relations``.
    """
    attention = np.asarray(attention)
    assert attention.ndim == 4 and attention.shape[-1] == attention.shape[-2], "attention must be [L, H, n, n]"
    _, n_heads, n, _ = attention.shape
    special_mask = np.asarray(special, dtype=bool)
    assert special_mask.shape == (n,), f"special must have one flag per word ({n})"
    for q, k, kind in relations:
        for role, index in (("query", q), ("key", k)):
            if not 0 <= index < n:
                raise ValueError(f"{kind}: {role} word index {index} is outside 0..{n - 1}")
            if special_mask[index]:
                raise ValueError(f"{kind}: {role} word index {index} is a special token")
        if q == k:
            raise ValueError(f"{kind}: a word cannot be related to itself (index {q})")

    queries = np.array([r[0] for r in relations], dtype=np.int64)  # [R]
    keys = np.array([r[1] for r in relations], dtype=np.int64)  # [R]
    blocked = special_mask[None, :] | (np.arange(n)[None, :] == queries[:, None])  # [R, n]
    rows = attention[:, :, queries, :].astype(np.float64)  # [L, H, R, n]
    predicted = np.where(blocked, -np.inf, rows).argmax(axis=-1)  # [L, H, R]
    hits = predicted == keys  # [L, H, R]

    real = np.flatnonzero(~special_mask)  # positions of real words, in order
    rank = np.full(n, -1)
    rank[real] = np.arange(len(real))

    reports: dict[str, RelationReport] = {}
    kinds = np.array([r[2] for r in relations], dtype=object)
    for kind in sorted(set(kinds)):
        chosen = kinds == kind
        total = int(chosen.sum())
        head_hits = hits[:, :, chosen].sum(axis=-1)  # [L, H]
        flat = head_hits.ravel()
        order = np.lexsort((np.arange(flat.size), -flat))  # most hits first, then (layer, head)
        best = tuple(
            HeadScore(int(i // n_heads), int(i % n_heads), float(flat[i] / total), int(flat[i]), total)
            for i in order[: max(top, 1)]
        )
        baseline_hits = []
        for offset in BASELINE_OFFSETS:
            target = rank[queries[chosen]] + offset
            valid = (target >= 0) & (target < len(real))
            guess = np.where(valid, real[np.clip(target, 0, len(real) - 1)], -1)
            baseline_hits.append(int(np.sum(guess == keys[chosen])))
        b = int(np.argmax(baseline_hits))  # first maximum = the preferred offset
        baseline_accuracy = baseline_hits[b] / total
        reports[kind] = RelationReport(
            relation=kind,
            total=total,
            best_heads=best,
            baseline_offset=BASELINE_OFFSETS[b],
            baseline_accuracy=baseline_accuracy,
            beats_baseline=best[0].accuracy > baseline_accuracy,
        )
    return reports


# ---- cache ----------------------------------------------------------------------------------------


def checkpoint_sha256(model_dir: Path) -> str:
    """SHA-256 (lowercase hex) of ``model_dir/model.safetensors``; :class:`BuildError` if unreadable."""
    path = Path(model_dir) / "model.safetensors"
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except FileNotFoundError:
        raise BuildError("model.safetensors not found", path=display_path(path)) from None
    except OSError as exc:
        raise BuildError(f"cannot read checkpoint: {exc.strerror}", path=display_path(path)) from None
    return digest.hexdigest()


def empty_cache() -> Cache:
    return {"entries": {}, "format": CACHE_FORMAT, "version": CACHE_VERSION}


def compute_entry(model: BertModel, sentence: str) -> dict:
    """The cache entry of ``sentence`` (see the module docstring), computed with ``model``."""
    view = word_attention(model, sentence)
    return {
        "attention": largest_remainder(view.attention, PER_MILLE),
        "pieces": list(view.pieces),
        "piece_words": list(view.piece_words),
        "special": list(view.special),
        "words": list(view.words),
    }


def entry_attention(entry: dict) -> np.ndarray:  # -> [L, H, n, n] float64, rows sum to 1
    """A cache entry's attention as fractions."""
    return np.asarray(entry["attention"], dtype=np.float64) / PER_MILLE


def cache_status(cache: Cache, sha256: str, sentence: str) -> Literal["hit", "stale", "miss"]:
    """``hit``: cached for this checkpoint; ``stale``: only for other checkpoints; ``miss``: not at all."""
    entries = cache["entries"]
    if sentence in entries.get(sha256, {}):
        return "hit"
    if any(sentence in by_sentence for by_sentence in entries.values()):
        return "stale"
    return "miss"


def cache_lookup(cache: Cache, sha256: str, sentence: str) -> dict | None:
    """The entry for ``sentence`` under checkpoint ``sha256``, or None (a miss or a stale entry)."""
    return cache["entries"].get(sha256, {}).get(sentence)


def refresh_cache(cache: Cache, model: BertModel, sha256: str, sentences: Iterable[str], prune: bool = True) -> tuple[Cache, list[str]]:
    """A new cache holding every sentence of ``sentences`` for checkpoint ``sha256``.

    Hits are reused as they are; misses and stale sentences are computed with ``model``.
    With ``prune`` the result holds nothing else (stale checkpoints and sentences no lab
    uses any more are dropped); without, other entries are kept. Returns the new cache and
    the sentences that were computed. ``cache`` itself is not modified.
    """
    wanted = sorted(set(sentences))
    current = dict(cache["entries"].get(sha256, {}))
    computed = [s for s in wanted if s not in current]
    for sentence in computed:
        current[sentence] = compute_entry(model, sentence)
    if prune:
        entries = {sha256: {s: current[s] for s in wanted}} if wanted else {}
    else:
        entries = {**cache["entries"], sha256: current}
    return {"entries": entries, "format": CACHE_FORMAT, "version": CACHE_VERSION}, computed


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def save_cache(path: Path, cache: Cache) -> None:
    """Write ``cache`` deterministically: sorted keys, one sentence per line, UTF-8, final newline.

    The file is replaced atomically (written beside it, then renamed).
    """
    lines = ["{", '"entries": {']
    shas = sorted(cache["entries"])
    for i, sha in enumerate(shas):
        lines.append(f"{_dumps(sha)}: {{")
        by_sentence = cache["entries"][sha]
        sentences = sorted(by_sentence)
        for j, sentence in enumerate(sentences):
            comma = "," if j < len(sentences) - 1 else ""
            lines.append(f"{_dumps(sentence)}: {_dumps(by_sentence[sentence])}{comma}")
        lines.append("}," if i < len(shas) - 1 else "}")
    lines += ["},", f'"format": {_dumps(CACHE_FORMAT)},', f'"version": {CACHE_VERSION}', "}"]
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _entry_lines(text: str) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """1-based line of each checkpoint key and each (checkpoint, sentence) entry, for files as
    :func:`save_cache` writes them; hand-reformatted files simply find fewer lines."""
    sha_lines: dict[str, int] = {}
    entry_lines: dict[tuple[str, str], int] = {}
    decoder = json.JSONDecoder()
    sha = None
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped.startswith('"'):
            continue
        try:
            key, _ = decoder.raw_decode(stripped)
        except json.JSONDecodeError:
            continue
        if isinstance(key, str) and _SHA_RE.fullmatch(key) and stripped.endswith("{"):
            sha = key
            sha_lines[key] = number
        elif sha is not None and isinstance(key, str):
            entry_lines.setdefault((sha, key), number)
    return sha_lines, entry_lines


def _entry_problems(entry) -> list[str]:
    """Everything wrong with one cache entry (empty list: it is valid)."""
    if not isinstance(entry, dict):
        return ["entry must be an object"]
    problems = []
    missing = [k for k in ENTRY_KEYS if k not in entry]
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if missing:
        problems.append(f"entry lacks {', '.join(missing)}")
    if unknown:
        problems.append(f"entry has unknown key(s) {', '.join(unknown)}")
    if problems:
        return problems
    words, special, pieces, piece_words = entry["words"], entry["special"], entry["pieces"], entry["piece_words"]
    if not (isinstance(words, list) and len(words) >= 2 and all(isinstance(w, str) for w in words)):
        return ["'words' must be a list of at least 2 strings ([CLS] and [SEP])"]
    n = len(words)
    if not (isinstance(special, list) and len(special) == n and all(isinstance(s, bool) for s in special)):
        problems.append(f"'special' must be a list of {n} booleans, one per word")
    if not (isinstance(pieces, list) and all(isinstance(p, str) for p in pieces)):
        problems.append("'pieces' must be a list of strings")
    elif not (
        isinstance(piece_words, list)
        and len(piece_words) == len(pieces)
        and all(type(i) is int for i in piece_words)
        and sorted(set(piece_words)) == list(range(n))
        and piece_words == sorted(piece_words)
    ):
        problems.append(f"'piece_words' must give each of the {len(pieces)} pieces its word, in order, every word 0..{n - 1} at least once")
    try:
        attention = np.asarray(entry["attention"])
    except ValueError:
        attention = np.asarray(0)
    if attention.ndim != 4 or attention.shape[-2:] != (n, n) or 0 in attention.shape:
        problems.append(f"'attention' must be a [layers][heads][{n}][{n}] array")
    elif attention.dtype.kind not in "iu":
        problems.append("'attention' must hold integers (per mille)")
    elif np.any(attention < 0) or np.any(attention.sum(axis=-1) != PER_MILLE):
        problems.append(f"every 'attention' row must be non-negative and sum to exactly {PER_MILLE}")
    return problems


def load_cache(path: Path) -> Cache:
    """Read and validate a cache file; a missing file is an empty cache.

    Raises :class:`ContentError` listing every problem with ``file:line:col`` (the line of the
    offending entry in files written by :func:`save_cache`; line 1 where it cannot be placed),
    or :class:`BuildError` if the file cannot be read.
    """
    path = Path(path)
    shown = display_path(path)
    if not path.exists():
        return empty_cache()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ContentError([Diagnostic(shown, 1, 1, f"cache is not valid UTF-8 (byte offset {exc.start})")]) from None
    except OSError as exc:
        raise BuildError(f"cannot read cache: {exc.strerror}", path=shown) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ContentError([Diagnostic(shown, exc.lineno, exc.colno, f"cache is not valid JSON: {exc.msg}")]) from None

    problems: list[Diagnostic] = []

    def report(line: int, message: str) -> None:
        problems.append(Diagnostic(shown, line, 1, message))

    if not isinstance(data, dict):
        raise ContentError([Diagnostic(shown, 1, 1, "cache must be a JSON object")])
    if data.get("format") != CACHE_FORMAT:
        report(1, f"'format' must be {CACHE_FORMAT!r}")
    if data.get("version") != CACHE_VERSION:
        report(1, f"'version' must be {CACHE_VERSION} (this cache says {data.get('version')!r}); rebuild it")
    unknown = sorted(set(data) - {"entries", "format", "version"})
    if unknown:
        report(1, f"unknown top-level key(s) {', '.join(unknown)}")
    entries = data.get("entries")
    if not isinstance(entries, dict):
        report(1, "'entries' must be an object mapping checkpoint SHA-256 to sentences")
        raise ContentError(problems)
    sha_lines, entry_lines = _entry_lines(text)
    for sha, by_sentence in entries.items():
        line = sha_lines.get(sha, 1)
        if not _SHA_RE.fullmatch(sha):
            report(line, f"{sha!r} is not a SHA-256 (64 lowercase hex digits)")
        if not isinstance(by_sentence, dict):
            report(line, "a checkpoint's entries must be an object mapping sentences to entries")
            continue
        expected: tuple[tuple[int, ...], str] | None = None  # (layers, heads) of the first valid entry
        for sentence, entry in by_sentence.items():
            entry_line = entry_lines.get((sha, sentence), line)
            if not sentence.strip():
                report(entry_line, "an entry's sentence is empty")
            entry_problems = _entry_problems(entry)
            for problem in entry_problems:
                report(entry_line, f"{sentence[:40]!r}: {problem}")
            if entry_problems:
                continue
            layers_heads = np.shape(entry["attention"])[:2]
            if expected is None:
                expected = (layers_heads, sentence)
            elif layers_heads != expected[0]:
                (layers, heads), other = expected
                report(
                    entry_line,
                    f"{sentence[:40]!r}: {layers_heads[0]} layers x {layers_heads[1]} heads, but {other[:40]!r} "
                    f"has {layers} x {heads}; one checkpoint has one shape",
                )
    if problems:
        raise ContentError(problems)
    return data


# ---- inspection (for `labs attention`) -------------------------------------------------------------


def _short(token: str, width: int) -> str:
    return token if len(token) <= width else token[: width - 1] + "…"


def _patterns(weights: np.ndarray) -> dict[str, np.ndarray]:  # [..., n, n] -> {pattern: [...] mean share}
    """Mean share (over query rows) of attention to [CLS], [SEP], self, previous and next token."""
    n = weights.shape[-1]
    diagonal = np.diagonal(weights, axis1=-2, axis2=-1)
    return {
        "CLS": weights[..., :, 0].mean(axis=-1),
        "SEP": weights[..., :, n - 1].mean(axis=-1),
        "self": diagonal.mean(axis=-1),
        "prev": np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).mean(axis=-1),
        "next": np.diagonal(weights, offset=1, axis1=-2, axis2=-1).mean(axis=-1),
    }


def _summary_grid(tokens: Sequence[str], attentions: np.ndarray) -> str:  # [L, H, n, n]
    n_layers, n_heads = attentions.shape[:2]
    patterns = _patterns(attentions)  # name -> [L, H]
    names = ["self", "prev", "next"]
    stacked = np.stack([patterns[name] for name in names])  # [3, L, H]
    best = stacked.argmax(axis=0)  # [L, H]
    to_special = patterns["CLS"] + patterns["SEP"]  # [L, H]
    cells = [
        [
            f"{names[best[l, h]]} {round(100 * stacked[best[l, h], l, h]):>2}{'*' if to_special[l, h] > 0.5 else ' '}"
            for h in range(n_heads)
        ]
        for l in range(n_layers)
    ]
    width = max(len(c) for row in cells for c in row) + 2
    lines = [
        f"{len(tokens)} word pieces: {' '.join(tokens)}",
        f"{n_layers} layers x {n_heads} heads. Each cell: the head's strongest positional habit, as the mean share",
        "of attention (%) a token gives to itself (self), to the token before (prev) or after (next);",
        "* = more than half of the head's attention goes to [CLS]/[SEP], BERT's usual 'no-op'.",
        "Use --layer L for a layer's heads in detail, --layer L --head H for the full table.",
        "",
        "        " + "".join(f"{'head ' + str(h):>{width}}" for h in range(n_heads)),
    ]
    lines += [f"layer {l:<2}" + "".join(f"{c:>{width}}" for c in cells[l]) for l in range(n_layers)]
    return "\n".join(lines) + "\n"


def _layer_breakdown(tokens: Sequence[str], weights: np.ndarray, layer: int, n_layers: int) -> str:  # [H, n, n]
    n_heads, n, _ = weights.shape
    patterns = _patterns(weights)  # name -> [H]
    real = np.ones(n, dtype=bool)
    real[[0, n - 1]] = False
    lines = [
        f"Layer {layer} (of 0-{n_layers - 1}): mean share of each head's attention (%) going to",
        "[CLS], [SEP], the token itself, the previous and the next token; and its strongest link",
        "between two real tokens. Use --head H for the full table.",
        "",
        f"{'head':>4}  {'[CLS]':>5}  {'[SEP]':>5}  {'self':>5}  {'prev':>5}  {'next':>5}  strongest link",
    ]
    for h in range(n_heads):
        link = "-"
        if real.sum() >= 2:
            inner = np.where(real[:, None] & real[None, :] & ~np.eye(n, dtype=bool), weights[h], -1.0)
            q, k = np.unravel_index(int(inner.argmax()), inner.shape)
            link = f"{tokens[int(q)]} -> {tokens[int(k)]} {round(100 * float(weights[h, q, k]))}%"
        shares = "  ".join(f"{round(100 * float(patterns[name][h])):>5}" for name in ("CLS", "SEP", "self", "prev", "next"))
        lines.append(f"{h:>4}  {shares}  {link}")
    return "\n".join(lines) + "\n"


def _matrix_table(tokens: Sequence[str], weights: np.ndarray, layer: int, head: int) -> str:  # [n, n]
    percent = largest_remainder(weights, 100)
    col = max(4, min(8, max(len(t) for t in tokens))) + 1
    label = min(16, max(len(t) for t in tokens)) + 4
    lines = [
        f"Layer {layer}, head {head}: row = query token, columns = where its attention goes, in % (rows sum to 100).",
        "",
        " " * label + "".join(f"{_short(t, col - 1):>{col}}" for t in tokens),
    ]
    for i, (token, row) in enumerate(zip(tokens, percent)):
        cells = "".join(f"{(str(v) if v else '.'):>{col}}" for v in row)
        lines.append(f"{i:>3} {_short(token, label - 4):<{label - 4}}{cells}")
    return "\n".join(lines) + "\n"


def inspect_attention(
    model_dir: Path,
    sentence: str,
    layer: int | None = None,
    head: int | None = None,
    as_json: bool = False,
) -> str:
    """What ``labs attention`` prints: a checkpoint's attention over one sentence's word pieces.

    - ``as_json``: ``{"tokens": [...], "attentions": [layers][heads][n][n]}`` over the word
      pieces, [CLS]/[SEP] included, weights rounded to 6 decimals; always every layer and
      head, so indexes stay meaningful (``layer``/``head`` are still checked).
    - no layer/head: a grid of every head's strongest positional habit (self, previous or
      next token) with its share, starred where over half goes to [CLS]/[SEP];
    - ``layer`` only: that layer's heads, each with all five shares and its strongest link;
    - ``layer`` and ``head``: the full table, tokens as rows and columns, in %.

    Raises :class:`BuildError` for a bad model folder (naming the file), an empty sentence,
    one longer than the model reads, a layer/head out of range, or a head without a layer.
    """
    if not sentence.strip():
        raise BuildError("the sentence is empty")
    model = load_model(Path(model_dir))
    n_layers, n_heads = model.config.num_hidden_layers, model.config.num_attention_heads
    for name, value, count in (("layer", layer, n_layers), ("head", head, n_heads)):
        if value is not None and (type(value) is not int or not 0 <= value < count):
            raise BuildError(f"{name} {value!r} does not exist: this model has {name}s 0-{count - 1}")
    if head is not None and layer is None and not as_json:
        raise BuildError("a head is numbered within its layer: give --layer too")
    encoding, output = run_sentence(model, sentence)
    tokens = list(encoding.tokens)
    attentions = output.attentions  # [L, H, n, n]
    if as_json:
        return json.dumps(
            {"tokens": tokens, "attentions": np.round(attentions.astype(np.float64), 6).tolist()},
            ensure_ascii=False,
        )
    if layer is None:
        return _summary_grid(tokens, attentions)
    if head is None:
        return _layer_breakdown(tokens, attentions[layer], layer, n_layers)
    return _matrix_table(tokens, attentions[layer, head], layer, head)
