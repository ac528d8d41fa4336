"""``labs build`` and ``labs check``: the stages of :mod:`generator.pipeline` over every lab.

load → validate → compute → render → check links → write. Everything is gathered first; the
site is then written into a temporary folder beside the output and swapped in only when every
step succeeded (:mod:`generator.sitefolder`). A failed build leaves the previous site
byte-for-byte as it was, and the build never writes into ``content/`` or ``theme/``.

A large site's labs are loaded, then computed and rendered, in worker processes
(:mod:`generator.speed.workers`); a lab unchanged since a build that stored it comes from the build
cache (:mod:`generator.speed.buildcache`) instead.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from generator.speed import buildcache
from generator.speed.buildcache import BuildCache, LabEntry
from generator.content import SiteSource, assemble_partial, load_site
from generator.errors import BuildError, ContentError, Diagnostic, SiteError, display_path
from generator.kinds import all_kinds
from generator.links import PageLinks, check_links, collect
from generator.model import Content
from generator.models import store
from generator.pipeline import (KindsFiles, LoadedLab, check_lab, compute_lab, finish_site, kinds_files, kinds_of,
                                load_lab, site_problems)
from generator.render import Renderer
from generator.theme import Theme
from generator.sitefolder import SiteFiles, clean_litter, guard_output, pause_for_tests, site_folder, write_files
from generator.speed.packed import packed, packed_as, unpacked
from generator.speed.workers import lab_done, lab_pool


@dataclass(frozen=True)
class BuildResult:
    files: Mapping[str, bytes]
    content: Content  # each lab's kind spec packed (generator.speed.packed.unpacked: the lab as its kind read it)
    pages: int
    seconds: float
    output: Path | None


@dataclass(frozen=True)
class LabBuilt:
    """One lab computed and rendered (in a worker): what the parent needs of it, and no payload."""

    slug: str
    files: dict[str, bytes]  # its page and the files beside it, by output path (empty when written)
    written: tuple[str, ...]  # the output paths it wrote into the site folder itself
    links: dict[str, PageLinks]  # page path -> (ids in order, hrefs)
    notes: tuple[str, ...]
    problems: tuple[Diagnostic, ...]


# What a worker needs to compute and render any lab: set once per worker by _set_lab_state.
_LAB_STATE: dict[str, Any] = {}


def _set_lab_state(content: Content, theme_dir: Path | None, base_url: str | None,
                   options: Mapping[str, Any] | None, write_into: Path | None, cache: BuildCache | None,
                   keys: Mapping[str, str], partial: frozenset[str] = frozenset()) -> None:
    _LAB_STATE.clear()
    _LAB_STATE.update(content=content, theme_dir=theme_dir, base_url=base_url, options=options,
                      write_into=write_into, cache=cache, keys=keys, partial=partial, renderer=None)


def _note(text: str) -> str:
    """A kind's note for the author, or a renderer's positioned warning as it is."""
    return text if ": warning: " in text else f"note: {text}"


def compute_and_render(index: int) -> LabBuilt:
    """:func:`_compute_and_render`, then the lab's garbage collected in a pool worker."""
    try:
        return _compute_and_render(index)
    finally:
        lab_done()


def _compute_and_render(index: int) -> LabBuilt:
    """Compute lab ``index`` of the site and render its files where it runs (a worker, for a large
    site), so that its payload never travels back to the build; when the build writes a site,
    write them into its folder too, and keep the lab in the build cache. A lab whose numbers
    contradict its claims is rendered all the same (its links are checked in the same run), and
    neither written nor kept."""
    state = _LAB_STATE
    content: Content = state["content"]
    lab = unpacked(content.labs[index])  # the record the build holds is left untouched (generator.speed.packed)

    def renderer() -> Renderer:
        if state["renderer"] is None:
            state["renderer"] = Renderer(content, Theme(state["theme_dir"], kinds_of(content)), state["base_url"])
        return state["renderer"]

    checked = check_lab(lab, index, partial(compute_lab, options=state["options"]), renderer,
                        unfinished=lab.slug in state["partial"])
    files, links, notes, problems = checked.files, checked.links, checked.notes, checked.problems
    if problems or lab.slug in state["partial"]:  # never kept or written: the build reports its mistakes
        return LabBuilt(lab.slug, files, (), links, notes, problems)
    cache: BuildCache | None = state["cache"]
    if cache is not None:
        cache.put(state["keys"][lab.slug], LabEntry(packed_as(lab, content.labs[index]), notes, files, links))
    folder: Path | None = state["write_into"]
    if folder is None:
        return LabBuilt(lab.slug, files, (), links, notes, problems)
    write_files(folder, files)
    return LabBuilt(lab.slug, {}, tuple(files), links, notes, problems)


