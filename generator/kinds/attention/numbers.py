"""The spotlight's numbers as the page gets them: rounded, whole ones as ints, masked ones None.

:func:`rounded_lists` turns a lab's arrays into nested Python lists (the JSON-ready payload of
``docs/spotlight-data.md``) with one pass of NumPy over all of them: a lab has hundreds of arrays of
a few dozen numbers, and NumPy's cost is per call, not per number. Each list it returns is a
:class:`Numbers`, which also carries its JSON text, exactly as ``json.dumps(the_list,
separators=(",", ":"))`` would write it. Both come from a table of the numbers most arrays hold
(:func:`_table`: each one's Python value and text, made once per process), so that
most numbers cost a lookup, not a conversion and a ``repr``: :func:`as_json` hands the text to
:func:`~generator.kinds.helpers.json_for_script`, which then copies it instead of encoding the list
(most of a lab's page scripts are these numbers; what it saves of a build: ``docs/benchmarks.md``,
"Stand-ins for a library"). A :class:`Numbers` must not be changed after it is made; nothing does.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from generator.kinds.helpers import JSONText

# The table covers |value| <= TABLE_RANGE / 10**decimals (8.192 at three decimals: 97.5 % of a
# lab's numbers that are not whole); the rest are made one by one. Decimals beyond MAX_DECIMALS get no text: at
# five a value below 1e-4 would be written in exponent form, which the table does not know.
TABLE_RANGE = 1 << 13
MAX_DECIMALS = 4
# Whole numbers further out (a previous-word score of −75, a percentage of 100) up to this one
# come from a table of their own.
WHOLE_RANGE = 1 << 12


class Numbers(list):
    """A list of rounded numbers (nested) that carries its JSON text in ``json`` (None: none made)."""

    __slots__ = ("json",)

    @classmethod
    def of(cls, items: list, text: str | None) -> "Numbers":
        numbers = cls(items)
        numbers.json = text
        return numbers

    def __reduce__(self):  # pickled with its text (labs serve computes in worker processes)
        return Numbers.of, (list(self), getattr(self, "json", None))


def as_json(value: Any) -> Any:
    """``value`` for :func:`~generator.kinds.helpers.json_for_script`: a :class:`Numbers` with text as that
    text, anything else as it is."""
    if isinstance(value, Numbers) and getattr(value, "json", None) is not None:
        return JSONText(value.json)
    return value


def rounded_list(a: np.ndarray, decimals: int, mask: np.ndarray | None = None) -> Numbers:
    """Nested lists of ``a`` rounded to ``decimals``; whole numbers as ints, masked entries None."""
    return rounded_lists([(a, mask)], decimals)[0]


def rounded_lists(arrays: Sequence[tuple[np.ndarray, np.ndarray | None]], decimals: int) -> list[Numbers]:
    """:func:`rounded_list` of each ``(array, mask)`` (mask: True = keep), in one pass. The arrays
    are laid out side by side by shape, so that the lists of each shape come from one ``tolist``."""
    if not arrays:
        return []
    parts = [np.asarray(a) for a, _ in arrays]
    order = sorted(range(len(parts)), key=lambda i: parts[i].shape)
    shapes = [parts[i].shape for i in order]
    sizes = [parts[i].size for i in order]
    ends = list(itertools.accumulate(sizes))
    rounded = np.round(np.concatenate([parts[i].reshape(-1) for i in order]).astype(np.float64, copy=False),
                       decimals) + 0.0  # + 0.0 turns -0.0 into 0.0
    masked = [(j, arrays[i][1]) for j, i in enumerate(order) if arrays[i][1] is not None]
    if masked:
        keep = np.ones(rounded.size, dtype=bool)
        for j, mask in masked:
            mask = np.asarray(mask)
            if mask.shape != shapes[j]:
                mask = np.broadcast_to(mask, shapes[j])
            keep[ends[j] - sizes[j]:ends[j]] = mask.reshape(-1)
        rounded = np.where(keep, rounded, np.nan)
    texts: list[str | None] = [None] * len(shapes)
    if not 0 <= decimals <= MAX_DECIMALS or np.isinf(rounded).any():  # json_for_script refuses an infinity
        values = _python_values(rounded)
    else:  # the numbers the table holds are taken from it, with their text; the others are made
        table_values, table_objects, table_texts, table_lengths = _table(decimals)
        k = np.rint(rounded * 10.0**decimals)
        index = (np.where(np.abs(k) <= TABLE_RANGE, k, 0) + TABLE_RANGE).astype(np.intp)  # NaN: out of range
        missed = np.flatnonzero(table_values[index] != rounded)  # out of the table's range, or NaN
        values = table_objects[index]
        values[missed] = _python_values(rounded[missed])
        texts = _json_texts(rounded, values, table_texts[index], table_lengths[index], missed, shapes, sizes, ends)
    lists: list[Any] = [None] * len(parts)
    for shape, same in itertools.groupby(range(len(order)), key=shapes.__getitem__):
        same = list(same)
        start, stop = ends[same[0]] - sizes[same[0]], ends[same[-1]]
        for j, items in zip(same, values[start:stop].reshape((len(same),) + shape).tolist(), strict=True):
            lists[order[j]] = Numbers.of(items, texts[j]) if shape else items
    return lists


def _python_values(rounded: np.ndarray) -> np.ndarray:  # [n] float64 -> [n] object
    """Each number as the page's JSON has it: an int if whole, else a float; None for NaN."""
    out = rounded.astype(object)  # Python floats, made in one pass
    whole = np.isfinite(rounded) & (rounded == np.floor(rounded))
    out[whole] = rounded[whole].astype(np.int64).astype(object)
    out[np.isnan(rounded)] = None
    return out


