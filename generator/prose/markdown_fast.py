"""What Python-Markdown would write for the plain Markdown most of a lab is, written directly.

:func:`simple_markdown`: the plain shapes lab prose, quiz feedback and FAQ answers use —
paragraphs, ``#`` headings of plain text, lists without blank lines between items, fenced code
between blank lines — whose only inline Markdown is ``*em*``, ``**strong**``, ```code```,
``$math$`` and ``[text](url)``. Anything else is declined (None), and the converter
(:mod:`generator.prose.markdown_render`) does the whole text. It gives exactly what the converter
gives, which ``tests/test_markdown_render.py`` checks on many generated inputs; what it saves of
a build is measured in ``docs/benchmarks.md`` ("Stand-ins for a library").
"""

from __future__ import annotations

import re
import threading
from html import unescape

from generator.prose.highlight import CODEHILITE, Highlighter
from generator.prose.mathml import INLINE_MATH, MathState
from generator.prose.slug import slugify

_local = threading.local()

# Text of none of Markdown's or HTML's special characters: a heading's text taken as it is.
_PLAIN = re.compile(r"[^\\`*_\[\]<>&$|~{}\n\r\t\u00a0\ue000\ue001]*")


# simple_markdown declines HTML, entities, escapes, tables, quotes, nested or loose lists, and a
# delimiter Python-Markdown might pair otherwise. Fenced code is highlighted as codehilite does it
# (generator/prose/highlight.py).

# Anywhere, code included: what the converter's first step rewrites (tabs, line ends, control
# characters, lines of spaces); outside code: display math, escaped backticks, images, runs of
# three *, hard line breaks, more than one blank line, HTML, entities and tables.
_CONTROL = re.compile(r"[\t\r\x00-\x09\x0b-\x1f\x7f\x85\u2028\u2029\ud800-\uf8ff\ufeff]")
_SPACES_LINE = re.compile(r"^ +$", re.M)
_TEXT_DECLINED = ("$$", "``", "\\`", "![", "***", " \n", "\n\n\n")
# A numeric character reference counts without its ";" (HTML reads "&#169 x" as "© x").
_HTML_OR_TABLE = re.compile(r"[<|]|&(?:#[0-9]|#[xX][0-9a-fA-F]|[0-9a-zA-Z]+;)")
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


def simple_markdown(source: str, state: MathState, links: list[str]) -> str | None:
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
        highlighter = _local.highlighter = Highlighter(CODEHILITE)
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