def build_files(content_dir: Path, theme_dir: Path | None = None, base_url: str | None = None,
                report: Callable[[str], None] = lambda _: None,
                options: Mapping[str, Any] | None = None,
                cache: BuildCache | None = None) -> tuple[dict[str, bytes], Content]:
    """Everything a build writes, in memory. Raises ContentError/BuildError on any problem.

    With a :class:`~generator.speed.buildcache.BuildCache`, labs whose inputs are unchanged since a
    build that stored them are taken from it (neither loaded, computed nor rendered), and each
    lab built now is stored in it once it computed and rendered without a problem of its own
    (its links are checked again by every build); the files are the same."""
    files, content, _ = _build_gc(content_dir, theme_dir, base_url, report, options, cache, None)
    return files, content


def _build_gc(content_dir: Path, theme_dir: Path | None, base_url: str | None, report: Callable[[str], None],
              options: Mapping[str, Any] | None, cache: BuildCache | None,
              write_into: Path | None) -> tuple[dict[str, bytes], Content, list[str]]:
    """:func:`_build_files` with the cyclic collector paused. A build allocates millions of small
    objects and frees them by reference counting; the collector would only re-scan the growing
    site again and again. Pool workers collect their own
    garbage (:func:`generator.speed.workers.lab_done`)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_files(content_dir, theme_dir, base_url, report, options, cache, write_into)
    finally:
        if collecting:
            gc.enable()


def _build_files(content_dir: Path, theme_dir: Path | None, base_url: str | None,
                 report: Callable[[str], None], options: Mapping[str, Any] | None,
                 cache: BuildCache | None, write_into: Path | None) -> tuple[dict[str, bytes], Content, list[str]]:
    """The build. With ``write_into``, the labs computed now are written there by whoever renders
    them, and their paths come back apart: (other files, content, paths written)."""
    started = time.perf_counter()
    source = load_site(content_dir)
    stored: dict[str, LabEntry] = {}
    written_stored: list[str] = []
    with lab_pool(content_dir, len(source.order)) as map_labs:
        # The labs' files are hashed by the workers that will load them (the hashing reads every
        # byte of every lab folder).
        keys = _lab_keys(source, theme_dir, base_url, options, map_labs) if cache is not None else {}
        for slug, key in keys.items():
            entry = cache.get(key)  # keys is empty without a cache
            if entry is None:
                continue
            if write_into is not None:  # into the new site as it is read: the site's files are never all held at once
                write_files(write_into, entry.files)
                written_stored += entry.files
                entry = replace(entry, files={})
            stored[slug] = entry
        todo = [slug for slug in source.order if slug not in stored]
        fresh = dict(zip(todo, map_labs(partial(_load_packed, source), todo), strict=True))
        content, problems = assemble_partial(
            source, [(stored[slug].lab, ()) if slug in stored
                     else (fresh[slug].lab or fresh[slug].partial, fresh[slug].diagnostics) for slug in source.order])
        # A lab with mistakes that loaded far enough is computed, rendered and link-checked as well
        # (one run, every error), but never kept in the build cache.
        unfinished = {slug for slug, loaded in fresh.items() if loaded.lab is None and loaded.partial is not None}
        if not problems:
            report(f"loaded {len(content.labs)} lab{'s' * (len(content.labs) != 1)} from "
                   f"{display_path(content_dir)}/ ({time.perf_counter() - started:.2f} s)"
                   + (f"; {len(stored)} from the build cache" if stored else ""))
        t = time.perf_counter()
        pause_for_tests("compute")
        for entry in stored.values():
            for note in entry.notes:
                report(_note(note))
        to_compute = [lab for lab in content.labs if lab.slug not in stored]
    # The labs that loaded are computed, rendered and link-checked even when others have
    # mistakes (nothing is written then): one run, every error. Each lab is computed and
    # rendered in one go, in a worker forked after loading (it has the whole site already, each
    # lab's kind spec packed: generator.speed.packed).
    index = {lab.slug: i for i, lab in enumerate(content.labs)}
    store = cache.folder / "kinds" if cache is not None else None
    # The kinds' site files are made once, before the labs are computed: the workers forked below
    # then share what the kinds read and made for them (the in-page model's bundle and its page
    # files, some 60 MB, whose names every page of its labs carries), where each would otherwise
    # make its own copy. A mistake in them is reported after the labs' own.
    site_files: KindsFiles | SiteError
    try:
        site_files = kinds_files(content, options, store)
    except SiteError as exc:
        site_files = exc
    try:
        with lab_pool(content_dir, len(to_compute), _set_lab_state,
                      (content, theme_dir, base_url, options, write_into, cache, keys,
                       frozenset(unfinished))) as map_labs:
            built = list(map_labs(compute_and_render, [index[lab.slug] for lab in to_compute]))
    except ContentError as exc:  # a kind that raised instead of returning its problems, or a theme mistake
        raise ContentError(problems + exc.diagnostics) from None
    finally:
        _LAB_STATE.clear()
    for lab_built in built:
        problems += lab_built.problems
        for note in lab_built.notes:
            report(_note(note))
    kinds = sorted({lab.kind for lab in to_compute})
    by_kind = ", ".join(f"{sum(lab.kind == k for lab in to_compute)} {k}" for k in kinds)
    if not problems:
        report(f"computed {len(to_compute)} lab{'s' * (len(to_compute) != 1)}{': ' * bool(by_kind)}{by_kind} "
               f"({time.perf_counter() - t:.2f} s)")
    t = time.perf_counter()
    renderer = Renderer(content, Theme(theme_dir, kinds_of(content)), base_url)
    lab_files = {slug: entry.files for slug, entry in stored.items()} | {b.slug: b.files for b in built}
    lab_links = ({path: page for entry in stored.values() for path, page in entry.links.items()}
                 | {path: page for b in built for path, page in b.links.items()})
    written = written_stored + [path for b in built for path in b.written]
    if problems:  # the same report as labs serve's (generator.pipeline.site_problems)
        raise ContentError(site_problems(problems, source, fresh, renderer, lab_files, lab_links, written))
    files = renderer.render_site(lab_files)
    if isinstance(site_files, SiteError):
        raise site_files
    files.update(site_files.free_of(set(files) | set(written)))
    links = collect(files, lab_links)
    known = set(files) | set(written)
    link_problems = check_links(links, known, content)
    if link_problems:
        raise ContentError(link_problems)
    finish_site(files, content, content_dir, written)
    report(f"rendered {sum(p.endswith('.html') for p in known)} pages ({time.perf_counter() - t:.2f} s)")
    return files, content, written


def _load_packed(source: SiteSource, slug: str) -> LoadedLab:
    """:func:`~generator.pipeline.load_lab`, the lab packed where it was read: its spec crosses to
    the build as bytes, which the build never unpickles."""
    loaded = load_lab(source, slug)
    return replace(loaded, lab=packed(loaded.lab), partial=packed(loaded.partial))


def _lab_keys(source: SiteSource, theme_dir: Path | None, base_url: str | None,
              options: Mapping[str, Any] | None, map_labs: Callable = map) -> dict[str, str]:
    """Each lab's build cache key (see :mod:`generator.speed.buildcache`); its folder is hashed by
    ``map_labs`` (a :func:`lab_pool`'s)."""
    theme = Theme(theme_dir, all_kinds())
    site = buildcache.key_of(
        buildcache.generator_fingerprint(), buildcache.kinds_fingerprint(),
        buildcache.digest_files([("site.yaml", source.root / "site.yaml")]), source.order,
        buildcache.digest_files(sorted(theme.files.items())), base_url,
        sorted((k, str(v)) for k, v in (options or {}).items()), os.getcwd(), store.fetched_state())
    digests = list(map_labs(partial(_lab_digest, source.root / "labs"), source.order))
    return {slug: buildcache.key_of(site, digests[i - 1] if i > 0 else "", digests[i],
                                    digests[i + 1] if i + 1 < len(digests) else "")
            for i, slug in enumerate(source.order)}


def _lab_digest(labs: Path, slug: str) -> str:
    return buildcache.digest_files(buildcache.files_under(labs / slug, labs.parent))


def build(content_dir: Path, theme_dir: Path | None, output: Path, base_url: str | None = None,
          report: Callable[[str], None] = lambda _: None, options: Mapping[str, Any] | None = None,
          cache_dir: Path | None = None) -> BuildResult:
    """Build the site from ``content_dir`` into ``output``, atomically, with the default theme
    under ``theme_dir`` (a custom folder that overrides it file by file; None: none), using
    the build cache in ``cache_dir`` (None: none; ``labs build`` uses :func:`default_cache_dir`)."""
    started = time.perf_counter()
    content_dir, output = Path(content_dir), Path(output)
    theme_dir = Path(theme_dir) if theme_dir is not None else None
    if theme_dir is not None and not theme_dir.is_dir():
        raise BuildError("theme folder not found", display_path(theme_dir))
    clean_litter(output)
    guard_output(output, content_dir, theme_dir)
    cache = BuildCache(cache_dir) if cache_dir is not None else None
    with site_folder(output) as folder:
        # The labs' files are written into the folder where they are rendered (the workers);
        # what comes back is the rest of the site.
        files, content, written = _build_gc(content_dir, theme_dir, base_url, report, options, cache, folder)
        write_files(folder, files)
    paths = set(files) | set(written)
    target = output.resolve() if output.is_symlink() else output
    pages = sum(p.endswith(".html") for p in paths)
    return BuildResult(SiteFiles(target, paths), content, pages, time.perf_counter() - started, output)


def default_cache_dir(content_dir: Path) -> Path:
    """Where ``labs build`` keeps its build cache: ``.labs-cache/`` beside the content folder."""
    return Path(content_dir).parent / buildcache.CACHE_DIR_NAME


def check(content_dir: Path, theme_dir: Path | None, report: Callable[[str], None] = lambda _: None,
          options: Mapping[str, Any] | None = None) -> BuildResult:
    """Everything a build does except writing: validation, computation, claims, links."""
    started = time.perf_counter()
    files, content = build_files(Path(content_dir), Path(theme_dir) if theme_dir is not None else None, None,
                                 report, options)
    return BuildResult(files, content, sum(p.endswith(".html") for p in files), time.perf_counter() - started, None)
