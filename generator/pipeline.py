"""The stages of a build, each written once. ``labs build`` (:mod:`generator.build`) runs them over
every lab; ``labs serve``'s incremental builder (:mod:`generator.serve.incremental`) runs the same ones
over the labs that changed and keeps what the others gave before.

load     :func:`load_lab`: a lab's folder → its :class:`~generator.model.Lab` (content.py reads it),
         its mistakes, and the ``lab:``/``topic:`` links it asked about;
compute  :func:`compute_lab`: its kind computes its numbers and checks its claims against them;
render   :func:`render_lab`: its page and the files beside it, and the links of its page;
         ``Renderer.render_site``: the rest of the site around the labs' files;
links    :mod:`generator.links`: collected where a page is rendered, checked once all are known;
finish   :func:`finish_site`: the marker and ``content/static/``, then the site is written
         (:mod:`generator.sitefolder`).

A site with mistakes is taken as far as it goes, by both drivers alike, so that one run reports
every mistake: :func:`check_lab` computes and renders a lab (one that loaded only in part too),
and :func:`site_problems` gathers the problems with the link problems of the pages that could be
drawn, leaving out what would only repeat a mistake already reported.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from generator.content import RecordingLinkTargets, SiteSource, load_lab as _read_lab, static_files
from generator.errors import BuildError, ContentError, Diagnostic
from generator.hostheaders import headers_files
from generator.kinds import Computed, LabKind, get_kind
from generator.links import PageLinks, collect, page_links, partial_link_problems
from generator.model import Content, Lab
from generator.render import Renderer
from generator.search.index import search_files
from generator.sitefolder import MARKER, MARKER_TEXT
from generator.speed.packed import Unpacking


@dataclass(frozen=True)
class LoadedLab:
    """One lab folder, read (picklable: it may come from a worker process)."""

    lab: Lab | None  # None when it has mistakes
    diagnostics: tuple[Diagnostic, ...]
    asked: dict[str, str | None]  # every lab:/topic: link it wrote, with the answer to "is it good?"
    partial: Lab | None = None  # a lab with mistakes as far as it loaded: computed and checked, never written
    lost: frozenset[str] = frozenset()  # the ids of its parts left out for their mistakes


def load_lab(source: SiteSource, slug: str) -> LoadedLab:
    """Read and validate the lab ``slug`` of ``source``, noting the links it asked about: a lab
    that did not load still has its links checked, and ``labs serve`` reads a lab again when an
    answer changes (a lab it links to appeared or went)."""
    recording = RecordingLinkTargets(source.links.labs, source.links.topics)
    lab, diagnostics, lost = _read_lab(replace(source, links=recording), slug, partial=True)
    if diagnostics:
        return LoadedLab(None, diagnostics, recording.asked, lab, lost)
    return LoadedLab(lab, diagnostics, recording.asked)


def compute_lab(lab: Lab, options: Mapping[str, Any] | None = None) -> Computed:
    """Compute one lab with its kind: its payload, the problems found by checking its claims
    and its questions of the kind's own types against the numbers, and notes for the author."""
    return get_kind(lab.kind).compute(lab, dict(options or {}))


def kinds_of(content: Content) -> list[LabKind]:
    """The kinds of the site's labs, each once, by name."""
    return [get_kind(name) for name in sorted({lab.kind for lab in content.labs})]


@dataclass(frozen=True)
class RenderedLab:
    """One lab's files by output path (its page and the files its kind puts beside it), the links
    of its page, and the renderer's warnings about it (positioned: ``path:line:col: warning: …``)."""

    files: dict[str, bytes]
    links: dict[str, PageLinks]
    warnings: tuple[str, ...]


