"""The attention of real-heads cache entries read straight from the cache file's text: the JSON
of a [layers][heads][n][n] array of integers per mille, as :func:`.cache.save_cache` writes it,
turned into int16 arrays by NumPy operations on its bytes instead of :mod:`json`'s nested lists
(:func:`.cache._decode_saved` finds the texts; what it saves of a build: ``docs/benchmarks.md``,
"Stand-ins for a library")."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from generator.kinds.attention.realheads import PER_MILLE
from generator.kinds.helpers import EncodedArray


BATCH_BYTES = 512 << 10  # texts read together: a lab's file (3 MB) at once would hold ten times that in temporaries


def per_mille_arrays(texts: list[str], sizes: list[int]) -> list[np.ndarray] | None:
    """Each text as an int16 [layers, heads, n, n] array (``n`` from ``sizes``), when every text
    is exactly what json writes for such an array of integers (no spaces, no leading zeros) below
    10,000, and every row sums to :data:`PER_MILLE`; None otherwise.

    The texts are read in batches of about :data:`BATCH_BYTES` (each text whole): a batch's
    temporaries are some ten bytes for each of its bytes, and smaller arrays are quicker too (they
    stay in the processor's caches)."""
    out: list[np.ndarray] = []
    start = 0
    while start < len(texts):
        stop, total = start + 1, len(texts[start])
        while stop < len(texts) and total + len(texts[stop]) <= BATCH_BYTES:
            total += len(texts[stop])
            stop += 1
        arrays = _batch_arrays(texts[start:stop], sizes[start:stop])
        if arrays is None:
            return None
        out += arrays
        start = stop
    return out


def _batch_arrays(texts: list[str], sizes: list[int]) -> list[np.ndarray] | None:
    """:func:`per_mille_arrays` of one batch.

    The batch's texts are read at once, with operations on their bytes: a lab's eighteen sentences
    are 180,000 numbers. Each number's value is put together at the comma or bracket that ends it,
    from the (at most four) digits before it; the arrays are views of those values, one per comma
    and bracket, since the brackets and commas are known to be those of such an array."""
    joined = "".join(texts)
    if not joined.isascii():
        return None
    chars = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)  # [B]
    del joined
    value = chars - np.uint8(48)
    mark = value >= np.uint8(10)  # brackets and commas (anything else fails the skeleton below)
    cuts = np.flatnonzero(mark)  # [C]
    if cuts.size < 2 or cuts[0] != 0 or cuts[-1] != chars.size - 1:
        return None
    marks = chars[cuts]  # [C]
    skeleton = marks.tobytes()
    bounds = np.searchsorted(cuts, np.cumsum([len(t) for t in texts])).tolist()
    shapes, skeletons, start, made = [], [], 0, {}
    for n, stop in zip(sizes, bounds):
        shape = _skeleton_shape(skeleton, start, stop, n)
        if shape is None:
            return None
        shapes.append((start, shape))
        if shape not in made:
            layers, heads = shape[:2]
            row = b"[" + b"," * (n - 1) + b"]"
            made[shape] = b"[" + b",".join([b"[" + b",".join([b"[" + b",".join([row] * n) + b"]"] * heads) + b"]"] * layers) + b"]"
        skeletons.append(made[shape])
        start = stop
    if b"".join(skeletons) != skeleton:
        return None
    # Each mark gets the number that ends there, from the (at most four) digits before it: the
    # digit k places before counts when the k - 1 bytes between are digits too.
    digit = ~mark
    value *= digit.view(np.uint8)  # a digit's value, 0 for a mark (bytes times bytes: no casting)
    g1 = digit[3:-1]  # for the bytes 4..B-1: is the byte 1 place before a digit
    g12 = g1 & digit[2:-2]
    g123 = g12 & digit[1:-3]
    scratch = g123 & digit[:-4]
    scratch &= digit[4:]
    if scratch.any():  # five digits in a row: not a number below 10,000
        return None
    np.equal(chars[1:-3], np.uint8(48), out=scratch)
    scratch &= mark[:-4]
    scratch &= digit[2:-2]
    if scratch.any():  # a leading zero: not JSON
        return None
    scratch = scratch.view(np.uint8)
    tens = np.zeros(chars.size, dtype=np.uint8)  # [B] the number's last two digits, at the mark after it
    np.multiply(value[2:-2], g1.view(np.uint8), out=tens[4:])
    tens *= np.uint8(10)
    tens[4:] += value[3:-1]
    np.multiply(g1.view(np.uint8), np.uint8(128), out=scratch)  # bit 7: whether a digit is just before
    tens[4:] |= scratch
    hundreds = np.zeros(chars.size, dtype=np.uint8)  # [B] the two digits before those
    np.multiply(value[:-4], g123.view(np.uint8), out=hundreds[4:])
    hundreds *= np.uint8(10)
    np.multiply(value[1:-3], g12.view(np.uint8), out=scratch)
    hundreds[4:] += scratch
    del value, digit, mark, g12, g123, scratch
    tens, hundreds = tens[cuts], hundreds[cuts]  # [C]
    # A number between each "[" or "," and the next "," or "]", and nowhere else.
    if not np.array_equal((tens[1:] >> np.uint8(7)).view(bool), (marks[:-1] != np.uint8(93)) & (marks[1:] != np.uint8(91))):
        return None
    tens &= np.uint8(0x7F)
    numbers = np.multiply(hundreds, np.uint16(100), dtype=np.uint16)
    numbers += tens
    row_starts = np.flatnonzero((marks[:-1] == np.uint8(91)) & (marks[1:] != np.uint8(91))) + 1  # "[" then a number
    if not np.all(np.add.reduceat(numbers, row_starts, dtype=np.uint32) == PER_MILLE):
        return None
    numbers = numbers.view(np.int16)  # below 10,000: the same bits; the arrays are views of it
    out = []
    for begin, (layers, heads, n, _) in shapes:
        matrix = (n + 1) ** 2 + 1  # marks in one matrix and the comma after it
        out.append(np.ndarray((layers, heads, n, n), np.int16, numbers, 2 * (begin + 4),  # the first number ends
                              tuple(2 * s for s in (heads * matrix + 2, matrix, n + 2, 1))))  # at the fifth mark
    return out


