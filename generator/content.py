"""Load stage: ``content/`` (YAML + Markdown) → the frozen objects of :mod:`generator.model`.

Layout::

    content/site.yaml                 title, description, base_url, language, topics, labs (order)
    content/labs/<slug>/lab.yaml      number, title, subtitle, tagline, topic, summary, legend,
                                      gist, sections, cards, widget
    content/labs/<slug>/*.md          prose named by lab.yaml (gist, under the hood, …)
    content/labs/<slug>/faq.yaml      a list of {question, answer}
    content/labs/<slug>/quiz.yaml     {questions: [...]} — single, multiple and word questions

faq.yaml and quiz.yaml are read by :mod:`generator.faq` and :mod:`generator.quiz`, through the
loader's Reader and its inline Markdown. Every problem found is recorded with its
``file:line:col``; :func:`load_content` raises one :class:`ContentError` listing all of them, so
an author fixes a whole batch per build.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Collection

from generator.errors import ContentError, Diagnostic, Diagnostics, SiteError, did_you_mean, display_path
from generator.faq import read_faq
from generator.kinds import LabKind, get_kind, kind_names
from generator.prose.markdown_render import MarkdownLimit, RenderedMarkdown, render_markdown
from generator.prose.slug import SLUG_RE, slugify
from generator.quiz import read_quiz
from generator.model import Card, Content, FaqItem, Lab, LegendItem, Quiz, Section, Site, Topic, quiz_storage_key
from generator.filepolicy import file_problem, walk_files
from generator.hostheaders import frame_ancestors
from generator.source import Reader, YamlDoc, load_yaml, read_text

_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?")
_LANGUAGE = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")  # BCP 47's shape: en, en-GB, zh-Hant-TW, de-CH-1996


def valid_base_url(url: str) -> bool:
    """An absolute http(s) URL with a plain host and nothing a URL must not hold unescaped
    (spaces, quotes, angle brackets, backslashes, control characters), and no ?query or #fragment:
    every page's URL is made by appending its path."""
    if any(c.isspace() or c in "\"'<>\\`{}|^?#" or not c.isprintable() or not c.isascii() for c in url):
        return False
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0]
    return scheme in ("http", "https") and bool(_HOST.fullmatch(host))


def valid_language(tag: str) -> bool:
    """A language tag shaped like BCP 47 (``en``, ``en-GB``, ``pt-BR``, ``zh-Hant``)."""
    return bool(_LANGUAGE.fullmatch(tag))
MAX_LAB_NUMBER = 999  # shown as two or three digits ("07") on cards and pages
LAB_FILES = ("lab.yaml", "faq.yaml", "quiz.yaml")
LAB_KEYS = ("number", "title", "tagline", "topic", "summary", "gist")  # required of every lab
LAB_OPTIONAL_KEYS = ("subtitle", "legend", "sections", "cards")


