"""Authors' Markdown → safe HTML, with highlighted code and MathML.

Extensions: fenced code highlighted by Pygments into CSS classes (``.codehilite``, no inline
styles), tables, heading ids, and TeX math — ``$…$`` inline and ``$$…$$`` on lines of their own —
converted to MathML at build time by latex2mathml, so no JavaScript math library is needed.

Sanitising policy: authors may write raw HTML in Markdown, but the rendered HTML always goes
through nh3 (an allow-list sanitiser, :mod:`generator.prose.sanitise`) before it reaches a page. MathML
is made by :mod:`generator.prose.mathml` from the TeX source and put in before sanitising, so the
sanitiser (with a MathML allow-list) sees the final HTML.

Internal links use ``lab:SLUG``, ``lab:SLUG#anchor``, ``topic:SLUG`` and ``index:``; they are
rewritten to relative URLs so the site works from any folder, sub-path or file://.
"""

from __future__ import annotations

import re
import threading
from html import unescape
from typing import cast
from xml.parsers import expat

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from generator.prose.highlight import CODEHILITE
from generator.prose.markdown_fast import simple_markdown
from generator.prose.mathml import MATH_TOKEN_RE, MathProblem, MathState, add_math
from generator.prose.sanitise import clean_html
from generator.prose.slug import slugify


# Python-Markdown's inline parser scans from every '[', '(' and '<' to the character that closes
# it; unclosed or deeply nested ones make a paragraph quadratic (10,000 '[' took 10 s). Inputs
# whose scans would add up to more than this many characters are refused before parsing, as
# is Markdown longer than MAX_MARKDOWN_CHARS (a 2 MB file took over a minute).
MAX_MARKDOWN_CHARS = 200_000
MAX_SCAN_CHARS = 2_000_000
_CLOSERS = {"[": "]", "(": ")", "<": ">"}
_TOO_COSTLY = ("this paragraph has too many unclosed or deeply nested brackets ('[', '(' or '<') for the "
               "Markdown parser; close them, or escape them as \\[ \\( \\<")
_SCANNED = re.compile(r"[\[\]()<>]|\n[ \t]*\n")


# Python-Markdown parses a list or quote inside another by recursing, a few calls a level: at the
# interpreter's default recursion limit it manages some 200 levels. Depth is measured here, before
# parsing, so that the limit holds whatever the recursion limit is (a library imported along the
# way may raise it: jedi sets 3,000) and a deep document never reaches the parser.
MAX_NESTING = 100
_TOO_DEEP = "lists or quotes are nested too deeply for the Markdown parser; flatten them"
_CONTAINER = re.compile(r"[ \t]*(?:>|[-*+](?=[ \t]|$)|[0-9]{1,9}[.)](?=[ \t]|$))")
_FENCE_LINE = re.compile(r"[ \t]*(```|~~~)")


def nesting(source: str) -> tuple[int, int]:
    """How deep lists and quotes nest in ``source`` at most, and the offset of the line where: a
    line counts each ``>`` and list marker it starts with, and a level for each 4 columns of
    blanks among them before its text (tabs as 4; the one blank after a marker is the marker's).
    Fenced code is not counted. Linear time."""
    deepest, deepest_at, at, fenced = 0, 0, 0, None
    for line in source.split("\n"):
        fence = _FENCE_LINE.match(line)
        if fence and (fenced is None or fence.group(1) == fenced):
            fenced = fence.group(1) if fenced is None else None
        elif fenced is None:
            depth, end = 0, 0
            while (m := _CONTAINER.match(line, end)) is not None:
                depth, end = depth + 1, m.end()
            prefix = line[:len(line) - len(line[end:].lstrip(" \t"))]  # markers and the blanks around them
            depth += max(0, prefix.count(" ") + 4 * prefix.count("\t") - depth) // 4  # a marker's own blank aside
            if depth > deepest:
                deepest, deepest_at = depth, at
        at += len(line) + 1
    return deepest, deepest_at


class MarkdownLimit(ValueError):
    """Markdown too large or too costly to parse; ``offset`` is where in the source it shows."""

    def __init__(self, offset: int, message: str):
        super().__init__(message)
        self.offset = offset
        self.message = message


