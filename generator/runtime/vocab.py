"""The tokenizer's data for the page: the vocabulary, the switches and the character classes.

The JavaScript tokenizer (``static/wordpiece.js``) is only the algorithm of
:mod:`generator.models.wordpiece`. Every character class it needs comes from this module,
computed when the site is built from the predicates of ``wordpiece.py`` and the
:mod:`unicodedata` of the Python that runs the build (Unicode 14 for Python 3.11), never from
the browser's own Unicode tables, which follow whatever Unicode version the browser was built
with. :func:`vocab_script` writes them all into one classic script::

    self.Labs.runtimeData[key] = {format, pieces, separator, ids?, lower_case, strip_accents, ...,
                                    unicode: {version, dropped, whitespace, space, ...}}

and ``Labs.runtime.WordPiece(Labs.runtimeData[key])`` turns it into a tokenizer.

What the browser still does itself is NFC and NFD (``String.prototype.normalize``): the text is
normalised only after cleaning, which drops every code point that is unassigned in the build's
Unicode (category Cn), and Unicode's normalisation stability policy fixes the normal forms of
assigned characters for every later version (a browser on an older Unicode than the build's
could differ only on the characters added in between). Lower-casing is not left to the browser: per
character, Chromium agrees with Python today, but its final-sigma rule asks whether the letters
around a capital sigma are "cased" or "case-ignorable" in its own, newer Unicode, where a few
characters changed (Chromium 156 reads U+0295 ʕ as Lo, no longer cased, and U+1171E as Mc, no
longer a case-ignorable Mn, so ``"AʕΣ".toLowerCase()`` ends in σ where Python writes ς), and an
older browser would not lower-case the letters Unicode 14 added. So the page gets Python's
lower-case mapping and Python's answer to those two questions, as tables.

The tables follow the build's Python, so the script is byte-identical for the same vocabulary
and switches under the same Unicode version (Python 3.11: 14.0.0; 3.12: 15.0.0), and a build
under a newer Python gets that Python's tables along with its Python tokenizer.

A table of code points is a flat list ``[start, length, gap, length, gap, ...]`` of ranges in
order, each ``gap`` counted from the end of the range before: a few hundred numbers per class.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from generator.models.wordpiece import (
    WordPieceTokenizer,
    is_chinese_char,
    is_control,
    is_punctuation,
    is_whitespace,
)
from generator.webfiles import json_for_script

WORDPIECE_JS = Path(__file__).parent / "static" / "wordpiece.js"  # the tokenizer: Labs.runtime.WordPiece
DATA_FORMAT = 1  # what wordpiece.js checks before it reads the data; raise it when the shape changes
_CODE_POINTS = 0x110000
_CAPITAL_SIGMA, _FINAL_SIGMA = "\u03a3", "\u03c2"
_OTHER = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})  # the categories C*
_MARKS = frozenset({"Mn", "Mc", "Me"})  # the categories M*
_CATEGORY_NAMES = ("Cc", "Cf", "Cn", "Co", "Cs", "Ll", "Lm", "Lo", "Lt", "Lu", "Mc", "Me", "Mn", "Nd", "Nl",
                   "No", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "Sc", "Sk", "Sm", "So", "Zl", "Zp", "Zs")


def _kept_flags(predicate: Callable[[str], bool], kept: np.ndarray) -> bytes:
    """One byte per code point: 1 or 0 as ``predicate`` says for the ``kept`` code points, 2 (either
    will do) for those cleaning drops, which never reach the tables made from this."""
    flags = np.full(_CODE_POINTS, 2, dtype=np.uint8)
    flags[kept] = np.frombuffer(bytes(map(predicate, map(chr, kept.tolist()))), dtype=np.uint8)
    return flags.tobytes()


def ranges(flags: bytes) -> list[int]:
    """The code points flagged 1, as ``[start, length, gap, length, ...]``; a range runs on over
    code points flagged 2 when another 1 follows them, so that tables that only ever see the
    characters cleaning keeps need fewer ranges."""
    out: list[int] = []
    end = 0
    for run in re.finditer(rb"\x01(?:[\x01\x02]*\x01)?", flags):
        out += [run.start() - end, run.end() - run.start()]
        end = run.end()
    return out


def _categories() -> np.ndarray:
    """Every code point's general category, as its index in :data:`_CATEGORY_NAMES` (one byte each:
    the names themselves would be a million strings, some 70 MB while they are held)."""
    index = {name: i for i, name in enumerate(_CATEGORY_NAMES)}
    names = map(unicodedata.category, map(chr, range(_CODE_POINTS)))
    return np.frombuffer(bytes(map(index.__getitem__, names)), dtype=np.uint8)


def _flags(categories: np.ndarray, names: frozenset[str]) -> np.ndarray:  # -> [code points] uint8, 1 in ``names``
    return np.isin(categories, [i for i, name in enumerate(_CATEGORY_NAMES) if name in names]).astype(np.uint8)


def _dropped(categories: np.ndarray) -> bytes:
    """One byte per code point, 1 for what ``wordpiece.clean_text`` removes: NUL, U+FFFD and
    ``is_control`` (C* but tab, newline and CR), read from the categories already looked up for
    every code point rather than by a million calls of ``is_control`` that look them up again."""
    flags = _flags(categories, _OTHER)
    for char in "\t\n\r\x00\ufffd":
        flags[ord(char)] = is_control(char) or char in "\x00\ufffd"
    return flags.tobytes()


def _lower_case_tables(kept: np.ndarray) -> dict[str, Any]:
    """Python's ``str.lower`` as tables, for text without the characters cleaning drops.

    ``lower``: the code points that ``lower()`` maps to one other code point, as runs
    ``[gap, count, stride, delta]`` (``count`` code points ``stride`` apart, each mapped to itself
    plus ``delta``; ``gap`` from the last code point of the run before). ``lower_long``: the few
    that map to more than one (``"İ"`` → ``"i̇"``), by decimal code point.

    A capital sigma is lower-cased by its context (Python's ``handle_capital_sigma``): it is
    final (``ς``) when, skipping case-ignorable characters, a cased character precedes it and
    none follows. ``case_ignorable`` and ``cased`` (cased and not case-ignorable, the only ones
    that rule ever tests for being cased) are read from ``lower()`` itself: after a cased ``A``
    a character ``x`` makes ``AxΣ`` end in ``ς`` when ``x`` is skipped or cased; after ``1``,
    only when ``x`` is cased and not skipped.
    """
    runs: list[list[int]] = []  # [start, count, stride, delta]
    long: dict[str, str] = {}
    for code in kept.tolist():
        char = chr(code)
        lowered = char.lower()
        if lowered == char:
            continue
        if len(lowered) != 1:
            long[str(code)] = lowered
            continue
        delta = ord(lowered) - code
        if runs and runs[-1][3] == delta:
            start, count, stride, _ = runs[-1]
            last = start + (count - 1) * stride
            if count == 1 or code - last == stride:
                runs[-1][1:3] = [count + 1, code - last]
                continue
        runs.append([code, 1, 1, delta])
    lower: list[int] = []
    last = 0
    for start, count, stride, delta in runs:
        lower += [start - last, count, stride, delta]
        last = start + (count - 1) * stride

    def final_after(prefix: str) -> Callable[[str], bool]:
        return lambda char: (prefix + char + _CAPITAL_SIGMA).lower()[-1] == _FINAL_SIGMA

    after_letter = np.frombuffer(_kept_flags(final_after("A"), kept), dtype=np.uint8)
    cased = _kept_flags(final_after("1"), kept)
    ignorable = np.where(np.frombuffer(cased, dtype=np.uint8) == 1, 0, after_letter)
    return {"lower": lower, "lower_long": long, "case_ignorable": ranges(ignorable.tobytes()), "cased": ranges(cased)}


@functools.lru_cache(maxsize=1)
def unicode_tables() -> dict[str, Any]:
    """Every character class ``wordpiece.js`` needs, as the build's Python answers it.

    For every code point: ``dropped`` (what cleaning drops: NUL, U+FFFD, C* but tab, newline and
    CR) and ``mark`` (M*: what a word's span extends over, in the text as written). For the code
    points cleaning keeps (the others never reach them): ``whitespace`` (what cleaning turns into
    a space), ``space`` (``str.isspace``: where ``str.split`` splits), ``chinese``,
    ``punctuation``, ``nonspacing`` (Mn: what stripping accents drops) and the lower-case tables
    of :func:`_lower_case_tables`. Computed once per process.
    """
    categories = _categories()
    dropped = _dropped(categories)
    kept = np.flatnonzero(np.frombuffer(dropped, dtype=np.uint8) == 0)
    return {
        "version": unicodedata.unidata_version,
        "dropped": ranges(dropped),
        "mark": ranges(_flags(categories, _MARKS).tobytes()),
        "whitespace": ranges(_kept_flags(is_whitespace, kept)),
        "space": ranges(_kept_flags(str.isspace, kept)),
        "chinese": ranges(_kept_flags(is_chinese_char, kept)),
        "punctuation": ranges(_kept_flags(is_punctuation, kept)),
        "nonspacing": ranges(_kept_flags(lambda char: unicodedata.category(char) == "Mn", kept)),
        **_lower_case_tables(kept),
    }


def tokenizer_data(tokenizer: WordPieceTokenizer) -> dict[str, Any]:
    """What ``Labs.runtime.WordPiece`` reads: the vocabulary, the switches, :func:`unicode_tables`.

    ``pieces`` is the vocabulary in the order of its ids, joined with ``separator``: a space,
    which JSON writes as it is, unless a piece holds one, else a newline (one string parses and
    splits faster than an array of 30,000 strings, and is smaller). ``ids`` is there only when
    the ids are not simply 0, 1, 2, ... in that order (a ``vocab.txt`` that repeats a piece).
    Raises ValueError for a piece that holds a newline (no ``vocab.txt`` line can).
    """
    pieces = sorted(tokenizer.vocab, key=tokenizer.vocab.__getitem__)
    if any("\n" in piece for piece in pieces):
        raise ValueError("a vocabulary piece holds a newline")
    separator = "\n" if any(" " in piece for piece in pieces) else " "
    ids = [tokenizer.vocab[piece] for piece in pieces]
    data: dict[str, Any] = {
        "format": DATA_FORMAT,
        "pieces": separator.join(pieces),
        "separator": separator,
        "lower_case": tokenizer.lower_case,
        "strip_accents": tokenizer.strip_accents,
        "tokenize_chinese_chars": tokenizer.tokenize_chinese_chars,
        "unk_token": tokenizer.unk_token,
        "cls_token": tokenizer.cls_token,
        "sep_token": tokenizer.sep_token,
        "max_input_chars_per_word": tokenizer.max_input_chars_per_word,
        "unicode": unicode_tables(),
    }
    if ids != list(range(len(ids))):
        data["ids"] = ids
    return data


def vocab_script(tokenizer: WordPieceTokenizer, key: str) -> bytes:
    """A classic script that sets ``window.Labs.runtimeData[key]`` to :func:`tokenizer_data`
    (``self.Labs``: the same object in a page, and it loads in a Worker too)."""
    return (
        "(function(L){(L.runtimeData=L.runtimeData||{})["
        + json_for_script(key)
        + "]="
        + json_for_script(tokenizer_data(tokenizer))
        + ";})(self.Labs=self.Labs||{});\n"
    ).encode()
