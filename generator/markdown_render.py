"""Authors' Markdown → safe HTML, with highlighted code and MathML.

Extensions: fenced code highlighted by Pygments into CSS classes (``.codehilite``, no inline
styles), tables, heading ids, and TeX math — ``$…$`` inline and ``$$…$$`` on lines of their own —
converted to MathML at build time by latex2mathml, so no JavaScript math library is needed.

Sanitising policy: authors may write raw HTML in Markdown, but the rendered HTML always goes
through nh3 (an allow-list sanitiser, :mod:`generator.sanitise`) before it reaches a page. MathML
is made by :mod:`generator.mathml` from the TeX source and put in before sanitising, so the
sanitiser (with a MathML allow-list) sees the final HTML.

Internal links use ``lab:SLUG``, ``lab:SLUG#anchor``, ``topic:SLUG`` and ``index:``; they are
rewritten to relative URLs so the site works from any folder, sub-path or file://.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from html import unescape
from typing import cast
from xml.parsers import expat

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

from generator.highlight import Highlighter
from generator.mathml import INLINE_MATH, MATH_TOKEN_RE, MathProblem, MathState, add_math
from generator.sanitise import clean_html


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
    """Rendered Markdown: ``html``; ``text``, its plain text, for descriptions, JSON-LD and
    announcements (read from the HTML when first asked for: sections and cards never ask);
    ``math_problems``; ``links``, every href as the author wrote it."""

    __slots__ = ("html", "_text", "math_problems", "links")

    def __init__(self, html: str, text: str | None = None, math_problems: list[MathProblem] | None = None,
                 links: list[str] | None = None):
        self.html = html
        self._text = text
        self.math_problems = math_problems if math_problems is not None else []
        self.links = links if links is not None else []

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = plain_text(_MATH_ELEMENT.sub("", self.html) if "<math" in self.html else self.html)
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


def slugify(value: str, separator: str = "-") -> str:
    """The one slug of the project: a heading's id, a section's or FAQ item's default id.
    Lower-case ASCII letters and digits joined by ``separator`` ("Why ÷√d?" → "why-d");
    accents are dropped ("Régime" → "regime"); "item" when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", value).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z0-9]+", separator, ascii_text).strip(separator) or "item"


_local = threading.local()
_CODEHILITE = {"css_class": "codehilite", "guess_lang": False, "use_pygments": True}


def _converter() -> tuple[markdown.Markdown, MathState, list[str]]:
    """One Markdown instance per thread, reset between documents: building one costs more
    than converting a short answer, and a build converts thousands of them."""
    cached = getattr(_local, "converter", None)
    if cached is None:
        state, links = MathState(), cast(list[str], [])
        md = markdown.Markdown(
            extensions=["fenced_code", "tables", "sane_lists", "codehilite", "toc", _Extension(state, links)],
            extension_configs={
                "codehilite": _CODEHILITE,
                # Authors' "#" is the page's h2: the lab title is the only h1.
                "toc": {"slugify": slugify, "permalink": False, "baselevel": 2},
            },
            output_format="html",
        )
        cached = _local.converter = (md, state, links)
    md, state, links = cached
    md.reset()
    state.pieces, state.problems = [], []
    links.clear()
    return cached


# Text that Markdown would only wrap in <p>: one line, none of Markdown's or HTML's special
# characters, no block marker at the start. Most quiz feedback and FAQ answers are like this,
# and skipping the converter for them halves a lab's load time. tests/test_markdown_render.py
# checks that this path gives exactly what the converter gives.
_PLAIN = re.compile(r"[^\\`*_\[\]<>&$|~{}\n\r\t\u00a0\ue000\ue001]*")
_BLOCK_START = re.compile(r"\s*(?:[#>+=-]|\d+[.)]|$)")


def _plain_paragraph(source: str) -> str | None:
    text = source
    if not _PLAIN.fullmatch(text) or _BLOCK_START.match(text) or text != text.strip():
        return None
    return f"<p>{text}</p>"


