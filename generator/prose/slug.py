"""The one slug of the project: a heading's id, a section's or FAQ item's default id, and the
shape of a slug an author writes."""

from __future__ import annotations

import re
import unicodedata

# A slug as an author writes one (a lab folder, a topic, a section or question id): lower-case
# letters and digits, joined by single dashes.
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


def slugify(value: str, separator: str = "-") -> str:
    """The one slug of the project: a heading's id, a section's or FAQ item's default id.
    Lower-case ASCII letters and digits joined by ``separator`` ("Why ÷√d?" → "why-d");
    accents are dropped ("Régime" → "regime"); "item" when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", separator, ascii_text).strip(separator) or "item"
