"""The one slug of the project: a heading's id, a section's or FAQ item's default id."""

from __future__ import annotations

import re
import unicodedata


def slugify(value: str, separator: str = "-") -> str:
    """The one slug of the project: a heading's id, a section's or FAQ item's default id.
    Lower-case ASCII letters and digits joined by ``separator`` ("Why ÷√d?" → "why-d");
    accents are dropped ("Régime" → "regime"); "item" when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", separator, ascii_text).strip(separator) or "item"