def render_lab(renderer: Renderer, index: int, payload: Any, lab: Lab | None = None) -> RenderedLab:
    """Render lab ``index`` of the renderer's site from its computed ``payload``. ``lab``: that lab
    as its kind read it, when the site's copy keeps its spec packed (:mod:`generator.speed.packed`)."""
    labs = renderer.content.labs
    files = renderer.lab_files(lab or labs[index], payload, labs[index - 1] if index > 0 else None,
                               labs[index + 1] if index + 1 < len(labs) else None)
    links = {path: page_links(data.decode("utf-8")) for path, data in files.items() if path.endswith(".html")}
    warnings = tuple(renderer.warnings)
    renderer.warnings.clear()
    return RenderedLab(files, links, warnings)


@dataclass(frozen=True)
class CheckedLab:
    """One lab computed and rendered as far as it goes (see :func:`check_lab`)."""

    files: dict[str, bytes]  # its page and the files beside it; empty when its page could not be drawn
    links: dict[str, PageLinks]
    notes: tuple[str, ...]  # the kind's notes, then the renderer's positioned warnings
    problems: tuple[Diagnostic, ...]  # the claims and answer keys its numbers contradict


def check_lab(lab: Lab, index: int, compute: Callable[[Lab], Computed], renderer: Callable[[], Renderer],
              unfinished: bool = False) -> CheckedLab:
    """Compute lab ``index`` of the site (``lab``, as its kind read it) with ``compute`` and render it with the renderer
    that ``renderer()`` gives (made when first needed). A lab with mistakes goes as far as it can,
    so that its claims and links are checked in the same run: an ``unfinished`` lab (it loaded only
    in part) that its kind cannot compute gives nothing (its load errors are the news), and a page
    that cannot be drawn from such a lab, or from numbers that contradict the lab's claims, gives
    no files (those mistakes are the news). Any other exception is raised."""
    try:
        computed = compute(lab)
    except Exception:
        if not unfinished:
            raise
        return CheckedLab({}, {}, (), ())
    made = renderer()
    try:
        rendered = render_lab(made, index, computed.payload, lab)
        files, links, warnings = rendered.files, rendered.links, rendered.warnings
    except Exception:
        if not computed.problems and not unfinished:
            raise
        files, links, warnings = {}, {}, ()
        made.warnings.clear()
    return CheckedLab(files, links, tuple(computed.notes) + warnings, tuple(computed.problems))


def site_problems(problems: list[Diagnostic], source: SiteSource, loaded: Mapping[str, LoadedLab],
                  renderer: Renderer, lab_files: Mapping[str, Mapping[str, bytes]],
                  lab_links: Mapping[str, PageLinks], written: Collection[str] = ()) -> list[Diagnostic]:
    """Every mistake of a site that has some: ``problems`` (the site's, each lab's load errors in
    the site's order, then what each lab's numbers contradict, by :func:`check_lab`) and the link
    problems of every page that could be drawn — ``renderer``'s site around ``lab_files`` (each
    lab's files by slug, as :func:`check_lab` gave them, or as a build wrote them: ``written``),
    whose links are ``lab_links`` and those of the pages rendered here.

    ``loaded``: the labs read in this run, by slug. A lab that did not load has no page: links to
    it are taken as good, and the links it wrote are checked. A link that is only the echo of a
    mistake already reported is left out: one to an unknown lab (reported where it was written),
    or to a part of a lab left out for its mistakes. Both drivers call this, so ``labs serve``
    shows every mistake ``labs build`` prints, in the same order."""
    try:
        files = renderer.render_site(lab_files)
    except ContentError as exc:  # a theme mistake: the links cannot be checked without the pages
        return problems + exc.diagnostics
    except Exception:  # a page that cannot be drawn from a lab with mistakes: those are what to report
        return problems
    links = collect(files, lab_links)
    known = set(files) | set(written)
    unfinished = {slug for slug, lab in loaded.items() if lab.lab is None and lab.partial is not None}
    unrendered = {slug for slug in unfinished if not lab_files.get(slug)}  # pages that could not be drawn
    unbuilt = {slug: [source.links.resolve(href) or href for href, answer in loaded[slug].asked.items()
                      if answer is None]
               for slug in source.order if slug in loaded and loaded[slug].lab is None
               and (slug not in unfinished or slug in unrendered)}
    # A lab with mistakes is rendered as far as it loaded: a link it wrote to an unknown lab
    # was reported where it was written; its page would only repeat it.
    reported = {": " + (source.links.resolve(href) or href) for lab in loaded.values()
                for href, answer in lab.asked.items() if answer is not None}
    reported |= {f"link to a missing anchor: #{i}" for slug in unfinished for i in loaded[slug].lost}
    return problems + [d for d in partial_link_problems(links, known, renderer.content, unbuilt)
                       if not any(d.message.endswith(r) for r in reported)]