def render_markdown(source: str, resolve_link=None) -> RenderedMarkdown:
    """Render ``source``. ``resolve_link(href) -> str | None`` rewrites ``lab:``/``topic:`` links
    (return None to leave an href unchanged); problems with links are checked by the caller
    from :attr:`RenderedMarkdown.links`. Raises :class:`MarkdownLimit` for text over the limits."""
    check_limits(source)
    simple = _plain_paragraph(source.strip("\n"))
    if simple is not None:
        return RenderedMarkdown(html=simple, text=" ".join(source.split()))
    reserved = _RESERVED.search(source)
    if reserved:
        raise MarkdownLimit(reserved.start(), f"the private-use character U+{ord(reserved.group()):04X} is reserved "
                                              "for the generator's own use; remove it")
    state, links = MathState(), cast(list[str], [])
    html = _simple_markdown(source, state, links)
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
            href = unescape(m.group(1))
            new = resolve_link(href)
            return m.group(0) if new is None else f'href="{escape_attr(new)}"'

        html = re.sub(r'href="([^"]*)"', rewrite, html)
    if '<span class="w">' in html:  # Pygments wraps plain spaces in spans nothing styles
        html = _WHITESPACE_SPAN.sub(r"\1", html)
    return RenderedMarkdown(html=html, math_problems=list(state.problems), links=list(links))


# Markdown of the plain shapes lab prose uses — paragraphs, "#" headings of plain text, lists
# without blank lines between items, fenced code between blank lines — whose only inline Markdown
# is *em*, **strong**, `code`, $math$ and [text](url): what Python-Markdown gives for it is written
# here directly, at about a tenth of its cost (fenced code is highlighted as codehilite does it, by
# generator/highlight.py). Anything else — HTML, entities, escapes, tables, quotes, nested or loose
# lists, a delimiter Python-Markdown might pair otherwise — is declined, and the converter does
# the whole text. tests/test_markdown_render.py checks on many generated inputs that this path
# gives exactly what the converter gives.

# Anywhere, code included: what the converter's first step rewrites (tabs, line ends, control
# characters, lines of spaces); outside code: display math, escaped backticks, images, runs of
# three *, hard line breaks, more than one blank line, HTML, entities and tables.
_CONTROL = re.compile(r"[\t\r\x00-\x09\x0b-\x1f\x7f\x85\u2028\u2029\ud800-\uf8ff\ufeff]")
_SPACES_LINE = re.compile(r"^ +$", re.M)
_TEXT_DECLINED = ("$$", "``", "\\`", "![", "***", " \n", "\n\n\n")
_HTML_OR_TABLE = re.compile(r"[<|]|&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[0-9a-zA-Z]+);")
_BLOCKISH = re.compile(r"[#>=+-]|\*\s|\d+[.)]|\[|[-=*_ ]+$")  # a line that could start or end a block
_FENCE = re.compile(r"```[\w#.+-]*")
_HEADING = re.compile(r"(#{1,5}) ([^#]*[^#\s])")
_LIST_ITEM = {"ol": re.compile(r"\d+\.[ ]+(\S.*)"), "ul": re.compile(r"[*+-][ ]+(\S.*)")}
_CONTINUATION = re.compile(r"[ ]{1,3}(\S.*)")
_CODE_SPAN = re.compile(r"`([^`]*)`")
_MATH_SPAN = re.compile(INLINE_MATH)
_LINK_SPAN = re.compile(r"\[([^\[\]]+)\]\(([A-Za-z0-9_./#:-]+)\)")
_DELIMITERS = re.compile(r"\*+")
_STASHED = re.compile("\x02(\\d+)\x03")


