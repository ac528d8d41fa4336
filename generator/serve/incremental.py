"""Incremental builds for ``labs serve``: the site a full build makes, redoing only what changed.

``labs build`` runs the stages of :mod:`generator.pipeline` over every lab. :class:`SiteBuilder`
runs the same stage functions (``load_site``, ``load_lab``, ``compute_lab``, ``render_lab``,
``Renderer.render_site``, the link checker, ``finish_site``) but keeps their results and, told
which files changed, redoes the least work that still gives byte-for-byte the same files
(``tests/test_serve.py`` checks this against a full build):

load     ``site.yaml`` is read again when it or the list of lab folders changed. A lab is kept
         with a SHA-256 of every file in its folder, the topic slugs it was validated against
         and the answer to every ``lab:``/``topic:`` link check it made; it is read again only
         when one of those changed. A file reached through a symbolic link in the lab's folder
         (``content/shared/``, another lab's Markdown) counts as the lab's own: a change to it
         is a change to every lab that links to it.
compute  ``compute_lab`` (the lab kind's NumPy precomputation and its checks) is cached by a
         hash of what it reads, as its kind declares (``LabKind.compute_inputs``: the kind's
         spec, its own quiz questions, the options, and the bytes of any file it reads).
         Prose, FAQ and ordinary quiz edits never recompute.
render   every page again (``Renderer.render_site``) when the site settings, the list of labs or the
         theme changed; otherwise the pages of the labs whose content or payload changed, and their
         neighbours', topic pages and index when an attribute of the lab those pages read changed
         (noted as they render: ``Renderer.beside_fields``, ``.shown_fields``): a gist edit, one page.
links    a lab page's links are collected when it is rendered, the other pages' when their
         bytes changed; one :class:`~generator.links.LinkChecker` checks a page again only when
         its links changed or a page it links to gained or lost an id.

A failed run raises what a full build would raise (ContentError / BuildError), with the same
diagnostics in the same order: a site with mistakes is taken as far as it goes by the pipeline's
``check_lab`` and ``site_problems``, as ``labs build`` takes it, so the overlay of ``labs serve``
lists every mistake the terminal of ``labs build`` does. The caches survive it, so fixing the
file costs one lab's work, not a full build.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from generator.speed.buildcache import digest_files as _digest, files_under as _files_under
from generator.content import SiteSource, assemble_partial, lab_folders, load_site
from generator.errors import BuildError, ContentError, Diagnostic, display_path
from generator.kinds import Computed, get_kind
from generator.links import LinkChecker, PageLinks, page_links
from generator.model import Content, Lab
from generator.pipeline import (LoadedLab, RenderedLab, check_lab, compute_lab, finish_site, kinds_of, kinds_site_files,
                                load_lab, render_lab, site_problems)
from generator.render import Renderer, source_date
from generator.theme import Theme

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rebuild:
    """What one :meth:`SiteBuilder.rebuild` made, and how much work it took."""

    files: dict[str, bytes]  # every output file, exactly as build_files returns them
    content: Content
    changed: frozenset[str]  # output paths added, removed or with new bytes since the last good run
    labs_changed: tuple[str, ...]  # labs whose content or payload differs from the last run
    labs_computed: tuple[str, ...]  # labs whose compute_lab ran (cache misses)
    pages_rendered: int
    seconds: float


@dataclass
class _LabEntry:
    digest: str  # of every file in the lab's folder
    topics: tuple[str, ...]  # topic slugs the lab was validated against
    asked: dict[str, str | None]  # link checks made while loading, with their answers
    lab: Lab | None  # None when the lab has mistakes
    diagnostics: tuple[Diagnostic, ...]
    partial: Lab | None = None  # a lab with mistakes as far as it loaded: computed and checked, never served
    lost: frozenset[str] = frozenset()  # the ids of its parts left out for their mistakes
    compute_key: str = ""  # set with payload and problems once computed
    payload: dict | None = None
    problems: tuple[Diagnostic, ...] = ()


@dataclass
class _Rendered:
    """The files of the last completed render and the inputs they were rendered from."""

    key: tuple  # site, lab order, theme digest, base URL, source date: any change re-renders all
    labs: dict[str, tuple[Lab, str]]  # slug -> (lab, compute key)
    lab_files: dict[str, tuple[str, ...]]  # slug -> output paths of its page and data
    files: dict[str, bytes]  # without the build marker
    links: dict[str, PageLinks]  # of every page in files
    shown: frozenset[str]  # the attributes of a lab the index and topic pages read (Renderer.shown_fields)
    beside: frozenset[str]  # the attributes of a lab its neighbours' pages read (Renderer.beside_fields)


def _compute_key(lab: Lab, options: Mapping[str, Any]) -> str:
    """A content hash of everything :func:`generator.pipeline.compute_lab` reads for ``lab``, as
    its kind declares it (:meth:`generator.kinds.LabKind.compute_inputs`)."""
    data, files = get_kind(lab.kind).compute_inputs(lab, options)
    h = hashlib.sha256(lab.kind.encode() + b"\0" + data)
    h.update(_digest([(str(i), Path(f)) for i, f in enumerate(files)]).encode())
    return h.hexdigest()


class SiteBuilder:
    """Builds ``content_dir`` with ``theme_dir`` again and again, reusing unchanged work.

    Not thread-safe: one thread calls :meth:`rebuild`.
    """

    # Computed payloads kept beyond those in use, so undoing an edit does not recompute.
    SPARE_PAYLOADS = 64

    def __init__(self, content_dir: Path, theme_dir: Path | None, base_url: str | None = None,
                 options: Mapping[str, Any] | None = None, report: Callable[[str], None] = lambda _: None):
        self.content_dir = Path(content_dir)
        self.theme_dir = Path(theme_dir) if theme_dir is not None else None
        self.base_url = base_url
        self.options = dict(options or {})
        self.report = report
        self._content_abs = self.content_dir.resolve()
        self._theme_abs = self.theme_dir.resolve() if self.theme_dir is not None else None
        self._source: SiteSource | None = None
        self._source_key: tuple = ()
        self._labs: dict[str, _LabEntry] = {}
        self._linked: dict[str, frozenset[str]] = {}  # slug -> real paths its folder links to
        self._computed: dict[str, tuple[dict, tuple[Diagnostic, ...]]] = {}
        self._theme: Theme | None = None
        self._theme_digest: str | None = None
        self._rendered: _Rendered | None = None
        self._links = LinkChecker()
        self._last_good: dict[str, bytes] = {}

    # -- what changed -----------------------------------------------------------------
    def _classify(self, changed: Iterable[Path | str] | None) -> tuple[bool, bool, set[str] | None]:
        """(site.yaml touched, theme touched, lab slugs touched or None for "any")."""
        if changed is None:
            return True, True, None
        site = theme = False
        slugs: set[str] | None = set()
        for raw in changed:
            path = Path(os.path.abspath(raw))
            if self._theme_abs is not None and path.is_relative_to(self._theme_abs):
                theme = True
                continue
            if not path.is_relative_to(self._content_abs):
                continue
            if slugs is not None:
                slugs.update(self._linking_to(path))
            parts = path.relative_to(self._content_abs).parts
            if parts == ("site.yaml",):
                site = True
            elif len(parts) >= 2 and parts[0] == "labs":
                if slugs is not None:
                    slugs.add(parts[1])
            elif parts in ((), ("labs",)):  # the folders themselves were moved or replaced
                site, slugs = True, None
        return site, theme, slugs

    def paths_read(self, changed: Iterable[Path | str] | None) -> list[Path]:
        """The files and folders a :meth:`rebuild` after ``changed`` may read (to check them first)."""
        site, theme, slugs = self._classify(changed)
        if slugs is None:
            paths = [self.content_dir]
        else:
            paths = [self.content_dir / "site.yaml"] + [self.content_dir / "labs" / slug for slug in sorted(slugs)]
        return paths + ([self.theme_dir] if theme and self.theme_dir is not None else [])

    def _linking_to(self, path: Path) -> list[str]:
        """The labs whose folders reach ``path`` (or a file beside it) through a symbolic link."""
        real = os.path.realpath(path)
        near = (real, os.path.dirname(real))
        return [slug for slug, linked in self._linked.items() if any(p in linked for p in near)]

    def _lab_digest(self, folder: Path, slug: str, content: Path) -> str:
        """The digest of the lab's files (under the file policy of ``content``), noting the ones
        its links lead to outside its folder."""
        files = _files_under(folder, content)
        own = os.path.realpath(folder)
        linked = set()
        for _, path in files:
            real = os.path.realpath(path)
            if not real.startswith(own + os.sep):
                linked.update((real, os.path.dirname(real)))
        self._linked[slug] = frozenset(linked)
        return _digest(files)

    # -- load -------------------------------------------------------------------------
    def _load_source(self, rescan: bool) -> SiteSource:
        """:func:`load_site`, again only when site.yaml or the set of lab folders changed."""
        folders = tuple(lab_folders(self.content_dir))
        if self._source is not None and not rescan and folders == self._source_key[1]:
            return self._source
        key = (_digest([("site.yaml", self.content_dir / "site.yaml")]), folders)
        if self._source is None or key != self._source_key:
            self._source, self._source_key = None, ()
            self._source = load_site(self.content_dir)  # raises when there is no usable site
            self._source_key = key
        return self._source

    def _cached_lab(self, source: SiteSource, slug: str, topics: tuple[str, ...],
                    rescan: bool) -> tuple[str, _LabEntry | None]:
        """The lab folder's digest, and its entry if its files, topics and link answers are unchanged."""
        entry = self._labs.get(slug)
        digest = self._lab_digest(source.root / "labs" / slug, slug, source.root) if entry is None or rescan else entry.digest
        if (entry is not None and entry.digest == digest and entry.topics == topics
                and all(source.links.problem(href) == answer for href, answer in entry.asked.items())):
            return digest, entry
        return digest, None

    def _load(self, site_touched: bool, slugs_touched: set[str] | None,
              map_labs: Callable) -> tuple[SiteSource, list[_LabEntry]]:
        """The site and its labs in its order, as :func:`generator.pipeline.load_lab` reads them,
        loading again only labs whose inputs changed."""
        source = self._load_source(site_touched or slugs_touched is None)
        for gone in set(self._labs) - set(source.order):
            del self._labs[gone]
            self._linked.pop(gone, None)
        topics = tuple(t.slug for t in source.site.topics)
        todo: list[tuple[str, str]] = []
        for slug in source.order:
            digest, entry = self._cached_lab(source, slug, topics, slugs_touched is None or slug in slugs_touched)
            if entry is None:
                todo.append((slug, digest))
        loaded = map_labs(partial(load_lab, source), [slug for slug, _ in todo]) if todo else ()
        for (slug, digest), lab in zip(todo, loaded, strict=True):
            self._labs[slug] = _LabEntry(digest, topics, lab.asked, lab.lab, lab.diagnostics, lab.partial, lab.lost)
        return source, [self._labs[slug] for slug in source.order]

    # -- compute ----------------------------------------------------------------------
    def _compute(self, entries: list[_LabEntry],
                 map_labs: Callable) -> tuple[dict[str, dict], dict[str, str], list[str], list[Diagnostic]]:
        """Every lab's payload, calling :func:`generator.pipeline.compute_lab` only on cache misses.
        Returns payloads and compute keys by slug, the slugs computed, and the problems found."""
        labs = [(e, e.lab) for e in entries if e.lab is not None]  # the others are checked by _every_problem
        fresh = [(e, lab) for e, lab in labs if e.payload is None]
        for entry, lab in fresh:
            entry.compute_key = _compute_key(lab, self.options)
        misses: dict[str, Lab] = {}
        for entry, lab in fresh:
            if entry.compute_key not in self._computed:
                misses.setdefault(entry.compute_key, lab)  # identical labs compute once
        compute = partial(compute_lab, options=self.options)
        results = map_labs(compute, list(misses.values())) if misses else ()
        for key, computed in zip(misses, results, strict=True):
            for note in computed.notes:
                self.report(f"note: {note}")
            self._computed[key] = (computed.payload, tuple(computed.problems))
        for entry, _ in fresh:
            hit = self._computed.pop(entry.compute_key)  # pop + store keeps the dict in recency order
            self._computed[entry.compute_key] = hit
            entry.payload, entry.problems = hit
        if len(self._computed) > len(labs) + self.SPARE_PAYLOADS:
            in_use = {e.compute_key for e, _ in labs}
            spare = [key for key in self._computed if key not in in_use]
            for key in spare[: len(spare) - self.SPARE_PAYLOADS]:  # the least recently used
                del self._computed[key]
        problems = [d for e, _ in labs for d in e.problems]
        payloads = {lab.slug: e.payload for e, lab in labs if e.payload is not None}
        return payloads, {lab.slug: e.compute_key for e, lab in labs}, [lab.slug for lab in misses.values()], problems

    def _computed_lab(self, lab: Lab) -> Computed:
        """:func:`generator.pipeline.compute_lab` through the cache of computed payloads."""
        key = _compute_key(lab, self.options)
        if key not in self._computed:
            computed = compute_lab(lab, self.options)
            for note in computed.notes:
                self.report(f"note: {note}")
            self._computed[key] = (computed.payload, tuple(computed.problems))
        payload, problems = self._computed[key]
        return Computed(payload, problems)

    def _every_problem(self, source: SiteSource, entries: list[_LabEntry], problems: list[Diagnostic],
                       theme_touched: bool) -> list[Diagnostic]:
        """The mistakes of a site that has some (``problems``: the site's and the labs' load errors),
        exactly as ``labs build`` reports them: each lab computed and rendered as far as it goes (a
        lab with load errors too), then the link problems of the pages that could be drawn
        (:func:`generator.pipeline.check_lab`, :func:`generator.pipeline.site_problems`). Nothing
        of it is kept for the next rebuild but the computed payloads."""
        loaded = {slug: LoadedLab(e.lab, e.diagnostics, e.asked, e.partial, e.lost)
                  for slug, e in zip(source.order, entries, strict=True)}
        content, _ = assemble_partial(source, [(e.lab or e.partial, e.diagnostics) for e in entries])
        try:
            theme, _ = self._load_theme(theme_touched, content)
            renderer = Renderer(content, theme, self.base_url)
            checked = {lab.slug: check_lab(lab, i, self._computed_lab, lambda: renderer,
                                           unfinished=loaded[lab.slug].lab is None)
                       for i, lab in enumerate(content.labs)}
        except ContentError as exc:  # a kind that raised instead of returning its problems, or a theme mistake
            return problems + exc.diagnostics
        problems = problems + [d for c in checked.values() for d in c.problems]
        return site_problems(problems, source, loaded, renderer, {slug: c.files for slug, c in checked.items()},
                             {path: page for c in checked.values() for path, page in c.links.items()})

    # -- render -----------------------------------------------------------------------
    def _load_theme(self, rescan: bool, content: Content) -> tuple[Theme, str]:
        kinds = kinds_of(content)
        names = tuple(k.name for k in kinds)
        if (self._theme is not None and self._theme_digest is not None and not rescan
                and tuple(k.name for k in self._theme.kinds) == names):
            return self._theme, self._theme_digest
        if self.theme_dir is not None and not self.theme_dir.is_dir():
            raise BuildError("theme folder not found", display_path(self.theme_dir))
        theme = Theme(self.theme_dir, kinds)  # lists the files of every layer: default, kinds, custom
        digest = _digest(sorted(theme.files.items()))
        if self._theme is None or digest != self._theme_digest:
            self._theme, self._theme_digest = None, None
            # This environment lives only as long as the theme's digest, so Jinja need not stat
            # every template file on every use (a listing page includes its card once per lab).
            theme.env.auto_reload = False
            self._theme, self._theme_digest = theme, digest
        return self._theme, digest

    def _render(self, content: Content, payloads: dict[str, dict], keys: dict[str, str], theme: Theme,
                theme_digest: str) -> tuple[_Rendered, list[str], int]:
        """All files and their pages' links, rendering again only pages whose inputs changed:
        (what was rendered, labs changed, pages rendered)."""
        labs = content.labs
        key = (content.site, tuple(lab.slug for lab in labs), theme_digest, self.base_url, source_date())
        renderer = Renderer(content, theme, self.base_url)
        previous = self._rendered
        self._rendered = None  # until this render completes
        inputs = {lab.slug: (lab, keys[lab.slug]) for lab in labs}
        if previous is None or previous.key != key:
            made = [self._render_lab(renderer, i, payloads) for i in range(len(labs))]
            files = renderer.render_site({lab.slug: m.files for lab, m in zip(labs, made, strict=True)})
            links = {path: page for m in made for path, page in m.links.items()}
            links.update({path: page_links(data.decode("utf-8")) for path, data in files.items()
                          if path.endswith(".html") and path not in links})
            changed = [lab.slug for lab in labs if previous is None or previous.labs.get(lab.slug) != inputs[lab.slug]]
            rendered = _Rendered(key, inputs, {lab.slug: tuple(m.files) for lab, m in zip(labs, made, strict=True)},
                                 files, links, frozenset(renderer.shown_fields), frozenset(renderer.beside_fields))
            self._rendered = rendered
            return rendered, changed, sum(p.endswith(".html") for p in files)
        changed = [lab.slug for lab in labs if previous.labs[lab.slug] != inputs[lab.slug]]
        files, links = dict(previous.files), dict(previous.links)
        lab_files_now = dict(previous.lab_files)
        index = {lab.slug: i for i, lab in enumerate(labs)}
        pages: set[int] = set()
        topics: set[str] = set()
        def differs(slug: str, fields: frozenset[str]) -> bool:  # in an attribute some page reads of the lab
            return any(getattr(previous.labs[slug][0], f, None) != getattr(inputs[slug][0], f, None) for f in fields)
        for slug in changed:
            i = index[slug]
            pages.update(j for j in ((i - 1, i, i + 1) if differs(slug, previous.beside) else (i,)) if 0 <= j < len(labs))
            topics.update({labs[i].topic, previous.labs[slug][0].topic})
        for i in sorted(pages):
            lab = labs[i]
            for path in lab_files_now[lab.slug]:
                del files[path]
                links.pop(path, None)
            made = self._render_lab(renderer, i, payloads)
            files.update(made.files)
            links.update(made.links)
            lab_files_now[lab.slug] = tuple(made.files)
        # The index and topic pages read a few things of each lab (its card): unless one of those
        # changed, they would come out the same, and are kept as they are.
        shown = any(differs(slug, previous.shown) for slug in changed)
        if not shown:
            topics = set()
        again = {f"topics/{topic.slug}/index.html": renderer.render_topic(topic)
                 for topic in content.site.topics if topic.slug in topics}
        if shown:
            again["index.html"] = renderer.render_index()
        for path, data in again.items():
            if files.get(path) != data:
                files[path], links[path] = data, page_links(data.decode("utf-8"))
        rendered = _Rendered(key, inputs, lab_files_now, files, links, previous.shown | renderer.shown_fields,
                             previous.beside | renderer.beside_fields)
        self._rendered = rendered
        return rendered, changed, len(pages) + len(topics) + shown

    def _render_lab(self, renderer: Renderer, index: int, payloads: dict[str, dict]) -> RenderedLab:
        made = render_lab(renderer, index, payloads[renderer.content.labs[index].slug])
        for warning in made.warnings:
            self.report(warning)
        return made

    # -- the whole run ----------------------------------------------------------------
    def rebuild(self, changed: Iterable[Path | str] | None = None, map_labs: Callable = map) -> Rebuild:
        """Build again after ``changed`` files were written (``None``: anything may have changed).

        Returns every output file, equal to what :func:`generator.build.build_files` gives for
        the same input. Raises ContentError/BuildError as a full build would. ``map_labs`` maps
        the labs to load or compute (a process pool's ``map`` for a first build, as build_files).
        """
        started = time.perf_counter()
        site_touched, theme_touched, slugs_touched = self._classify(changed)
        source, entries = self._load(site_touched, slugs_touched, map_labs)
        content, problems = assemble_partial(source, [(e.lab or e.partial, e.diagnostics) for e in entries])
        payloads, keys, computed, compute_problems = self._compute(entries, map_labs)
        if problems or compute_problems:  # one report, labs build's
            raise ContentError(self._every_problem(source, entries, problems, theme_touched))
        theme, theme_digest = self._load_theme(theme_touched, content)
        rendered, labs_changed, pages = self._render(content, payloads, keys, theme, theme_digest)
        problems = self._links.check(rendered.links, rendered.files, content)
        if problems:
            raise ContentError(problems)
        files = dict(rendered.files)
        files.update(kinds_site_files(content, self.options, None, taken=rendered.files))
        finish_site(files, content, self.content_dir)
        last = self._last_good
        delta = {p for p, d in files.items() if p not in last or (last[p] is not d and last[p] != d)}
        delta |= set(last) - set(files)
        self._last_good = files
        return Rebuild(files, content, frozenset(delta), tuple(labs_changed), tuple(computed), pages,
                       time.perf_counter() - started)

    @property
    def shown_fields(self) -> frozenset[str]:
        """The attributes of a lab that the last render's index and topic pages read."""
        return self._rendered.shown if self._rendered is not None else frozenset()