class _Loader:
    def __init__(self, root: Path):
        self.root = root
        self.diags = Diagnostics()
        self.partial: Lab | None = None  # the last lab with mistakes, as far as it loaded
        self.lost: set[str] = set()  # ids of its parts left out for their mistakes (links to them are not broken)

    # -- files ------------------------------------------------------------------------
    def yaml(self, path: Path) -> YamlDoc | None:
        try:
            return load_yaml(path, self.root.parent, inside=self.root)
        except ContentError as exc:
            self.diags.extend(exc)
            return None

    def contained(self, reader: Reader, where: tuple, folder: Path, name: str) -> Path | None:
        """``folder/name`` if, as written, it stays inside ``folder`` (no ``..`` or absolute path).
        Symbolic links are the content-wide policy's (see :mod:`generator.filepolicy`),
        checked when the file is read."""
        target = Path(os.path.normpath(folder / name))
        if not target.is_relative_to(Path(os.path.normpath(folder))):
            reader.error(where, f"path {name!r} points outside {display_path(folder, self.root.parent)}/")
            return None
        return target

    def markdown(self, reader: Reader, where: tuple, folder: Path, links) -> tuple[RenderedMarkdown, str] | None:
        """Render the Markdown file named at ``where``; returns it with its author-facing path."""
        name = reader.string(where, multiline=False)
        if name is None:
            return None
        path = self.contained(reader, where, folder, name)
        if path is None:
            return None
        if not os.path.lexists(path):
            reader.error(where, f"Markdown file {name!r} not found in {display_path(folder, self.root.parent)}/")
            return None
        try:
            text = read_text(path, self.root.parent, inside=self.root)
        except ContentError as exc:
            self.diags.extend(exc)
            return None
        shown = display_path(path, self.root.parent)
        try:
            rendered = render_markdown(text, links.resolve)
        except MarkdownLimit as exc:
            line = text.count("\n", 0, exc.offset) + 1
            column = exc.offset - (text.rfind("\n", 0, exc.offset) + 1) + 1
            self.diags.add(Diagnostic(shown, line, column, exc.message, text.splitlines()[line - 1][:200]
                                      if text.splitlines() else ""))
            return None
        self.check_markdown(rendered, shown, text, links)
        return rendered, shown

    def inline_markdown(self, reader: Reader, where: tuple, links, *, required: bool = True) -> RenderedMarkdown | None:
        """Render the Markdown text written in a YAML value (FAQ answers, quiz feedback)."""
        text = reader.string(where, required=required)
        if text is None:
            return None
        doc = reader.doc
        try:
            rendered = render_markdown(text, links.resolve)
        except MarkdownLimit as exc:
            line, col = doc.position(where)
            self.diags.add(doc.diagnostic_at(line, col, exc.message))
            return None
        for problem in rendered.math_problems:
            line, col = doc.locate(where, problem.tex.strip())
            self.diags.add(doc.diagnostic_at(line, col + problem.offset, problem.message))
        for href in rendered.links:
            message = links.problem(href)
            if message:
                line, col = doc.locate(where, href)
                self.diags.add(doc.diagnostic_at(line, col, message))
        return rendered

    def check_markdown(self, rendered: RenderedMarkdown, shown: str, text: str, links) -> None:
        def at(needle: str, offset: int = 0) -> tuple[int, int]:
            found = text.find(needle)
            index = found + offset if found >= 0 else 0
            return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1

        lines = text.splitlines()
        for problem in rendered.math_problems:
            line, col = at(problem.tex.strip(), problem.offset)
            self.diags.add(Diagnostic(shown, line, col, problem.message, lines[line - 1] if lines else ""))
        for href in rendered.links:
            message = links.problem(href)
            if message:
                line, col = at(href)
                self.diags.add(Diagnostic(shown, line, col, message, lines[line - 1] if lines else ""))

    # -- site -------------------------------------------------------------------------
    def site(self) -> tuple[Site | None, YamlDoc | None]:
        doc = self.yaml(self.root / "site.yaml")
        if doc is None:
            return None, None
        r = Reader(doc, self.diags, content=self.root)
        if r.mapping((), required=("title", "description", "topics"), optional=("base_url", "language", "labs", "embed")) is None:
            return None, doc
        topics: list[Topic] = []
        seen: set[str] = set()
        for i, _ in enumerate(r.sequence(("topics",)) or []):
            if r.mapping(("topics", i), required=("slug", "title", "blurb")) is None:
                continue
            slug = r.string(("topics", i, "slug"), multiline=False)
            title = r.string(("topics", i, "title"), multiline=False)
            blurb = r.string(("topics", i, "blurb"))
            if slug and not SLUG_RE.match(slug):
                r.error(("topics", i, "slug"), f"topic slug {slug!r} must be lower-case letters, digits and dashes")
            elif slug in seen:
                r.error(("topics", i, "slug"), f"duplicate topic slug {slug!r}")
            elif slug and title and blurb:
                seen.add(slug)
                topics.append(Topic(slug, title, blurb.strip()))
        base_url = r.string(("base_url",), required=False, multiline=False) or ""
        if base_url and not valid_base_url(base_url):
            r.error(("base_url",), f"base_url {base_url!r} must be an absolute http(s) URL such as https://example.org/labs/, "
                                 "with no ?query or #fragment")
            base_url = ""
        if base_url and not base_url.endswith("/"):
            base_url += "/"
        order = []
        for i, _ in enumerate(r.sequence(("labs",), nonempty=False) or []):
            slug = r.string(("labs", i), multiline=False)
            if slug in order:
                r.error(("labs", i), f"lab {slug!r} is listed twice")
            elif slug:
                order.append(slug)
        language = r.string(("language",), required=False, multiline=False) or "en"
        if not valid_language(language):
            r.error(("language",), f"language {language!r} must be a language tag such as en, en-GB or pt-BR")
            language = "en"
        site = Site(title=r.string(("title",), multiline=False) or "", description=(r.string(("description",)) or "").strip(),
                    base_url=base_url, language=language, topics=tuple(topics), lab_order=tuple(order),
                    frame_ancestors=frame_ancestors(r))
        return site, doc

    # -- labs -------------------------------------------------------------------------
    def lab(self, slug: str, folder: Path, site: Site, links) -> Lab | None:
        before = len(self.diags.items)
        for name in LAB_FILES:
            path = folder / name
            if not os.path.lexists(path):
                self.diags.add(Diagnostic(display_path(path, self.root.parent), 1, 1,
                                          f"lab {slug!r} needs a {name} (run `labs new {slug}` to see a complete lab)"))
        doc = self.yaml(folder / "lab.yaml") if os.path.lexists(folder / "lab.yaml") else None
        if doc is None:
            return None
        r = Reader(doc, self.diags, content=self.root)
        kind = self.kind(r)
        if kind is None:
            return None
        if r.mapping((), required=("kind",) + LAB_KEYS + kind.required,
                     optional=LAB_OPTIONAL_KEYS + tuple(k for k in kind.keys if k not in kind.required)) is None:
            return None
        number = r.integer(("number",), minimum=0, maximum=MAX_LAB_NUMBER)
        lab_title = r.string(("title",), multiline=False)
        subtitle = r.string(("subtitle",), required=False, multiline=False) or ""
        tagline = r.string(("tagline",))
        summary = r.string(("summary",))
        topic = r.string(("topic",), multiline=False)
        topic_slugs = [t.slug for t in site.topics]
        if topic and topic not in topic_slugs:
            r.error(("topic",), f"unknown topic {topic!r}{did_you_mean(topic, topic_slugs)}; topics are declared in content/site.yaml")
        legend = []
        for i, _ in enumerate(r.sequence(("legend",)) or []):
            if r.mapping(("legend", i), required=("term", "meaning")) is not None:
                term, meaning = r.string(("legend", i, "term"), multiline=False), r.string(("legend", i, "meaning"), multiline=False)
                if term and meaning:
                    legend.append(LegendItem(term, meaning))
        gist = self.section(r, ("gist",), folder, links, default_id="gist")
        sections = []
        for i, _ in enumerate(r.sequence(("sections",), nonempty=False) or []):
            section = self.section(r, ("sections", i), folder, links)
            if section:
                sections.append(section)
        ids = [s.id for s in sections] + (["gist"] if gist else [])
        for i, s in enumerate(sections):
            if ids.count(s.id) > 1:
                r.error(("sections", i), f"duplicate section id {s.id!r}")
        sections = [s for i, s in enumerate(sections) if s.id not in ids[:i]]  # (the first of each, if it loads partly)
        cards = []
        for i, _ in enumerate(r.sequence(("cards",), nonempty=False) or []):
            if r.mapping(("cards", i), required=("title", "body"), optional=("icon",)) is None:
                continue
            title = r.string(("cards", i, "title"), multiline=False)
            icon = r.string(("cards", i, "icon"), required=False, multiline=False) or ""
            body = self.inline_markdown(r, ("cards", i, "body"), links)
            if title and body:
                cards.append(Card(title, icon, body.html))
        before_spec = len(self.diags.items)
        spec = kind.read(r, folder)
        if spec is None and len(self.diags.items) == before_spec:  # a kind must say what is wrong
            r.error(("kind",), f"lab kind {kind.name!r} could not read this lab and gave no reason")
        faq = self.faq(folder / "faq.yaml", links)
        quiz = self.quiz(folder / "quiz.yaml", slug, kind, spec, links)
        if (number is None or lab_title is None or tagline is None or summary is None or topic is None
                or gist is None or spec is None):
            return None
        lab = Lab(
            slug=slug,
            number=number,
            title=lab_title,
            subtitle=subtitle,
            tagline=tagline.strip(),
            topic=topic,
            summary=summary.strip(),
            legend=tuple(legend),
            gist=gist,
            sections=tuple(sections),
            cards=tuple(cards),
            faq=faq or (),
            quiz=quiz or Quiz((), quiz_storage_key(slug, "")),
            kind=kind.name,
            spec=spec,
            source_dir=folder,
            number_at=(doc.path, *doc.position(("number",))),
        )
        if len(self.diags.items) > before or faq is None or quiz is None:
            self.partial = lab  # as far as it loaded: still computed and link-checked, never written
            return None
        return lab

    def section(self, r: Reader, where: tuple, folder: Path, links, default_id: str = "") -> Section | None:
        if r.mapping(where, required=("file", "kicker") + (() if default_id else ("title",)),
                     optional=("id",) + (("title",) if default_id else ())) is None:
            return None
        kicker = r.string(where + ("kicker",), multiline=False)
        title = r.string(where + ("title",), required=not default_id, multiline=False) or ""
        section_id = r.string(where + ("id",), required=False, multiline=False) or default_id or slugify(title)
        if not SLUG_RE.match(section_id):
            r.error(where + ("id",), f"section id {section_id!r} must be lower-case letters, digits and dashes")
        rendered = self.markdown(r, where + ("file",), folder, links)
        if rendered is None or kicker is None:
            self.lost.add(section_id)
            return None
        return Section(section_id, kicker, title, rendered[0].html, rendered[1])

    def kind(self, r: Reader) -> LabKind | None:
        """The lab kind named by ``kind:`` (reported at that line when unknown)."""
        root = r.value(())
        if not isinstance(root, dict):
            r.mapping((), required=("kind",))
            return None
        if "kind" not in root:
            r.error((), f"missing required key 'kind': name the lab's kind, one of: {', '.join(kind_names())}")
            return None
        name = r.string(("kind",), multiline=False)
        if name is None:
            return None
        known = kind_names()
        if name not in known:
            r.error(("kind",), f"unknown lab kind {name!r}{did_you_mean(name, known)}; "
                    f"the installed kinds are: {', '.join(known) or 'none'}")
            return None
        try:
            return get_kind(name)
        except SiteError as exc:
            r.error(("kind",), str(exc))
            return None

    def reader(self, path: Path) -> Reader | None:
        """A Reader for an optional YAML file; None if it is missing (reported by the caller) or unreadable."""
        doc = self.yaml(path) if os.path.lexists(path) else None
        return Reader(doc, self.diags, content=self.root) if doc is not None else None

    def faq(self, path: Path, links) -> tuple[FaqItem, ...] | None:
        r = self.reader(path)
        return read_faq(r, partial(self.inline_markdown, links=links), self.lost) if r is not None else None

    def quiz(self, path: Path, slug: str, kind: LabKind, spec, links) -> Quiz | None:
        r = self.reader(path)
        if r is None:
            return None
        return read_quiz(r, slug, kind, spec, partial(self.inline_markdown, links=links), self.lost)