@functools.lru_cache(maxsize=MAX_DECIMALS + 1)
def _table(decimals: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # -> [2R+1] float64, object (int | float), object (str), int
    """Every number k / 10**decimals for |k| <= TABLE_RANGE, as :func:`rounded_lists` rounds it, the
    Python value it becomes, that value's JSON text (as json.dumps writes it) and the text's
    length. Made once per process."""
    values = np.round(np.arange(-TABLE_RANGE, TABLE_RANGE + 1) / 10.0**decimals, decimals) + 0.0
    objects = _python_values(values)
    texts = [_scalar_json(v) for v in objects.tolist()]
    return values, objects, np.array(texts, dtype=object), np.array([len(t) for t in texts], dtype=np.int64)


@functools.lru_cache(maxsize=1)
def _whole_table() -> tuple[np.ndarray, np.ndarray]:  # -> [2W+1] object (str), [2W+1] int
    """The JSON text of every whole number k for |k| <= WHOLE_RANGE, and its length."""
    texts = [_scalar_json(k) for k in range(-WHOLE_RANGE, WHOLE_RANGE + 1)]
    return np.array(texts, dtype=object), np.array([len(t) for t in texts], dtype=np.int64)


def _scalar_json(value: int | float | None) -> str:
    """What json.dumps writes for a number of a list (int.__repr__, float.__repr__) or None."""
    return "null" if value is None else value.__repr__()


# What follows a number in the text: inside a row, at a row's end, at a matrix's end, at a list's end.
_AFTER = np.array([",", "],[", "]]", "]"], dtype=object)
_AFTER_LENGTH = np.array([len(a) for a in _AFTER], dtype=np.int64)


def _json_texts(rounded: np.ndarray, values: np.ndarray, strings: np.ndarray, lengths: np.ndarray,
                missed: np.ndarray, shapes: Sequence[tuple], sizes: Sequence[int],
                ends: Sequence[int]) -> list[str | None]:
    """The JSON text of each array (its part of ``rounded``/``values``), from the table's ``strings``
    and their ``lengths`` for every number but the ``missed`` ones, or None for an array that is
    not one- or two-dimensional, or an empty one. Every number's text and what follows it are
    joined into one string, which is then cut at the arrays' ends."""
    texts: list[str | None] = [None] * len(shapes)
    if missed.size:
        far = rounded[missed]
        whole = (far == np.floor(far)) & (np.abs(far) <= WHOLE_RANGE)  # NaN: not whole
        whole_texts, whole_lengths = _whole_table()
        at = (far[whole] + WHOLE_RANGE).astype(np.intp)
        strings[missed[whole]], lengths[missed[whole]] = whole_texts[at], whole_lengths[at]
        missed = missed[~whole]
    if missed.size:
        written = [_scalar_json(v) for v in values[missed].tolist()]
        strings[missed] = written
        lengths[missed] = [len(w) for w in written]
    ok = np.array([size > 0 and len(shape) in (1, 2) for shape, size in zip(shapes, sizes, strict=True)])
    rows = np.array([shape[0] if len(shape) == 2 else 1 for shape in shapes], dtype=np.int64) * ok
    columns = np.array([shape[-1] if shape else 1 for shape in shapes], dtype=np.int64)
    starts = np.array(ends, dtype=np.int64) - np.array(sizes, dtype=np.int64)
    row_of = np.repeat(np.arange(len(shapes)), rows)  # [every row of every array] -> its array
    row_in = np.arange(row_of.size) - np.repeat(np.cumsum(rows) - rows, rows)
    after = np.zeros(rounded.size, dtype=np.intp)  # index into _AFTER
    after[starts[row_of] + columns[row_of] * (row_in + 1) - 1] = 1
    two_d = np.array([len(shape) == 2 for shape in shapes])
    after[(np.array(ends) - 1)[ok]] = np.where(two_d, 2, 3)[ok]
    tokens = np.empty(2 * rounded.size, dtype=object)
    tokens[0::2], tokens[1::2] = strings, _AFTER[after]
    token_lengths = np.empty(2 * rounded.size, dtype=np.int64)
    token_lengths[0::2], token_lengths[1::2] = lengths, _AFTER_LENGTH[after]
    text = "".join(tokens.tolist())
    cut = np.concatenate(([0], np.cumsum(token_lengths)))[2 * np.array(ends)].tolist()  # where each array's text ends
    for i in np.flatnonzero(ok).tolist():
        texts[i] = ("[[" if two_d[i] else "[") + text[cut[i - 1] if i else 0:cut[i]]
    return texts