def _skeleton_shape(marks: bytes, start: int, stop: int, n: int) -> tuple[int, int, int, int] | None:
    """(layers, heads, n, n) of the [layers][heads][n][n] array whose brackets and commas would be
    ``marks[start:stop]``, from its length and where its first layer ends; None if none would."""
    end = marks.find(b"]]],[[[", start, stop)
    per_layer = stop - start - 2 if end < 0 else end - start + 2  # "[" + matrices and commas + "]"
    layers, left = divmod(stop - start - 1, per_layer + 1)  # "[" + layers with commas + "]"
    heads, left2 = divmod(per_layer - 1, (n + 1) ** 2 + 1)  # a matrix has (n + 1)² marks, then a comma
    if left or left2 or layers < 1 or heads < 1:
        return None
    return layers, heads, n, n


class PendingPerMille:
    """A cache entry's attention still as the file's text (``json``, for an entry of ``n`` words),
    decoded by :func:`per_mille_arrays` the first time it is used as an array (``np.asarray``,
    ``.shape``, :meth:`decoded`). A build that reads a stored head finder report needs the numbers
    of the spotlight's sentences only, and the text of the others for the report's key (lab 07: 8
    of 69 sentences decoded). When the text is not what :func:`per_mille_arrays` reads,
    ``fallback`` gives the array: it reads the whole file the careful way, and raises the file's
    error at its line."""

    __slots__ = ("json", "_n", "_fallback", "_array")

    def __init__(self, text: str, n: int, fallback: Callable[[], np.ndarray]):
        self.json, self._n, self._fallback, self._array = text, n, fallback, None

    def decoded(self) -> np.ndarray:
        if self._array is None:
            arrays = per_mille_arrays([self.json], [self._n])
            self._array = EncodedArray.of(arrays[0], self.json) if arrays is not None else self._fallback()
        return self._array

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        array = self.decoded()
        return array if dtype is None else array.astype(dtype)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.decoded().shape

    def __reduce__(self):  # pickled as the plain array it holds
        return np.asarray(self.decoded()).__reduce__()


def decoded(attention) -> np.ndarray:
    """An entry's attention as an array: ``attention`` itself, or a :class:`PendingPerMille` decoded."""
    return attention.decoded() if isinstance(attention, PendingPerMille) else attention


def per_mille_json(attention) -> str:
    """An entry's attention as the JSON text ``json.dumps(a.tolist(), separators=(",", ":"))``:
    the text it was read from when it carries one, else written now."""
    text = getattr(attention, "json", None)
    return text if isinstance(text, str) else json.dumps(np.asarray(attention).tolist(), separators=(",", ":"))