class LinkTargets:
    """Knows which labs and topics exist; checks and rewrites ``lab:``/``topic:``/``index:`` links.

    Markdown is rendered once per lab and shown on that lab's page (``labs/<slug>/``), so the
    relative URLs below are from there.
    """

    def __init__(self, lab_slugs, topic_slugs):
        self.labs = set(lab_slugs)
        self.topics = set(topic_slugs)

    def problem(self, href: str) -> str | None:
        scheme, _, rest = href.partition(":")
        if scheme not in ("lab", "topic", "index") or "//" in href[:8]:
            return None
        slug = rest.partition("#")[0]
        if scheme == "lab" and slug not in self.labs:
            return f"link to unknown lab {slug!r}{did_you_mean(slug, self.labs)}"
        if scheme == "topic" and slug not in self.topics:
            return f"link to unknown topic {slug!r}{did_you_mean(slug, self.topics)}"
        return None

    def resolve(self, href: str) -> str | None:
        scheme, _, rest = href.partition(":")
        slug, _, anchor = rest.partition("#")
        anchor = f"#{anchor}" if anchor else ""
        if scheme == "lab":
            return f"../{slug}/{anchor}" if slug else anchor
        if scheme == "topic":
            return f"../../topics/{slug}/{anchor}"
        if scheme == "index":
            return f"../../{anchor}" or "../../"
        return None


