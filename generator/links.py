"""The link stage: every relative link of every page reaches a built file, every ``#anchor`` an
id on it, and no id is used twice on a page.

A page's links are collected once, where the page is rendered (:func:`page_links`: its ids in
order and its link targets, a few strings where the page is kilobytes), and checked once every
page is known (:class:`LinkChecker`). ``labs build`` checks a fresh site with a new checker;
``labs serve`` keeps one checker across rebuilds, which checks again only the pages whose links
changed and the pages linking to a page whose ids changed. A problem is reported at the
Markdown or YAML line that wrote the link or the id, when it can be found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from html import unescape
from urllib.parse import unquote, urlsplit

from generator.errors import Diagnostic, display_path
from generator.prose.slug import slugify
from generator.model import Content

# What the check needs of a page: its ids in order (repeats kept) and its link targets (unescaped).
PageLinks = tuple[list[str], list[str]]

NOT_CHECKED = "404.html"  # its links start at the site root, wherever a host serves it

_ID_RE = re.compile(r'id="([^"]+)"')  # an id attribute when whitespace comes before it (see _ids)
_HREF_RE = re.compile(r'<a\s[^>]*?href="([^"]*)"')


def _ids(html: str) -> list[str]:
    """The values of ``id="…"`` attributes preceded by whitespace, in order. (``id="`` is searched
    for as a literal and the character before it checked: ``\\sid="…"`` as one pattern made the
    regular expression engine try every character of a page.)"""
    return [m.group(1) for m in _ID_RE.finditer(html) if html[m.start() - 1:m.start()].isspace()]


def page_links(html: str) -> PageLinks:
    """What the link check needs of a page. Our pages come from Jinja and Markdown, which always
    double-quote attributes, so regular expressions are enough, where a parser would cost more than
    rendering the page."""
    return _ids(html), [unescape(h) for h in _HREF_RE.findall(html)]


def collect(files: Mapping[str, bytes], known: Mapping[str, PageLinks] = {}) -> dict[str, PageLinks]:
    """Every page's links: those in ``known`` (collected where the pages were rendered) as they are,
    and every other ``.html`` file of ``files`` read for them."""
    links = dict(known)
    links.update({path: page_links(data.decode("utf-8")) for path, data in files.items()
                  if path.endswith(".html") and path not in links})
    return links


@dataclass
class _Checked:
    links: PageLinks
    ids: frozenset[str]
    targets: frozenset[str] = frozenset()  # the pages its links reach
    problems: tuple[Diagnostic, ...] = ()


class LinkChecker:
    """Checks the links of a site's pages, and remembers what it found: called again with the
    pages of a later build, it checks again only the pages whose links changed, the pages linking
    to a page whose ids changed, and every page when the set of files changed. The problems are
    those a new checker would find."""

    def __init__(self) -> None:
        self._pages: dict[str, _Checked] = {}
        self._linkers: dict[str, set[str]] = {}  # page -> pages whose links reach it
        self._files: frozenset[str] = frozenset()

    def check(self, links: Mapping[str, PageLinks], files: Collection[str], content: Content) -> list[Diagnostic]:
        """The problems of the pages in ``links`` (by output path, as :func:`collect` gives them),
        whose links may reach any of ``files`` (every output path of the site)."""
        recheck: set[str] = set()
        ids_changed = set(self._pages) - set(links)
        for gone in ids_changed:
            del self._pages[gone]
        for path, page in links.items():
            old = self._pages.get(path)
            if old is not None and (old.links is page or old.links == page):
                continue
            ids = frozenset(page[0])
            if old is None or old.ids != ids:
                ids_changed.add(path)
            self._pages[path] = _Checked(page, ids)
            recheck.add(path)
        known = frozenset(files)
        if known != self._files:
            recheck = set(self._pages)
            self._files = known
        for target in ids_changed:
            recheck |= self._linkers.get(target, set())
        # A problem is placed at the line that wrote the link, which an edit may have moved.
        recheck |= {path for path, page in self._pages.items() if page.problems}
        for path in recheck:
            page = self._pages.get(path)
            if page is None or path == NOT_CHECKED:
                continue
            for target in page.targets:
                self._linkers.get(target, set()).discard(path)
            page.targets, problems = page_link_problems(path, page.links[1], known, self._ids_of, content)
            page.problems = tuple(problems) + tuple(_duplicate_id_problems(path, page.links[0], content))
            for target in page.targets:
                self._linkers.setdefault(target, set()).add(path)
        return [d for page in self._pages.values() for d in page.problems]

    def _ids_of(self, path: str) -> frozenset[str] | None:
        page = self._pages.get(path)
        return page.ids if page is not None else None


def check_links(links: Mapping[str, PageLinks], files: Collection[str], content: Content) -> list[Diagnostic]:
    """The problems of a whole site's pages (:meth:`LinkChecker.check` of a new checker)."""
    return LinkChecker().check(links, files, content)