SITE_FILES_FOLDER = "assets/"  # where kinds' site files go (LabKind.site_files)


def kinds_site_files(content: Content, options: Mapping[str, Any] | None, store: Path | None,
                     taken: Collection[str] = ()) -> dict[str, bytes]:
    """Every kind's :meth:`~generator.kinds.LabKind.site_files` for the site's labs, by path
    (:func:`kinds_files`). Raises BuildError as it does, and for a path of ``taken`` (paths the
    build makes itself)."""
    return kinds_files(content, options, store).free_of(taken)


@dataclass(frozen=True)
class KindsFiles:
    """The kinds' site files by path, and the kind that gave each."""

    files: dict[str, bytes]
    given_by: dict[str, str]

    def free_of(self, taken: Collection[str]) -> dict[str, bytes]:
        """The files. Raises BuildError for one at a path of ``taken`` (paths the build makes itself)."""
        for path in self.files:
            if path in taken:
                raise BuildError(f"lab kind {self.given_by[path]!r} gave the site file {path!r}, a path the build "
                                 "makes itself")
        return self.files


def kinds_files(content: Content, options: Mapping[str, Any] | None, store: Path | None) -> KindsFiles:
    """Every kind's site files for the site's labs: each kind asked once, with its own labs (each
    unpacked as the kind reaches it) and its own folder of ``store`` (the build cache's; None:
    none). Raises BuildError for a path outside ``assets/``, or one two kinds give with different
    bytes."""
    files: dict[str, bytes] = {}
    given_by: dict[str, str] = {}
    for kind in kinds_of(content):
        labs = Unpacking([lab for lab in content.labs if lab.kind == kind.name])
        folder = store / kind.name if store is not None else None
        for path, data in kind.site_files(labs, dict(options or {}), folder).items():
            parts = path.split("/")
            if not path.startswith(SITE_FILES_FOLDER) or any(p in ("", ".", "..") for p in parts):
                raise BuildError(f"lab kind {kind.name!r} gave the site file {path!r}: site files go under "
                                 f"{SITE_FILES_FOLDER}, as plain relative paths")
            if path in files and files[path] != data:
                raise BuildError(f"lab kinds {given_by[path]!r} and {kind.name!r} both give the site file {path!r}, "
                                 "with different bytes")
            files[path], given_by[path] = data, given_by.get(path, kind.name)
    return KindsFiles(files, given_by)


def finish_site(files: dict[str, bytes], content: Content, content_dir: Path, written: Collection[str] = ()) -> None:
    """Add what every site has besides the pages to ``files``: its search (:mod:`generator.search`:
    the index of every page, made afresh from ``content`` by every build), the headers files for
    static hosts (:mod:`generator.hostheaders`), the marker that makes the folder ours and
    ``content/static/``, copied as it is. A file there must not take a path the build makes: one
    of ``files`` or of ``written`` (the paths already written into the site's folder). Raises
    ContentError for such a file or a link out of ``content/``."""
    files.update(search_files(content))
    pages = [path for path in (*files, *written) if path.endswith(".html")]
    files.update(headers_files(pages, content.site.frame_ancestors))
    files[MARKER] = MARKER_TEXT
    files.update(static_files(content_dir, files if not written else set(files) | set(written)))