def _simple_markdown(source: str, state: MathState, links: list[str]) -> str | None:
    """``md.convert(source)`` for simple Markdown (see above), or None to use the converter."""
    if (not source.strip() or _CONTROL.search(source) or "~~~" in source
            or ((" \n" in source or source.endswith(" ")) and _SPACES_LINE.search(source))):
        return None
    blocks = _simple_blocks(source.strip("\n"))
    if blocks is None:
        return None
    # Python-Markdown parses the inline text of paragraphs first, then of lists' items: math is
    # numbered, and its problems listed, in that order.
    inline: dict[tuple[int, int], tuple[str, list[str]]] = {}
    jobs = [(i, 0, block[1]) for i, block in enumerate(blocks) if block[0] == "p"]
    jobs += [(i, j, item) for i, block in enumerate(blocks) if block[0] in ("ol", "ul") for j, item in enumerate(block[1])]
    for i, j, text in jobs:
        hrefs: list[str] = []
        html = _simple_paragraph(text, state, hrefs)
        if html is None:
            return None
        inline[i, j] = html, hrefs
    out = []
    for i, (kind, body) in enumerate(blocks):
        if kind == "p":
            out.append(f"<p>{inline[i, 0][0]}</p>")
        elif kind in ("ol", "ul"):
            items = "".join(f"<li>{inline[i, j][0]}</li>\n" for j in range(len(body)))
            out.append(f"<{kind}>\n{items}</{kind}>")
        else:
            out.append(body)
    for key in sorted(inline):  # the converter lists links in the order of the page
        links.extend(inline[key][1])
    return "\n".join(out).strip()


def _simple_blocks(text: str) -> list[tuple[str, object]] | None:
    """``text`` as its blocks: ("p", inline text), ("ol"/"ul", [item text, …]), ("h", HTML) and
    ("code", HTML); None for anything the shortcut does not know."""
    blocks: list[tuple[str, object]] = []
    ids: set[str] = set()
    lines = text.split("\n")
    start = 0
    while start < len(lines):
        fence = next((n for n in range(start, len(lines)) if lines[n].startswith("```")), len(lines))
        chunk = "\n".join(lines[start:fence]).strip("\n")
        if chunk:
            if chunk.endswith(" ") or any(run in chunk for run in _TEXT_DECLINED) or _HTML_OR_TABLE.search(chunk):
                return None
            for block in chunk.split("\n\n"):
                parsed = _simple_block(block.split("\n"), ids, blocks[-1][0] if blocks else "")
                if parsed is None:
                    return None
                blocks.append(parsed)
        if fence == len(lines):
            break
        end = lines.index("```", fence + 1) if "```" in lines[fence + 1:] else -1
        if (end <= fence + 1 or not _FENCE.fullmatch(lines[fence]) or (fence and lines[fence - 1])
                or any(line.startswith("```") for line in lines[fence + 1:end]) or lines[end + 1:end + 2] not in ([], [""])):
            return None
        blocks.append(("code", _fenced_code(lines[fence], "".join(line + "\n" for line in lines[fence + 1:end]))))
        start = end + 1
    return blocks


def _simple_block(lines: list[str], ids: set[str], previous: str) -> tuple[str, object] | None:
    first = lines[0]
    kind = "ol" if first.startswith("1.") else "ul" if first[:1] in "*+-" else ""
    if kind and _LIST_ITEM[kind].fullmatch(first):
        if previous in ("ol", "ul"):  # Python-Markdown would join it to the list before, as a loose list
            return None
        items: list[str] = []
        for line in lines:
            item = _LIST_ITEM[kind].fullmatch(line)
            more = None if item else _CONTINUATION.fullmatch(line)
            if (item or more) is None or _BLOCKISH.match((item or more).group(1)):
                return None
            if item:
                items.append(item.group(1))
            else:
                items[-1] += "\n" + line
        return kind, items
    if first.startswith("#"):
        heading = _HEADING.fullmatch(first)
        if (len(lines) > 1 or heading is None or not _PLAIN.fullmatch(heading.group(2))
                or heading.group(2) != heading.group(2).strip()):
            return None
        slug = slugify(heading.group(2))
        if slug in ids:  # the converter's table of contents would number it
            return None
        ids.add(slug)
        level = len(heading.group(1)) + 1
        return "h", f'<h{level} id="{slug}">{heading.group(2)}</h{level}>'
    paragraph = "\n".join(lines)
    if paragraph != paragraph.strip() or any(not line or line[0] == " " or _BLOCKISH.match(line) for line in lines):
        return None  # (Python-Markdown strips a paragraph's start)
    return "p", paragraph