def check_limits(source: str) -> None:
    """Raise :class:`MarkdownLimit` for text the Markdown parser would take too long over, or nest
    too deeply for it (linear time)."""
    if len(source) > MAX_MARKDOWN_CHARS:
        raise MarkdownLimit(0, f"Markdown text of {len(source):,} characters is over the limit of "
                               f"{MAX_MARKDOWN_CHARS:,}; split it into several files or sections")
    deepest, at = nesting(source)
    if deepest > MAX_NESTING:
        raise MarkdownLimit(at, _TOO_DEEP)
    if (source.count("[") + source.count("(") + source.count("<")) * len(source) > MAX_SCAN_CHARS:
        _check_scans(source)  # (else each opening bracket is scanned once, over less than the whole text)


def _check_scans(source: str) -> None:
    cost = 0
    open_at: dict[str, list[int]] = {"[": [], "(": [], "<": []}

    def close_block(end: int) -> int:
        total = 0
        for stack in open_at.values():
            total += sum(end - at for at in stack)
            stack.clear()
        return total

    paragraph = 0  # where the current paragraph starts: the place an error points to
    for m in _SCANNED.finditer(source):
        c, at = m.group(), m.start()
        if c in open_at:
            open_at[c].append(at)
        elif c == ">":
            cost += sum(at - o for o in open_at["<"])
            open_at["<"].clear()
        elif c in "])":
            stack = open_at["[" if c == "]" else "("]
            if stack:
                cost += at - stack.pop()
        else:  # a blank line ends the paragraph: whatever is still open is scanned to here
            cost += close_block(at)
        if cost > MAX_SCAN_CHARS:
            raise MarkdownLimit(paragraph, _TOO_COSTLY)
        if c.startswith("\n"):
            paragraph = m.end()
    if cost + close_block(len(source)) > MAX_SCAN_CHARS:
        raise MarkdownLimit(paragraph, _TOO_COSTLY)


class RenderedMarkdown:
    """Rendered Markdown: ``html``; ``text``, its plain text, for descriptions, JSON-LD, the search
    index and announcements (read from the HTML when first asked for: sections and cards never
    ask), each formula in it as the TeX the author wrote (``math_tex``: MathML -> TeX), so that
    "divided by $\\sqrt{d_k}$" keeps its divisor; ``math_problems``; ``links``, every href as the
    author wrote it."""

    __slots__ = ("html", "_text", "math_problems", "links", "math_tex")

    def __init__(self, html: str, text: str | None = None, math_problems: list[MathProblem] | None = None,
                 links: list[str] | None = None, math_tex: dict[str, str] | None = None):
        self.html = html
        self._text = text
        self.math_problems = math_problems if math_problems is not None else []
        self.links = links if links is not None else []
        self.math_tex = math_tex or {}

    @property
    def text(self) -> str:
        if self._text is None:
            html = self.html
            if "<math" in html:
                html = _MATH_ELEMENT.sub(lambda m: escape_attr(self.math_tex.get(m.group(0), '')), html)
            self._text = plain_text(html)
        return self._text

    def __repr__(self) -> str:
        return f"RenderedMarkdown(html={self.html!r}, text={self.text!r}, math_problems={self.math_problems!r}, " \
               f"links={self.links!r})"


class _Links(Treeprocessor):
    def __init__(self, md, links: list[str]):
        super().__init__(md)
        self.links = links

    def run(self, root):
        for a in root.iter("a"):
            self.links.append(a.get("href", ""))


class _Extension(Extension):
    def __init__(self, state: MathState, links: list[str]):
        super().__init__()
        self.state = state
        self.links = links

    def extendMarkdown(self, md):
        add_math(md, self.state)
        md.treeprocessors.register(_Links(md, self.links), "collect_links", 0)


_local = threading.local()


