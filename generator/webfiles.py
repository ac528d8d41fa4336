"""The bytes a page carries and the names it loads them by: JSON for a ``<script>`` element
(:func:`json_for_script`), fingerprinted file names (:func:`fingerprint`), minified scripts and
stylesheets (:func:`minified`).

A leaf (it imports only :mod:`generator.errors` of the generator) for every layer that writes
files a page loads: the renderer, the lab kinds (through :mod:`generator.kinds.helpers`, their
public API) and the in-page model runtime (:mod:`generator.runtime`), which no kind may be
below. The same data always gives the same bytes, and every file a page names is
fingerprinted: its name changes whenever its bytes do, so a browser may cache it for ever.
"""

from __future__ import annotations

import functools
import hashlib
import json
import posixpath
import re
from pathlib import Path
from typing import Any

import numpy as np
import rcssmin
import rjsmin
from markupsafe import Markup

from generator.errors import BuildError

__all__ = ["EncodedArray", "JSONText", "compact_json", "fingerprint", "json_for_script", "minified"]


def fingerprint(name: str, data: bytes) -> str:
    """The name a file of ``data`` is written under: ``site.css`` → ``site.3f2a9c1e.css`` (the first
    8 hex digits of the SHA-256 of ``data`` before the extension; after the name if it has none).
    Two files with different bytes get different names, so a page never loads a stale copy."""
    digest = hashlib.sha256(data).hexdigest()[:8]
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.{digest}.{ext}" if dot and posixpath.basename(stem) else f"{name}.{digest}"


def minified(path: Path) -> str:
    """The script (``.js``, by rjsmin) or stylesheet (``.css``, by rcssmin) at ``path``, minified,
    without a trailing newline. Kept for the process while the file's modification time and size
    stay the same: every lab of a kind ships the same code. Raises OSError if it cannot be read."""
    stat = path.stat()
    return _minified(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _minified(path: Path, mtime_ns: int, size: int) -> str:
    minify = rcssmin.cssmin if path.suffix == ".css" else rjsmin.jsmin
    return minify(path.read_text(encoding="utf-8"))


_SCRIPT_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def json_for_script(data: Any) -> Markup:
    """``data`` as JSON text safe inside ``<script type="application/json">`` (or ld+json) and in a
    classic script: compact, keys sorted, floats in Python's shortest round-trip form, so the same
    data always gives the same bytes. NumPy arrays and scalars are written as the lists and numbers
    they hold; an :class:`EncodedArray` or a :class:`JSONText` as the text it carries.

    ``<``, ``>``, ``&``, U+2028 and U+2029 are escaped, so no string can close the script element
    or break a JavaScript parser. Raises BuildError for NaN or an infinity, and TypeError for a
    value JSON cannot hold.
    """
    try:
        text, encoded = _json_with_marks(data, sort_keys=True)
    except ValueError as exc:
        raise BuildError(f"cannot embed data in the page: {exc}") from None
    for char, escape in _SCRIPT_ESCAPES:  # str.replace is much faster than str.translate here
        text = text.replace(char, escape)
    return Markup(_unmark(text, encoded))  # digits, commas and brackets: nothing to escape


def compact_json(data: Any) -> str:
    """``json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``: keys in
    their order, nothing escaped, NumPy values and the texts of :class:`EncodedArray` and
    :class:`JSONText` written as :func:`json_for_script` writes them. For measuring what a page
    will carry, not for putting into one. Raises ValueError for NaN."""
    return _unmark(*_json_with_marks(data, sort_keys=False))


class EncodedArray(np.ndarray):
    """A read-only NumPy array that carries its own JSON text, exactly as ``json.dumps(a.tolist(),
    separators=(",", ":"))`` would write it — for numbers that were decoded from that text and
    checked, so that writing them into a page costs a copy, not an encoding. Arrays made from it
    (views, slices, ``astype``) are plain: they do not carry the text."""

    json: str | None = None

    @classmethod
    def of(cls, array: np.ndarray, text: str) -> "EncodedArray":
        """``array`` (made read-only) with ``text``; the caller guarantees that ``text`` is its JSON."""
        out = np.asarray(array).view(cls)
        out.json = text
        out.flags.writeable = False
        return out

    def __array_finalize__(self, obj) -> None:
        self.json = None

    def __reduce__(self):  # pickled as the plain array it holds
        return np.asarray(self).__reduce__()


class JSONText:
    """JSON text that :func:`json_for_script` writes as it is where ``data`` holds this object:
    for numbers whose text is already made, exactly as :mod:`json` would write them, so that the
    page costs a copy, not an encoding. The caller guarantees that ``json`` is valid JSON."""

    __slots__ = ("json",)

    def __init__(self, text: str):
        self.json = text


def _json_with_marks(data: Any, sort_keys: bool) -> tuple[str, list[str]]:
    """Compact JSON of ``data`` with a mark where each text it carries goes, and those texts."""
    encoded: list[str] = []

    def default(value: Any) -> Any:
        if isinstance(value, (EncodedArray, JSONText)) and value.json is not None:
            encoded.append(value.json)
            return f"{_ENCODED_MARK}{len(encoded) - 1}"
        return _json_default(value)

    text = json.dumps(data, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=default)
    if encoded and text.count(_ENCODED_MARK) != len(encoded):  # the data holds the mark itself
        encoded.clear()
        text = json.dumps(data, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                          default=_json_default)
    return text, encoded


def _unmark(text: str, encoded: list[str]) -> str:
    return _ENCODED_RE.sub(lambda m: encoded[int(m.group(1))], text) if encoded else text


# Stands for a carried text while json writes the rest of the data.
_ENCODED_MARK = "\ue003encoded-array-"
_ENCODED_RE = re.compile(f'"{_ENCODED_MARK}(\\d+)"')


def _json_default(value: Any) -> Any:
    """JSON for what :mod:`json` does not know: NumPy arrays and scalars (``tolist``/``item``)."""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    if isinstance(value, JSONText):
        return json.loads(value.json)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