def _fenced_code(opening: str, code: str) -> str:
    """A fenced code block as the converter's fenced-code step writes it: highlighted by
    codehilite (as the fence is written: no attributes or hl_lines), ``code`` ending in a newline."""
    highlighter = getattr(_local, "highlighter", None)
    if highlighter is None:
        highlighter = _local.highlighter = Highlighter(_CODEHILITE)
    return highlighter.html(code, opening[3:].removeprefix(".") or None)


def _simple_paragraph(text: str, state: MathState, links: list[str]) -> str | None:
    """One paragraph's inline Markdown as HTML, as Python-Markdown's inline parser makes it: one
    kind of span after the other over the whole text (code, math, links, emphasis), each span
    taken replaced by a placeholder that later kinds do not look into."""
    stash: list[str] = []

    def put(html: str) -> str:
        stash.append(html)
        return f"\x02{len(stash) - 1}\x03"

    def code(m: re.Match) -> str:
        body = m.group(1).strip()
        return put(f"<code>{_escape_text(body)}</code>") if body else "\x00"

    if "`" in text:
        text = _CODE_SPAN.sub(code, text)
        if "`" in text or "\x00" in text:
            return None
    if "$" in text:
        if any("\x02" in m.group(1) for m in _MATH_SPAN.finditer(text)):
            return None
        text = _MATH_SPAN.sub(lambda m: put(state.token(unescape(m.group(1)), display=False)), text)
        if "$" in text:  # a lone $ is a problem the converter reports
            return None
    if "\\" in text:  # escapes
        return None
    hrefs: list[str] = []

    def link(m: re.Match) -> str:
        inner = _emphasis(m.group(1), stash)
        hrefs.append(m.group(2))
        return "\x00" if inner is None else put(f'<a href="{m.group(2)}">{inner}</a>')

    if "[" in text or "]" in text:
        text = _LINK_SPAN.sub(link, text)
        if "[" in text or "]" in text or "\x00" in text:
            return None
    html = _emphasis(text, stash)
    if html is not None:
        links.extend(hrefs)
    return html


_LOOSE_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")  # a _ not between two letters or digits


def _emphasis(text: str, stash: list[str]) -> str | None:
    """``text`` (with placeholders) as HTML, its ``*`` and ``**`` pairs made <em> and <strong>; None
    where Python-Markdown could pair them otherwise (runs of other lengths, a run that cannot open
    or close, ``_`` that is not inside a word)."""
    if "_" in text and _LOOSE_UNDERSCORE.search(text):
        return None
    text = _escape_text(text)  # (leaves every character next to a * as much a space as it was)
    if "*" in text:
        runs = list(_DELIMITERS.finditer(text))
        if len(runs) % 2:
            return None
        out, done = [], 0
        for opener, closer in zip(runs[::2], runs[1::2], strict=True):
            size = len(opener.group())
            if size != len(closer.group()) or text[opener.end()].isspace() or text[closer.start() - 1].isspace():
                return None
            tag = "em" if size == 1 else "strong"
            out += [text[done:opener.start()], f"<{tag}>", text[opener.end():closer.start()], f"</{tag}>"]
            done = closer.end()
        out.append(text[done:])
        text = "".join(out)
    return _STASHED.sub(lambda m: stash[int(m.group(1))], text) if "\x02" in text else text


def _escape_text(text: str) -> str:
    return text.replace("&", "&amp;").replace(">", "&gt;")


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