def partial_link_problems(links: Mapping[str, PageLinks], files: Collection[str], content: Content,
                          unbuilt: Mapping[str, Iterable[str]]) -> list[Diagnostic]:
    """Link problems of a build that has other mistakes. ``unbuilt``: each lab that did not load,
    by slug, with the links it wrote in what did load (its Markdown, FAQ and quiz as far as they
    were read). Their pages are not there: links to them are taken as good (their anchors cannot
    be known), and the links they wrote are checked."""
    known = set(files) | {f"labs/{slug}/index.html" for slug in unbuilt}
    checker = LinkChecker()
    problems = checker.check(links, known, content)
    for slug, hrefs in unbuilt.items():
        problems += page_link_problems(f"labs/{slug}/index.html", list(hrefs), known, checker._ids_of, content)[1]
    return problems


def page_link_problems(path: str, hrefs: Iterable[str], files: Collection[str],
                       ids_of: Callable[[str], Collection[str] | None],
                       content: Content) -> tuple[frozenset[str], list[Diagnostic]]:
    """Check the links of one page: the pages they reach, and a diagnostic for each broken one.
    ``ids_of(page)`` gives the ids on a built page (None for files that are not pages)."""
    base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    targets: set[str] = set()
    problems = []
    for href in hrefs:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith("mailto:"):
            continue
        target = _normalise(base + unquote(parts.path)) if parts.path else path
        if target.endswith("/") or target == "":
            target += "index.html"
        targets.add(target)
        if target not in files:
            problems.append(_link_problem(content, path, href, "link to a page that does not exist"))
        elif parts.fragment and "=" not in parts.fragment:  # "#s=…&q=…" is widget state, not an anchor
            ids = ids_of(target)
            if ids is not None and parts.fragment not in ids:
                problems.append(_link_problem(content, path, href, "link to a missing anchor"))
    return frozenset(targets), problems


def _duplicate_id_problems(path: str, ids: list[str], content: Content) -> list[Diagnostic]:
    """An id used twice on a page (a section id or a Markdown heading that collides with the
    theme's, e.g. "quiz") makes links to it land in the wrong place."""
    if len(set(ids)) == len(ids):
        return []
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    return [_id_problem(content, path, i) for i in repeated]


def _normalise(path: str) -> str:
    out: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if out:
                out.pop()
        elif part not in (".",):
            out.append(part)
    return "/".join(out)


def _raw_id(element_id: str) -> re.Pattern:
    """``id="x"``, ``id='x'`` or ``id=x`` in raw HTML, with the ``id`` at the match's start."""
    return re.compile(rf"""(?<![\w-])id\s*=\s*(?:"{re.escape(element_id)}"|'{re.escape(element_id)}'|{re.escape(element_id)}(?=[\s/>]|$))""")


def _id_problem(content: Content, page: str, element_id: str) -> Diagnostic:
    message = f"id {element_id!r} is used twice on {page}; links to #{element_id} would land on the first"
    slug = page.split("/")[1] if page.startswith("labs/") else None
    if slug:
        folder = content.root / "labs" / slug
        for f in sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.md")):
            for i, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
                stripped = line.strip().lstrip("- ")
                heading = line.lstrip("#").strip() if line.startswith("#") else None
                if stripped == f"id: {element_id}" or (heading is not None and slugify(heading) == element_id):
                    return Diagnostic(display_path(f), i + 1, len(line) - len(line.lstrip()) + 1, message, line)
                raw = _raw_id(element_id).search(line) if f.suffix == ".md" else None
                if raw:  # raw HTML in Markdown: <span id="quiz">
                    return Diagnostic(display_path(f), i + 1, raw.start() + 1, message, line)
    return Diagnostic(f"theme/templates (page {page})", 1, 1, message)


def _link_problem(content: Content, page: str, href: str, message: str) -> Diagnostic:
    """Point at the Markdown or YAML line that wrote the link when we can find it: the link as
    written (``](other.html)``), else its ``#anchor`` (the author wrote ``lab:x#anchor``)."""
    slug = page.split("/")[1] if page.startswith("labs/") else None
    anchor = href.partition("#")[2]
    needles = [f"]({href}", f"({href}"] + ([f"#{anchor}"] if anchor else [])
    if slug:
        folder = content.root / "labs" / slug
        for needle in needles:
            for f in sorted(folder.glob("*.md")) + sorted(folder.glob("*.yaml")):
                lines = f.read_text(encoding="utf-8").splitlines()
                for i, line in enumerate(lines):
                    col = line.find(needle)
                    if col >= 0:
                        start = line.rfind("(", 0, col + len(needle))
                        return Diagnostic(display_path(f), i + 1, (start if start >= 0 else col) + 2,
                                          f"{message}: {href}", line)
    return Diagnostic(f"theme/templates (page {page})", 1, 1, f"{message}: {href}")
