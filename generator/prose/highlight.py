"""Fenced code highlighted exactly as Python-Markdown's codehilite does it, for less.

codehilite builds a Pygments lexer and an HTML formatter for every block; here they are made
once per process for our configuration and used through Pygments' public API.
tests/test_highlight.py compares the HTML with codehilite's on many blocks and languages; what it
saves of a build: ``docs/benchmarks.md``, "Stand-ins for a library".
"""

from __future__ import annotations

from functools import partial

from markdown.extensions.codehilite import CodeHilite, CodeHiliteExtension
from pygments import highlight
from pygments.formatters import get_formatter_by_name
from pygments.lexers import get_lexer_by_name


# Our codehilite configuration, the converter's and the shortcut's: classes, not styles; no guessing.
CODEHILITE = {"css_class": "codehilite", "guess_lang": False, "use_pygments": True}


class Highlighter:
    """``codehilite`` with ``config``, for fenced blocks without attributes or hl_lines."""

    def __init__(self, config: dict):
        local = CodeHiliteExtension(**config).getConfigs()  # as the fenced-code step copies it
        self._make = partial(CodeHilite, style=local.pop("pygments_style", "default"), **local)
        probe = self._make("")
        self.options = probe.options
        # Only the plain case is done here; anything else is left to codehilite itself.
        self.plain = (probe.use_pygments and not probe.guess_lang and isinstance(probe.pygments_formatter, str))
        self.formatter = get_formatter_by_name(probe.pygments_formatter, **self.options) if self.plain else None
        self.lexers: dict[str | None, object] = {}

    def html(self, code: str, lang: str | None) -> str:
        """What ``CodeHilite(code, lang=lang, …).hilite(shebang=False)`` returns."""
        if not self.plain:
            return self._make(code, lang=lang).hilite(shebang=False)
        if lang not in self.lexers:
            try:
                lexer = get_lexer_by_name(lang, **self.options)
            except ValueError:  # (guess_lang is off)
                lexer = get_lexer_by_name("text", **self.options)
            self.lexers[lang] = lexer
        return highlight(code.strip("\n"), self.lexers[lang], self.formatter)
