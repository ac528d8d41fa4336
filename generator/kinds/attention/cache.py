"""The real-heads cache file: a lab's pretrained-model attention, kept so builds need no checkpoint.

Cache file format (JSON, UTF-8, written by :func:`save_cache`)::

    {
    "entries": {
    "<sha256 of model.safetensors, 64 lowercase hex>": {
    "<sentence text>": {"attention":[[[[...]]]],"pieces":[...],"piece_words":[...],"special":[...],"words":[...]},
    ... one sentence per line, sorted ...
    }
    },
    "drift": {
    "<model key of an 8-bit bundle, 64 lowercase hex>": {
    "<sentence text>": 1.2345,
    ... one sentence per line, sorted ...
    }
    },
    "report": {"key": "<64 hex>", "finder": [...], "learned": {...}},
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

``report`` (optional; written by ``labs heads``): the head finder's report and the learned-head
matches the build would compute from these entries and the lab's sentences and relations, under a
key of all of it (:mod:`.headreport`); a build whose key is the same reads them.

``drift`` (optional; written by ``labs heads`` for a lab whose ``model:`` names a ``bundle:``):
for each sentence, the largest difference in points between the bundle's 8-bit model's
word-level attention and the ``attention`` above, under the bundle's
:func:`~generator.runtime.bundle.model_key` (:mod:`.inpage`). A build reads it instead of running
the 8-bit model.

A lookup is a *hit* when the entry exists under the current checkpoint's SHA-256, *stale*
when the sentence is cached only under other checkpoints, a *miss* otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

import numpy as np

from generator.models.bert import BertModel
from generator.kinds.attention.permille import PendingPerMille, per_mille_arrays
from generator.kinds.attention.realheads import PER_MILLE, largest_remainder, word_attention
from generator.kinds import BuildError, ContentError, Diagnostic, display_path, regular_problem
from generator.kinds.helpers import EncodedArray

CACHE_FORMAT = "attention-labs/real-heads-cache"
CACHE_VERSION = 1
ENTRY_KEYS = ("attention", "pieces", "piece_words", "special", "words")
_SHA_RE = re.compile(r"[0-9a-f]{64}")

Cache = dict  # {"entries": {sha: {sentence: entry}}, "format": CACHE_FORMAT, "version": CACHE_VERSION}


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


def drift_of(cache: Cache, key: str) -> dict[str, float]:
    """The stored 8-bit figures of the bundle model ``key``: sentence -> points (empty if none)."""
    return cache.get("drift", {}).get(key, {})


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
    lines.append("},")
    drift = {key: figures for key, figures in sorted(cache.get("drift", {}).items()) if figures}
    if drift:
        lines.append('"drift": {')
        for i, key in enumerate(drift):
            lines.append(f"{_dumps(key)}: {{")
            texts = sorted(drift[key])
            lines += [f"{_dumps(text)}: {_dumps(drift[key][text])}{',' if j < len(texts) - 1 else ''}"
                      for j, text in enumerate(texts)]
            lines.append("}," if i < len(drift) - 1 else "}")
        lines.append("},")
    if cache.get("report") is not None:
        report = cache["report"]
        ordered = {"key": report["key"], "finder": report["finder"], "learned": report["learned"]}
        # Unsorted: the key digests the numbers in the order they were made, which the page keeps.
        lines.append(f'"report": {json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))},')
    lines += [f'"format": {_dumps(CACHE_FORMAT)},', f'"version": {CACHE_VERSION}', "}"]
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
    return _check_entry(entry)[0]


def _check_entry(entry, checked: bool = False) -> tuple[list[str], np.ndarray | None]:
    """Everything wrong with one cache entry, and its attention as a read-only int16 array
    ([layers, heads, n, n] per mille) when it is valid. The nested lists are turned into one
    array once, and every check on them is done on the array. ``checked``: the entry comes from
    :func:`_decode_saved`, whose attention is already such an array, its numbers checked."""
    if not isinstance(entry, dict):
        return ["entry must be an object"], None
    problems = []
    missing = [k for k in ENTRY_KEYS if k not in entry]
    unknown = sorted(set(entry) - set(ENTRY_KEYS))
    if missing:
        problems.append(f"entry lacks {', '.join(missing)}")
    if unknown:
        problems.append(f"entry has unknown key(s) {', '.join(unknown)}")
    if problems:
        return problems, None
    words, special, pieces, piece_words = entry["words"], entry["special"], entry["pieces"], entry["piece_words"]
    if not (isinstance(words, list) and len(words) >= 2 and all(isinstance(w, str) for w in words)):
        return ["'words' must be a list of at least 2 strings ([CLS] and [SEP])"], None
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
    if checked:
        return problems, None if problems else entry["attention"]
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
    if problems:
        return problems, None
    weights = attention.astype(np.int16)  # 0..1000 fits; a quarter of int64's memory
    weights.flags.writeable = False
    return [], weights


def _decode_saved(text: str, fallback: Callable[[str, str], np.ndarray] | None = None) -> Cache | None:
    """The cache in ``text`` when it is laid out exactly as :func:`save_cache` writes it, with each
    entry's attention as a read-only int16 array whose rows are known to sum to 1000; None for
    anything else (then :mod:`json` decodes it and reports what is wrong). Instead of :mod:`json`'s
    nested lists of 10,000 per-mille integers a sentence, turned into an array after, the integers
    of every entry are read at once by NumPy straight from the text's bytes
    (:func:`.permille.per_mille_arrays`), after checking that the brackets around them are
    exactly those of a [layers][heads][n][n] array. What it saves of a build: ``docs/benchmarks.md``, "Stand-ins for
    a library". With ``fallback`` (checkpoint, sentence -> the array read the careful way), each
    attention is left a :class:`.permille.PendingPerMille`, decoded when used."""
    stops = []  # where each line ends (lines are found, not split: str.split copied 560 KB slowly)
    at = text.find("\n")
    while at >= 0:
        stops.append(at)
        at = text.find("\n", at + 1)
    starts = [0] + [stop + 1 for stop in stops]
    stops.append(len(text))

    def line(k: int) -> str:  # a short line's text (never an entry's)
        return text[starts[k]:stops[k]]

    def is_line(k: int, expected: str) -> bool:
        return stops[k] - starts[k] == len(expected) and text.startswith(expected, starts[k])

    if len(starts) < 7 or not (is_line(0, "{") and is_line(1, '"entries": {') and is_line(-2, "}") and is_line(-1, "")):
        return None
    decoder = json.JSONDecoder()
    entries: dict[str, dict] = {}
    texts: list[str] = []  # each entry's attention, in the order of ``found``
    found: list[dict] = []
    keys: list[tuple[str, str]] = []  # (checkpoint, sentence) of each
    i = 2
    try:
        while not is_line(i, "},"):
            if not text.endswith(": {", starts[i], stops[i]):
                return None
            sha = json.loads(text[starts[i]:stops[i] - 3])
            by_sentence: dict[str, dict] = {}
            i += 1
            while True:
                sentence, end = decoder.raw_decode(text, starts[i])
                if not isinstance(sentence, str) or end > stops[i] or not text.startswith(": ", end):
                    return None
                last = text[stops[i] - 1] != ","
                split = _split_entry(text, end + 2, stops[i] if last else stops[i] - 1)
                if split is None:
                    return None
                texts.append(split[0])
                found.append(split[1])
                keys.append((sha, sentence))
                by_sentence[sentence] = split[1]
                i += 1
                if last:
                    break
            if not isinstance(sha, str) or not (is_line(i, "}") or is_line(i, "},")):
                return None
            entries[sha] = by_sentence
            i += 1
            if is_line(i - 1, "}") and not is_line(i, "},"):
                return None
        rest = json.loads("{" + "".join(line(k) for k in range(i + 1, len(starts))))
    except (ValueError, IndexError):
        return None
    if not isinstance(rest, dict) or "entries" in rest:
        return None
    if fallback is not None:
        for entry, attention_text, (sha, sentence) in zip(found, texts, keys):
            entry["attention"] = PendingPerMille(attention_text, len(entry["words"]),
                                                 lambda sha=sha, sentence=sentence: fallback(sha, sentence))
        return {"entries": entries, **rest}
    arrays = per_mille_arrays(texts, [len(entry["words"]) for entry in found])
    if arrays is None:
        return None
    for entry, attention, attention_text in zip(found, arrays, texts):
        entry["attention"] = EncodedArray.of(attention, attention_text)  # the text json writes for these numbers
    return {"entries": entries, **rest}


def _split_entry(line: str, start: int, stop: int) -> tuple[str, dict] | None:
    """One entry as :func:`save_cache` writes it (``{"attention":[[[[…]]]],"pieces":…}``), at
    ``line[start:stop]`` (of the file's text): the text of its attention, and the rest decoded (its ``attention`` key
    first, still to fill); or None. The attention ends at the last ``]]]],"`` (only brackets,
    commas and digits may come before it; where a word of the rest holds one, they do not)."""
    prefix = '{"attention":'
    end = line.rfind(']]]],"', start + len(prefix), stop)
    if not line.startswith(prefix, start) or end < 0:
        return None
    entry = json.loads("{" + line[end + 5:stop])
    words = entry.get("words") if isinstance(entry, dict) else None
    if "attention" in entry or not isinstance(words, list) or not words:
        return None
    return line[start + len(prefix):end + 4], {"attention": None, **entry}


def load_cache(path: Path) -> Cache:
    """Read and validate a cache file; a missing file is an empty cache.

    Raises :class:`ContentError` listing every problem with ``file:line:col`` (the line of the
    offending entry in files written by :func:`save_cache`; line 1 where it cannot be placed),
    or :class:`BuildError` if the file cannot be read.
    """
    path = Path(path)
    raw = _read(path)
    return empty_cache() if raw is None else _parse(path, raw)[0]


def _read(path: Path) -> bytes | None:
    """A cache file's bytes, None when there is none; :class:`BuildError` if it cannot be read,
    ContentError for a FIFO, a device or a socket (never opened: it could block or never end)."""
    problem = regular_problem(path)
    if problem is not None:
        raise ContentError([problem])
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BuildError(f"cannot read cache: {exc.strerror}", path=display_path(path)) from None


# Caches already read by this process, with the bytes they were read from: a file is decoded and
# validated once however many labs or rebuilds read it (bytes are compared, not hashed: comparing
# stops at the first difference, or at once when the lengths differ, where hashing reads every byte).
# Kept by size, the most recent first: lab 07's file is 3.2 MB of JSON (70 sentences), about 9 MB
# in memory with its text and arrays, and a build worker reads each lab's file once, for its own
# compute — eight kept were 75 MB of each worker's memory. The newest is always kept; the ones it
# displaces go before it is decoded, not after (a worker then never holds two labs' files at once).
_LOADED: list[tuple[bytes, bool, Cache]] = []  # (bytes, whether its numbers are decoded when used, cache)
_LOADED_BYTES = 4 << 20  # of the files' bytes


def load_cache_arrays(path: Path, lazy: bool = False) -> Cache:
    """:func:`load_cache`, with each entry's ``attention`` as a read-only int16 NumPy array
    ``[layers, heads, n, n]`` (per mille). Read once per distinct file content and shared:
    callers must not modify what it returns. Raises as :func:`load_cache`.

    ``lazy``: a file in :func:`save_cache`'s layout is checked as a whole except for its numbers,
    each entry's are a :class:`.permille.PendingPerMille`, decoded and checked when used, and
    entries are not checked against each other for the same layers and heads: for a build that
    reads a stored report, whose key holds those numbers' text (:mod:`.headreport`); any other
    use of every entry's numbers calls this without ``lazy``. A cache read without ``lazy`` serves
    a later call with it."""
    path = Path(path)
    raw = _read(path)
    if raw is None:
        return empty_cache()
    cached = next((cache for seen, pending, cache in _LOADED if seen == raw and (lazy or not pending)), None)
    if cached is None:
        _LOADED[:] = [kept for kept in _LOADED if kept[0] != raw]  # a lazy read of it, replaced
        while _LOADED and sum(len(kept[0]) for kept in _LOADED) + len(raw) > _LOADED_BYTES:
            _LOADED.pop(0)
        data, arrays = _parse(path, raw, fast=True, lazy=lazy)
        cached = {**data, "entries": {sha: {sentence: {**entry, "attention": arrays[sha, sentence]}
                                            for sentence, entry in by_sentence.items()}
                                      for sha, by_sentence in data["entries"].items()}}
        _LOADED.append((raw, lazy, cached))
    return cached


def _parse(path: Path, raw: bytes, fast: bool = False, lazy: bool = False) -> tuple[Cache, dict[tuple[str, str], np.ndarray]]:
    """Decode and validate a cache file's bytes: the cache, and each entry's attention array.
    With ``fast``, a file in exactly :func:`save_cache`'s layout is decoded by :func:`_decode_saved`
    (its entries' attention already arrays, or with ``lazy`` pending); any other file by :mod:`json`."""
    shown = display_path(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContentError([Diagnostic(shown, 1, 1, f"cache is not valid UTF-8 (byte offset {exc.start})")]) from None
    try:
        careful = (lambda sha, sentence: _parse(path, raw, fast=True)[1][sha, sentence]) if lazy else None
        data = _decode_saved(text, careful) if fast else None
    except (ValueError, RecursionError):  # read again below, to say where
        data = None
    checked = data is not None
    if data is None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ContentError([Diagnostic(shown, exc.lineno, exc.colno, f"cache is not valid JSON: {exc.msg}")]) from None
        except (ValueError, RecursionError) as exc:  # a number of thousands of digits, or nesting thousands deep
            raise ContentError([_unreadable_json(shown, text, exc)]) from None

    problems: list[Diagnostic] = []
    lines: list[tuple[dict, dict]] = []  # _entry_lines(text), found when there is a problem to place

    def report(line: int | tuple, message: str) -> None:
        """``line``: a number, or (checkpoint,) or (checkpoint, sentence) to find its line."""
        if isinstance(line, tuple):
            if not lines:
                lines.append(_entry_lines(text))
            sha_lines, entry_lines = lines[0]
            line = entry_lines.get(line, sha_lines.get(line[0], 1)) if len(line) == 2 else sha_lines.get(line[0], 1)
        problems.append(Diagnostic(shown, line, 1, message))

    if not isinstance(data, dict):
        raise ContentError([Diagnostic(shown, 1, 1, "cache must be a JSON object")])
    if data.get("format") != CACHE_FORMAT:
        report(1, f"'format' must be {CACHE_FORMAT!r}")
    if data.get("version") != CACHE_VERSION:
        report(1, f"'version' must be {CACHE_VERSION} (this cache says {data.get('version')!r}); rebuild it")
    unknown = sorted(set(data) - {"entries", "drift", "report", "format", "version"})
    if unknown:
        report(1, f"unknown top-level key(s) {', '.join(unknown)}")
    drift_problem = _drift_problem(data.get("drift", {}))
    if drift_problem is not None:
        report(text.count("\n", 0, max(0, text.find('"drift"'))) + 1, drift_problem)
    report_problem = _report_problem(data["report"]) if "report" in data else None
    if report_problem is not None:
        report(text.count("\n", 0, max(0, text.find('\n"report"') + 1)) + 1, report_problem)  # a word may be "report"
    entries = data.get("entries")
    if not isinstance(entries, dict):
        report(1, "'entries' must be an object mapping checkpoint SHA-256 to sentences")
        raise ContentError(problems)
    arrays: dict[tuple[str, str], np.ndarray] = {}
    for sha, by_sentence in entries.items():
        line = (sha,)
        if not _SHA_RE.fullmatch(sha):
            report(line, f"{sha!r} is not a SHA-256 (64 lowercase hex digits)")
        if not isinstance(by_sentence, dict):
            report(line, "a checkpoint's entries must be an object mapping sentences to entries")
            continue
        expected: tuple[tuple[int, ...], str] | None = None  # (layers, heads) of the first valid entry
        for sentence, entry in by_sentence.items():
            entry_line = (sha, sentence)
            if not sentence.strip():
                report(entry_line, "an entry's sentence is empty")
            entry_problems, attention = _check_entry(entry, checked)
            for problem in entry_problems:
                report(entry_line, f"{sentence[:40]!r}: {problem}")
            if attention is None:
                continue
            arrays[sha, sentence] = attention
            if isinstance(attention, PendingPerMille):
                continue
            layers_heads = attention.shape[:2]
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
    return data, arrays


def _report_problem(report) -> str | None:
    """What is wrong with a file's ``report`` section as a shape, or None (its numbers are checked
    by their key, against the inputs of the build that reads them: :mod:`.headreport`)."""
    if not isinstance(report, dict) or set(report) != {"key", "finder", "learned"}:
        return "'report' must be an object with 'key', 'finder' and 'learned' (written by labs heads)"
    if not isinstance(report["key"], str) or len(report["key"]) != 64:
        return "'report': 'key' must be 64 lowercase hex digits"
    if not isinstance(report["finder"], list) or not isinstance(report["learned"], dict):
        return "'report': 'finder' must be a list and 'learned' an object"
    return None


def _drift_problem(drift) -> str | None:
    """What is wrong with a cache's ``drift`` section, or None."""
    if not isinstance(drift, dict):
        return "'drift' must be an object mapping a bundle's model key to sentences"
    for key, figures in drift.items():
        if not _SHA_RE.fullmatch(key):
            return f"'drift': {key!r} is not a model key (64 lowercase hex digits)"
        if not isinstance(figures, dict):
            return "'drift': a model key's figures must be an object mapping sentences to points"
        for text, points in figures.items():
            if isinstance(points, bool) or not isinstance(points, (int, float)) or not 0 <= points <= 100:
                return f"'drift': {text[:40]!r}: {points!r} is not a number of points from 0 to 100"
    return None


_LONG_NUMBER = re.compile(r"[0-9]{4000,}")


def _unreadable_json(shown: str, text: str, exc: Exception) -> Diagnostic:
    """Where valid JSON is beyond what can be read: the first huge number, or where nesting gets too deep."""
    found = _LONG_NUMBER.search(text) if isinstance(exc, ValueError) else None
    if found is not None:
        at, message = found.start(), "cache is not a real-heads cache: a number of thousands of digits"
    else:
        depth, at = 0, 0
        for at, char in enumerate(text):
            depth += char in "[{"
            depth -= char in "]}"
            if depth > 500:
                break
        message = "cache is not a real-heads cache: values nested hundreds of levels deep"
    line = text.count("\n", 0, at) + 1
    return Diagnostic(shown, line, at - (text.rfind("\n", 0, at) + 1) + 1, message)
