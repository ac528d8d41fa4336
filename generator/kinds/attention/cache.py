"""The real-heads cache file: a lab's pretrained-model attention, kept so builds need no checkpoint.

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
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import numpy as np

from generator.attention.bert import BertModel
from generator.attention.realheads import PER_MILLE, largest_remainder, word_attention
from generator.errors import BuildError, ContentError, Diagnostic, display_path
from generator.render import EncodedArray

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
    return _check_entry(entry)[0]


def _check_entry(entry) -> tuple[list[str], np.ndarray | None]:
    """Everything wrong with one cache entry, and its attention as a read-only int16 array
    ([layers, heads, n, n] per mille) when it is valid. The nested lists are turned into one
    array once, and every check on them is done on the array."""
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
    if isinstance(entry["attention"], EncodedArray) and entry["attention"].json is not None:
        weights = EncodedArray.of(weights, entry["attention"].json)  # the same numbers, the same text
    weights.flags.writeable = False
    return [], weights


_ATTENTION_TEXT = re.compile(r"[0-9,\[\]]+")
_NO_BRACKETS = str.maketrans("", "", "[]")
_NO_DIGITS = str.maketrans("", "", "0123456789")


def _decode_saved(text: str) -> Cache | None:
    """The cache in ``text`` when it is laid out exactly as :func:`save_cache` writes it, with each
    entry's attention as an int64 array; None for anything else (then :mod:`json` decodes it and
    reports what is wrong). Decoding 10,000 per-mille integers per sentence with :mod:`json`
    and then turning the nested lists into an array was most of a lab's load; here the integers
    are read by NumPy straight from the text, after checking that the brackets around them are
    exactly those of a [layers][heads][n][n] array."""
    lines = text.split("\n")
    if len(lines) < 7 or lines[:2] != ["{", '"entries": {'] or lines[-2:] != ["}", ""]:
        return None
    decoder = json.JSONDecoder()
    entries: dict[str, dict] = {}
    i = 2
    try:
        while lines[i] != "},":
            if not lines[i].endswith(": {"):
                return None
            sha = json.loads(lines[i][:-3])
            by_sentence: dict[str, dict] = {}
            i += 1
            while True:
                line = lines[i]
                sentence, end = decoder.raw_decode(line)
                if not isinstance(sentence, str) or line[end:end + 2] != ": ":
                    return None
                last = not line.endswith(",")
                entry = _decode_entry(line[end + 2:] if last else line[end + 2:-1])
                if entry is None:
                    return None
                by_sentence[sentence] = entry
                i += 1
                if last:
                    break
            if not isinstance(sha, str) or lines[i] not in ("}", "},"):
                return None
            entries[sha] = by_sentence
            i += 1
            if lines[i - 1] == "}" and lines[i] != "},":
                return None
        rest = json.loads("{" + "".join(lines[i + 1:]))
    except (ValueError, IndexError):
        return None
    if not isinstance(rest, dict) or "entries" in rest:
        return None
    return {"entries": entries, **rest}


def _decode_entry(value: str) -> dict | None:
    """One entry as :func:`save_cache` writes it (``{"attention":[[[[…]]]],"pieces":…}``), or None."""
    prefix = '{"attention":'
    end = value.find(']]]],"', len(prefix))
    if not value.startswith(prefix) or end < 0:
        return None
    text = value[len(prefix):end + 4]
    entry = json.loads("{" + value[end + 5:])
    words = entry.get("words") if isinstance(entry, dict) else None
    if "attention" in entry or not isinstance(words, list) or not words or not _ATTENTION_TEXT.fullmatch(text):
        return None
    skeleton = text.translate(_NO_DIGITS)
    numbers = np.fromstring(text.translate(_NO_BRACKETS), dtype=np.int64, sep=",")
    # Every number as JSON writes it (no leading zeros), below 10,000: its digits are then
    # exactly 1 + [>= 10] + [>= 100] + [>= 1000] (anything else is left to json to judge).
    if numbers.size == 0 or numbers.max() >= 10_000 or \
            int(numbers.size + (numbers >= 10).sum() + (numbers >= 100).sum() + (numbers >= 1000).sum()) \
            != len(text) - len(skeleton):
        return None
    n = len(words)
    layers = text.count("]]],[[[") + 1
    if numbers.size % (n * n * layers):
        return None
    heads = numbers.size // (n * n * layers)
    row = "[" + "," * (n - 1) + "]"
    matrix = "[" + ",".join([row] * n) + "]"
    layer = "[" + ",".join([matrix] * heads) + "]"
    if skeleton != "[" + ",".join([layer] * layers) + "]":
        return None
    # The text is exactly what json writes for these numbers (checked above): it travels with them.
    return {"attention": EncodedArray.of(numbers.reshape(layers, heads, n, n), text), **entry}


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
    """A cache file's bytes, None when there is none; :class:`BuildError` if it cannot be read."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BuildError(f"cannot read cache: {exc.strerror}", path=display_path(path)) from None


# Caches already read by this process, by the SHA-256 of their bytes: a file is decoded and
# validated once however many labs or rebuilds read it. Small: a lab's cache is up to ~600 KB of
# JSON and ~300 KB as arrays (eighteen sentences), and only the most recent few are kept — a
# build worker reads each lab's file once, and 64 of them were 30 MB of its memory.
_LOADED: dict[str, Cache] = {}
_LOADED_MAX = 8


def load_cache_arrays(path: Path) -> Cache:
    """:func:`load_cache`, with each entry's ``attention`` as a read-only int16 NumPy array
    ``[layers, heads, n, n]`` (per mille). Read once per distinct file content and shared:
    callers must not modify what it returns. Raises as :func:`load_cache`."""
    path = Path(path)
    raw = _read(path)
    if raw is None:
        return empty_cache()
    key = hashlib.sha256(raw).hexdigest()
    cached = _LOADED.get(key)
    if cached is None:
        data, arrays = _parse(path, raw, fast=True)
        cached = {**data, "entries": {sha: {sentence: {**entry, "attention": arrays[sha, sentence]}
                                            for sentence, entry in by_sentence.items()}
                                      for sha, by_sentence in data["entries"].items()}}
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[key] = cached
    return cached


def _parse(path: Path, raw: bytes, fast: bool = False) -> tuple[Cache, dict[tuple[str, str], np.ndarray]]:
    """Decode and validate a cache file's bytes: the cache, and each entry's attention array.
    With ``fast``, a file in exactly :func:`save_cache`'s layout is decoded by :func:`_decode_saved`
    (its entries' attention already arrays); any other file by :mod:`json`."""
    shown = display_path(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContentError([Diagnostic(shown, 1, 1, f"cache is not valid UTF-8 (byte offset {exc.start})")]) from None
    data = _decode_saved(text) if fast else None
    if data is None:
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
    arrays: dict[tuple[str, str], np.ndarray] = {}
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
            entry_problems, attention = _check_entry(entry)
            for problem in entry_problems:
                report(entry_line, f"{sentence[:40]!r}: {problem}")
            if attention is None:
                continue
            arrays[sha, sentence] = attention
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