class RecordingLinkTargets(LinkTargets):
    """LinkTargets that remembers every question a lab asked (every link it wrote), with the answers."""

    def __init__(self, lab_slugs, topic_slugs):
        super().__init__(lab_slugs, topic_slugs)
        self.asked: dict[str, str | None] = {}

    def problem(self, href: str) -> str | None:
        answer = super().problem(href)
        self.asked[href] = answer
        return answer


_NUMBER_LINE = re.compile(r"^number:[ \t]*([0-9]{1,3})[ \t]*(?:#.*)?$", re.MULTILINE)


def written_number(folder: Path) -> int:
    """The ``number:`` a lab folder's lab.yaml gives at its top level, as the site orders labs
    that site.yaml does not list (by number, then by folder name); past every number if there is
    none to read (the loader reports why)."""
    path = folder / "lab.yaml"
    if file_problem(path, folder.parent.parent, None) is not None or not path.is_file():
        return MAX_LAB_NUMBER + 1
    try:
        found = _NUMBER_LINE.search(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return MAX_LAB_NUMBER + 1
    return int(found.group(1)) if found else MAX_LAB_NUMBER + 1


def lab_folders(root: Path) -> list[str]:
    labs_dir = root / "labs"
    if not labs_dir.is_dir():
        return []
    return sorted(p.name for p in labs_dir.iterdir() if p.is_dir() and not p.name.startswith("."))


@dataclass(frozen=True)
class SiteSource:
    """site.yaml, read: what every lab needs to know to load itself."""

    root: Path
    site: Site
    order: tuple[str, ...]  # the labs to load, in the site's order
    links: LinkTargets
    problems: tuple[Diagnostic, ...]


def load_site(root: Path) -> SiteSource:
    """Read ``site.yaml`` and find the lab folders. Raises ContentError only when there is no
    usable site at all; other problems are returned with it, to be reported with the labs'."""
    root = Path(root)
    if not root.is_dir():
        raise ContentError([Diagnostic(display_path(root), 1, 1,
                                       "content folder not found (run `labs init DIR` to start a site)")])
    loader = _Loader(root)
    site, site_doc = loader.site()
    if site is None:
        loader.diags.raise_if_any()
    assert site is not None and site_doc is not None
    folders = lab_folders(root)
    site_reader = Reader(site_doc, loader.diags, content=loader.root)
    for i, slug in enumerate(site.lab_order):
        if slug not in folders:
            site_reader.error(("labs", i), f"no lab folder content/labs/{slug}/{did_you_mean(slug, folders)}")
    for slug in folders:
        if not SLUG_RE.match(slug):
            loader.diags.add(Diagnostic(display_path(root / "labs" / slug, root.parent), 1, 1,
                                        f"lab folder name {slug!r} must be lower-case letters, digits and dashes"))
    order = [s for s in site.lab_order if s in folders] + sorted(
        (s for s in folders if s not in site.lab_order), key=lambda s: (written_number(root / "labs" / s), s))
    order = [s for s in order if SLUG_RE.match(s)]
    links = LinkTargets(order, [t.slug for t in site.topics])
    return SiteSource(root, site, tuple(order), links, tuple(loader.diags.items))


def load_lab(source: SiteSource, slug: str, *, partial: bool = False) -> tuple:
    """Load one lab folder: the lab (None if it has mistakes) and its problems. With ``partial``,
    a lab with mistakes comes back as far as it loaded (the items with mistakes left out), when
    enough of it loaded to compute it, so that a build checks its claims and links in the same run;
    a third value is then the ids of the parts left out (a link to one of them is not broken).

    A pure function of the lab's files and the site, so labs can load in parallel and a
    rebuild can reuse the labs whose files did not change."""
    loader = _Loader(source.root)
    folder = source.root / "labs" / slug
    folder_problem = file_problem(folder, source.root, source.root.parent)
    if folder_problem is not None:  # nothing is read through a link out of content/
        return (None, (folder_problem,)) + ((frozenset(),) if partial else ())
    policy: list[Diagnostic] = []  # the file policy over the whole folder, before anything is read
    for _ in walk_files(folder, source.root, source.root.parent, policy):
        pass
    lab = loader.lab(slug, folder, source.site, source.links)
    reported = {(d.path, d.message) for d in loader.diags.items}
    problems = loader.diags.items + [p for p in policy if (p.path, p.message) not in reported]
    if problems:
        found = (loader.partial if partial and lab is None else None), tuple(problems)
    else:
        found = lab, ()
    return found + ((frozenset(loader.lost),) if partial else ())


def assemble(source: SiteSource, loaded: list[tuple[Lab | None, tuple[Diagnostic, ...]]]) -> Content:
    """The site and its labs as one Content, or one ContentError with every problem of them all."""
    content, problems = assemble_partial(source, loaded)
    if problems:
        raise ContentError(problems)
    return content


def assemble_partial(source: SiteSource, loaded: list[tuple[Lab | None, tuple[Diagnostic, ...]]],
                     ) -> tuple[Content, list[Diagnostic]]:
    """The labs that loaded without mistakes, and every problem found — so that a build can go
    on to check the good labs' claims and report everything in one run."""
    problems = list(source.problems)
    numbers: dict[int, Lab] = {}
    for lab, lab_problems in loaded:
        problems.extend(lab_problems)
        if lab is None:
            continue
        if lab.number in numbers:
            path, line, column = lab.number_at
            problems.append(Diagnostic(path, line, column, f"lab number {lab.label} is already used by lab "
                                                           f"{numbers[lab.number].slug!r}"))
        else:
            numbers[lab.number] = lab
    return Content(site=source.site, labs=tuple(lab for lab, _ in loaded if lab is not None),
                   root=source.root), problems


def load_content(root: Path, map_labs: Callable = map) -> Content:
    """Parse and validate everything under ``root``; raise one :class:`ContentError` listing every
    problem. ``map_labs`` may be a process pool's ``map``: labs load independently."""
    content, problems = load_content_partial(root, map_labs)
    if problems:
        raise ContentError(problems)
    return content


def load_content_partial(root: Path, map_labs: Callable = map) -> tuple[Content, list[Diagnostic]]:
    """Like :func:`load_content`, but returns the labs that loaded cleanly with the problems."""
    source = load_site(root)
    return assemble_partial(source, list(map_labs(partial(load_lab, source), source.order)))


STATIC_DIR = "static"  # content/static/: copied into the site's root as it is


def static_files(root: Path, generated: Collection[str]) -> dict[str, bytes]:
    """The files of ``content/static/`` by their path in the site (CNAME, .nojekyll, images),
    read as they are. A path the build generates itself, or a symbolic link out of content/,
    is an error naming the file."""
    folder = Path(root) / STATIC_DIR
    if not os.path.lexists(folder):
        return {}
    problems: list[Diagnostic] = []
    problem = file_problem(folder, Path(root), Path(root).parent)
    if problem is not None:
        raise ContentError([problem])
    if not folder.is_dir():
        raise ContentError([Diagnostic(display_path(folder, Path(root).parent), 1, 1,
                                       "content/static must be a folder of files to copy into the site")])
    out: dict[str, bytes] = {}
    for rel, path in walk_files(folder, Path(root), Path(root).parent, problems):  # never opens a FIFO
        shown = display_path(path.parent, Path(root).parent) + "/" + path.name
        if rel in generated:
            what = "the build's own marker" if rel.startswith(".labs-build") else "a page or file the build generates"
            problems.append(Diagnostic(shown, 1, 1, f"{STATIC_DIR}/{rel} would replace {rel}, {what}; "
                                                    "rename or move it"))
            continue
        try:
            out[rel] = path.read_bytes()
        except OSError as exc:
            problems.append(Diagnostic(shown, 1, 1, f"cannot read file: {exc.strerror}"))
    if problems:
        raise ContentError(problems)
    return out