def _converter() -> tuple[markdown.Markdown, MathState, list[str]]:
    """One Markdown instance per thread, reset between documents: building one costs more
    than converting a short answer, and a build converts thousands of them."""
    cached = getattr(_local, "converter", None)
    if cached is None:
        state, links = MathState(), cast(list[str], [])
        md = markdown.Markdown(
            extensions=["fenced_code", "tables", "sane_lists", "codehilite", "toc", _Extension(state, links)],
            extension_configs={
                "codehilite": CODEHILITE,
                # Authors' "#" is the page's h2: the lab title is the only h1.
                "toc": {"slugify": slugify, "permalink": False, "baselevel": 2},
            },
            output_format="html",
        )
        cached = _local.converter = (md, state, links)
    md, state, links = cached
    md.reset()
    state.pieces, state.problems, state.tex_of = [], [], {}
    links.clear()
    return cached


def render_markdown(source: str, resolve_link=None) -> RenderedMarkdown:
    """Render ``source``. ``resolve_link(href) -> str | None`` rewrites ``lab:``/``topic:`` links
    (return None to leave an href unchanged); problems with links are checked by the caller
    from :attr:`RenderedMarkdown.links`. Raises :class:`MarkdownLimit` for text over the limits."""
    check_limits(source)
    reserved = _RESERVED.search(source)
    if reserved:
        raise MarkdownLimit(reserved.start(), f"the private-use character U+{ord(reserved.group()):04X} is reserved "
                                              "for the generator's own use; remove it")
    state, links = MathState(), cast(list[str], [])
    html = simple_markdown(source, state, links)
    if html is None:
        md, state, links = _converter()
        try:
            html = md.convert(source)
        except RecursionError:  # under MAX_NESTING, but the interpreter's recursion limit was lowered
            _local.converter = None  # its state is left half-way: start afresh next time
            raise MarkdownLimit(nesting(source)[1], _TOO_DEEP) from None
    # Math goes in before sanitising, so the sanitiser sees the final HTML (with a MathML allow-list).
    # (Each step below is taken only where what it looks for is there.)
    if any(piece.startswith("<div") for piece in state.pieces):  # display math is a block, not in a <p>
        html = re.sub("<p>\\s*(\ue000math(\\d+)\ue001)\\s*</p>",
                      lambda m: m.group(1) if state.pieces[int(m.group(2))].startswith("<div") else m.group(0), html)
    if state.pieces:
        html = MATH_TOKEN_RE.sub(lambda m: state.pieces[int(m.group(1))], html)
    html = clean_html(html)
    if resolve_link is not None and 'href="' in html:
        def rewrite(m: re.Match) -> str:
            href = unescape(m.group(2))
            new = resolve_link(href)
            return m.group(0) if new is None else f'{m.group(1)}href="{escape_attr(new)}"'

        # Only in a link's tag: text (inline code showing href="lab:…") holds no raw '<'.
        html = re.sub(r'(<a\s[^>]*?)href="([^"]*)"', rewrite, html)
    if '<span class="w">' in html:  # Pygments wraps plain spaces in spans nothing styles
        html = _WHITESPACE_SPAN.sub(r"\1", html)
    return RenderedMarkdown(html=html, math_problems=list(state.problems), links=list(links),
                            math_tex=dict(state.tex_of) if state.pieces else None)


_RESERVED = re.compile("[\ue000\ue001]")  # the math placeholder's delimiters
_MATH_ELEMENT = re.compile(r"<math[\s>].*?</math>", re.S)
_WHITESPACE_SPAN = re.compile(r'<span class="w">(\s*)</span>')
def escape_attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def plain_text(html: str) -> str:
    """Visible text of an HTML fragment, whitespace folded (math tokens dropped)."""
    # The XML parser ElementTree uses (expat, with its namespace handling), collecting only the
    # text: the same text as etree.fromstring(…).itertext(), and the same refusals, at half the cost.
    parts: list[str] = []
    parser = expat.ParserCreate(None, "}")
    parser.buffer_text = True
    parser.CharacterDataHandler = parts.append
    try:
        parser.Parse(f"<div>{html}</div>", True)
        text = "".join(parts)
    except expat.ExpatError:
        text = re.sub(r"<[^>]+>", " ", html)
    text = MATH_TOKEN_RE.sub("", unescape(text))
    return re.sub(r"\s+", " ", text).strip()
