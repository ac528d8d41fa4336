"""The build pipeline: load → validate → compute → render → check links → write.

Everything is gathered in memory first; the site is then written into a temporary folder
beside the output and swapped in only when every step succeeded. A failed build leaves the
previous site byte-for-byte as it was, and the build never writes into ``content/`` or
``theme/``.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from generator import buildcache
from generator.buildcache import BuildCache, LabEntry
from generator.content import (RecordingLinkTargets, SiteSource, assemble_partial, lab_folders, load_lab, load_site,
                               static_files)
from generator.errors import BuildError, ContentError, Diagnostic, display_path
from generator.kinds import Computed, all_kinds, get_kind
from generator.markdown_render import slugify
from generator.model import Content, Lab
from generator.render import Renderer, Theme

log = logging.getLogger(__name__)

MARKER = ".labs-build"  # marks a folder as ours, so a rebuild may replace it
MARKER_TEXT = b"Built by Attention Labs (labs build). This folder is replaced by every build.\n"


@dataclass(frozen=True)
class BuildResult:
    files: dict[str, bytes]
    content: Content
    pages: int
    seconds: float
    output: Path | None


def compute_lab(lab: Lab, options: Mapping[str, Any] | None = None) -> Computed:
    """Compute one lab with its kind: its payload, the problems found by checking its claims
    and its questions of the kind's own types against the numbers, and notes for the author."""
    return get_kind(lab.kind).compute(lab, dict(options or {}))


_ID_RE = re.compile(r'id="([^"]+)"')  # an id attribute when whitespace comes before it (see _ids)
_HREF_RE = re.compile(r'<a\s[^>]*?href="([^"]*)"')


def _ids(html: str) -> list[str]:
    """The values of ``id="…"`` attributes, in order: ``\\sid="…"`` as one pattern made the regex
    engine try every character of a page; ``id="`` is searched for as a literal, 3x faster."""
    return [m.group(1) for m in _ID_RE.finditer(html) if html[m.start() - 1:m.start()].isspace()]


def anchors(html: str) -> tuple[set[str], list[str]]:
    """Ids and link targets of a page. Our pages come from Jinja and Markdown, which always
    double-quote attributes, so a regular expression is enough (and 20x faster than a parser)."""
    return set(_ids(html)), [unescape(h) for h in _HREF_RE.findall(html)]


def duplicate_id_problems(path: str, html: str, content: Content) -> list[Diagnostic]:
    """An id used twice on a page (a section id or a Markdown heading that collides with the
    theme's, e.g. "quiz") makes links to it land in the wrong place."""
    ids = _ids(html)
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    return [_id_problem(content, path, i) for i in repeated]


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


def page_link_problems(path: str, hrefs: list[str] | tuple[str, ...], files: dict[str, bytes],
                       ids_of: Callable[[str], set[str] | frozenset[str] | None],
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


def page_links(html: str) -> tuple[list[str], list[str]]:
    """What the link check needs of a page: its ids in order (repeats kept) and its link targets."""
    return _ids(html), [unescape(h) for h in _HREF_RE.findall(html)]


def link_problems(links: Mapping[str, tuple[list[str], list[str]]], files: Mapping[str, bytes] | set[str],
                  content: Content) -> list[Diagnostic]:
    """Every relative link of every page must reach a built file and every ``#anchor`` an id on it,
    and no id may be used twice on a page — from what each page collected (:func:`page_links`)."""
    id_sets = {path: set(ids) for path, (ids, _) in links.items()}
    problems = []
    for path, (ids, _) in sorted(links.items()):
        if path != "404.html" and len(id_sets[path]) != len(ids):
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            problems += [_id_problem(content, path, i) for i in repeated]
    for path, (_, hrefs) in sorted(links.items()):
        if path != "404.html":  # its links start at the site root, wherever it is served
            problems += page_link_problems(path, hrefs, files, id_sets.get, content)[1]
    return problems


def check_page_links(links: Mapping[str, tuple[list[str], list[str]]], files: Mapping[str, bytes] | set[str],
                     content: Content) -> None:
    """Raise one ContentError for every problem :func:`link_problems` finds."""
    problems = link_problems(links, files, content)
    if problems:
        raise ContentError(problems)


def _normalise(path: str) -> str:
    out: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if out:
                out.pop()
        elif part not in (".",):
            out.append(part)
    return "/".join(out)


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


# Below this many labs a process pool costs more than it saves.
PARALLEL_MIN_LABS = 16


def _pause_for_tests(point: str) -> None:
    """Hold the build at ``point`` when ``LABS_TEST_PAUSE_AT`` names it, after saying so on
    stderr: the crash-safety tests SIGKILL a real build there."""
    if os.environ.get("LABS_TEST_PAUSE_AT") == point:
        os.write(2, f"paused at {point}\n".encode())
        time.sleep(60)


def _die_with_parent() -> None:
    """Pool worker initializer: end this worker when the build that started it is gone.

    A build killed with SIGKILL cannot tear its pool down, and orphaned workers would hold
    its stdout and stderr open forever (a CI job or editor reading them would hang). On
    Linux the kernel is asked to send SIGKILL when the parent dies (prctl PR_SET_PDEATHSIG:
    immediate, and it needs no cooperation from the dying parent). Everywhere, and as a
    second line on Linux (the signal follows the thread that forked, not the process), a
    daemon thread checks twice a second that the parent is still ours and exits if not."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="labs-parent-watch", daemon=True).start()


def _start_worker(initializer: Callable | None, initargs: tuple) -> None:
    _die_with_parent()
    # The build pauses the cyclic collector (see build_files), and a forked worker inherits the
    # pause; but with no collector at all the reference cycles a lab leaves behind would stay
    # (~0.6 MB a lab: 650 MiB per worker at 1,000 labs). A worker collects once per lab instead
    # (compute_and_render), the youngest generation only: what that lab made. Everything it
    # inherited is frozen, so no collection scans the site it was forked with.
    gc.freeze()
    global _COLLECT_PER_LAB
    _COLLECT_PER_LAB = True
    if initializer is not None:
        initializer(*initargs)


_COLLECT_PER_LAB = False  # set in pool workers


@contextmanager
def lab_pool(content_dir: Path, n_labs: int | None = None, initializer: Callable | None = None,
             initargs: tuple = ()):
    """``map`` over labs: in worker processes for a large site on a machine with several cores,
    else in this process. Results come back in order, so the output is the same either way.
    ``n_labs``: how many labs it will map (default: the site's lab folders); ``initializer(*initargs)``
    runs once in each worker (in this process when there are none) before the first lab."""
    if n_labs is None:
        n_labs = len(lab_folders(Path(content_dir)))
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2 or n_labs < PARALLEL_MIN_LABS or os.environ.get("LABS_SERIAL"):
        if initializer is not None:
            initializer(*initargs)
        yield map
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker,
                             initargs=(initializer, initargs)) as pool:
        # Chunks of at most 8 labs: a worker that draws the last chunk keeps the build waiting for at
        # most 8 labs (125 at 1,000 labs in four chunks a worker, seconds when the machine is busy).
        yield lambda fn, items: pool.map(fn, items, chunksize=max(1, min(8, n_labs // (workers * 4))))


@dataclass(frozen=True)
class LabBuilt:
    """One lab computed and rendered (in a worker): what the parent needs of it, and no payload."""

    slug: str
    files: dict[str, bytes]  # its page and the files beside it, by output path (empty when written)
    written: tuple[str, ...]  # the output paths it wrote into the site folder itself
    links: dict[str, tuple[list[str], list[str]]]  # page path -> (ids in order, hrefs)
    notes: tuple[str, ...]
    problems: tuple[Diagnostic, ...]


# What a worker needs to compute and render any lab: set once per worker by _set_lab_state.
_LAB_STATE: dict[str, Any] = {}


def _set_lab_state(content: Content, theme_dir: Path | None, base_url: str | None,
                   options: Mapping[str, Any] | None, write_into: Path | None, cache: BuildCache | None,
                   keys: Mapping[str, str]) -> None:
    _LAB_STATE.clear()
    _LAB_STATE.update(content=content, theme_dir=theme_dir, base_url=base_url, options=options,
                      write_into=write_into, cache=cache, keys=keys, renderer=None)


def _note(text: str) -> str:
    """A kind's note for the author, or a renderer's positioned warning as it is."""
    return text if ": warning: " in text else f"note: {text}"


def compute_and_render(index: int) -> LabBuilt:
    """:func:`_compute_and_render`; in a pool worker, then collect the cycles the lab left."""
    try:
        return _compute_and_render(index)
    finally:
        if _COLLECT_PER_LAB:
            gc.collect(0)


def _compute_and_render(index: int) -> LabBuilt:
    """Compute lab ``index`` of the site and render its files where it runs (a worker, for a large
    site), so that its payload never travels back to the build; when the build writes a site,
    write them into its folder too, and keep the lab in the build cache. A lab whose numbers
    contradict its claims is rendered all the same (its links are checked in the same run), and
    neither written nor kept."""
    state = _LAB_STATE
    content: Content = state["content"]
    labs = content.labs
    lab = labs[index]
    computed = compute_lab(lab, state["options"])
    if state["renderer"] is None:
        state["renderer"] = Renderer(content, Theme(state["theme_dir"], kinds_of(content)), {}, state["base_url"])
    renderer: Renderer = state["renderer"]
    renderer.payloads = {lab.slug: computed.payload}
    try:
        files = renderer.lab_files(lab, labs[index - 1] if index > 0 else None,
                                   labs[index + 1] if index + 1 < len(labs) else None)
    except Exception:
        if not computed.problems:
            raise
        files = {}  # a page that cannot be drawn from numbers with mistakes: the mistakes are the news
    finally:
        renderer.payloads = {}
    links = {path: page_links(data.decode("utf-8")) for path, data in files.items() if path.endswith(".html")}
    notes, problems = tuple(computed.notes) + tuple(renderer.warnings), tuple(computed.problems)
    renderer.warnings.clear()  # the page-weight warnings of this lab: kept and reported with its notes
    if problems:
        return LabBuilt(lab.slug, files, (), links, notes, problems)
    cache: BuildCache | None = state["cache"]
    if cache is not None:
        cache.put(state["keys"][lab.slug], LabEntry(lab, notes, files, links))
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

    With a :class:`~generator.buildcache.BuildCache`, labs whose inputs are unchanged since a
    build that stored them are taken from it (neither loaded, computed nor rendered), and each
    lab built now is stored in it once it computed and rendered without a problem of its own
    (its links are checked again by every build); the files are the same."""
    # A build allocates millions of small objects and frees them by reference counting; the
    # cyclic collector would only re-scan the growing site again and again (a fifth of the
    # time on a large site). It is paused in this process for the build and resumed after;
    # pool workers collect their own garbage (see _start_worker).
    files, content, _ = _build_gc(content_dir, theme_dir, base_url, report, options, cache, None)
    return files, content


def _build_gc(content_dir: Path, theme_dir: Path | None, base_url: str | None, report: Callable[[str], None],
              options: Mapping[str, Any] | None, cache: BuildCache | None,
              write_into: Path | None) -> tuple[dict[str, bytes], Content, list[str]]:
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
        # byte of a lab folder: a serial second at 1,000 labs).
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
        fresh = dict(zip(todo, map_labs(partial(load_lab, source), todo)))
        content, problems = assemble_partial(
            source, [(stored[slug].lab, ()) if slug in stored else fresh[slug] for slug in source.order])
        if not problems:
            report(f"loaded {len(content.labs)} lab{'s' * (len(content.labs) != 1)} from "
                   f"{display_path(content_dir)}/ ({time.perf_counter() - started:.2f} s)"
                   + (f"; {len(stored)} from the build cache" if stored else ""))
        t = time.perf_counter()
        _pause_for_tests("compute")
        for entry in stored.values():
            for note in entry.notes:
                report(_note(note))
        to_compute = [lab for lab in content.labs if lab.slug not in stored]
    # The labs that loaded are computed, rendered and link-checked even when others have
    # mistakes (nothing is written then): one run, every error. Each lab is computed and
    # rendered in one go, in a worker forked after loading (it has the whole site already).
    index = {lab.slug: i for i, lab in enumerate(content.labs)}
    try:
        with lab_pool(content_dir, len(to_compute), _set_lab_state,
                      (content, theme_dir, base_url, options, write_into, cache, keys)) as map_labs:
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
    renderer = Renderer(content, Theme(theme_dir, kinds_of(content)), {}, base_url)
    rendered = {slug: entry.files for slug, entry in stored.items()} | {b.slug: b.files for b in built}
    written = written_stored + [path for b in built for path in b.written]
    try:
        files = renderer.render_all(rendered)
    except ContentError as exc:  # a theme mistake: the links cannot be checked without the pages
        raise ContentError(problems + exc.diagnostics) from None
    except Exception:
        if problems:  # a page that cannot be drawn from a lab with mistakes: those are what to report
            raise ContentError(problems) from None
        raise
    links = {path: links for entry in stored.values() for path, links in entry.links.items()}
    for lab_built in built:
        links.update(lab_built.links)
    links.update({path: page_links(data.decode("utf-8")) for path, data in files.items()
                  if path.endswith(".html") and path not in links})
    known = set(files) | set(written)
    if problems:
        problems += _partial_link_problems(source, content, known, links)
        raise ContentError(problems)
    check_page_links(links, known, content)
    files[MARKER] = MARKER_TEXT
    files.update(static_files(content_dir, dict.fromkeys(known | set(files))))  # content/static/, as it is
    report(f"rendered {sum(p.endswith('.html') for p in known)} pages ({time.perf_counter() - t:.2f} s)")
    return files, content, written


def _partial_link_problems(source: SiteSource, content: Content, files: set[str],
                           links: Mapping[str, tuple[list[str], list[str]]]) -> list[Diagnostic]:
    """Link problems of a build that has other mistakes. Pages of labs that did not load are not
    there: links to them are taken as good (their anchors cannot be known), and the links such a
    lab wrote in what did load (its Markdown, FAQ and quiz as far as they were read) are checked."""
    loaded = {lab.slug for lab in content.labs}
    failed = [slug for slug in source.order if slug not in loaded]
    known = set(files) | {f"labs/{slug}/index.html" for slug in failed}
    problems = link_problems(links, known, content)
    id_sets = {path: set(ids) for path, (ids, _) in links.items()}
    for slug in failed:
        recording = RecordingLinkTargets(source.links.labs, source.links.topics)
        load_lab(replace(source, links=recording), slug)  # again, to hear which links it writes
        hrefs = [source.links.resolve(href) or href for href, answer in recording.asked.items() if answer is None]
        problems += page_link_problems(f"labs/{slug}/index.html", hrefs, known, id_sets.get, content)[1]
    return problems


def _lab_keys(source: SiteSource, theme_dir: Path | None, base_url: str | None,
              options: Mapping[str, Any] | None, map_labs: Callable = map) -> dict[str, str]:
    """Each lab's build cache key (see :mod:`generator.buildcache`); its folder is hashed by
    ``map_labs`` (a :func:`lab_pool`'s)."""
    theme = Theme(theme_dir, all_kinds())
    site = buildcache.key_of(
        buildcache.generator_fingerprint(), buildcache.kinds_fingerprint(),
        buildcache.digest_files([("site.yaml", source.root / "site.yaml")]), source.order,
        buildcache.digest_files(sorted(theme.files.items())), base_url,
        sorted((k, str(v)) for k, v in (options or {}).items()), os.getcwd())
    digests = list(map_labs(partial(_lab_digest, source.root / "labs"), source.order))
    return {slug: buildcache.key_of(site, digests[i - 1] if i > 0 else "", digests[i],
                                    digests[i + 1] if i + 1 < len(digests) else "")
            for i, slug in enumerate(source.order)}


def _lab_digest(labs: Path, slug: str) -> str:
    return buildcache.digest_files(buildcache.files_under(labs / slug))


def kinds_of(content: Content):
    """The kinds of the site's labs, each once."""
    return [get_kind(name) for name in sorted({lab.kind for lab in content.labs})]


def guard_output(output: Path, content_dir: Path, theme_dir: Path | None) -> None:
    out = output.resolve()
    for name, folder in (("content", content_dir), ("theme", theme_dir)):
        if folder is None:
            continue
        f = folder.resolve()
        if out == f or out.is_relative_to(f) or f.is_relative_to(out):
            raise BuildError(f"the output folder must not contain or be inside the {name} folder "
                             f"{display_path(folder)}/", display_path(output))
    if out.exists() and not out.is_dir():
        raise BuildError("output exists and is not a folder", display_path(output))
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise BuildError(f"refusing to replace a folder that was not built by labs (no {MARKER} in it); "
                         "empty it or choose another --output", display_path(output))


_LITTER = re.compile(r"\.(?P<name>.+)-(?:new|old)-(?P<pid>[0-9]+)-[^/]*")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: someone else's process
        return True
    return True


def _is_ours(folder: Path) -> bool:
    """A folder a build wrote: it holds our marker, or it is still empty (killed right after mkdtemp)."""
    try:
        if not any(folder.iterdir()):
            return True
        marker = folder / MARKER
        return marker.is_file() and not marker.is_symlink() and marker.read_bytes() == MARKER_TEXT
    except OSError:
        return False


def clean_litter(output: Path) -> None:
    """Remove the ``.NAME-new-PID-*`` and ``.NAME-old-PID-*`` folders that killed builds left beside
    ``output`` — only those whose build process is gone and that carry our marker. When the
    output itself is missing (a build killed between the two renames of the fallback swap), the
    previous site waiting in ``.NAME-old-*`` is put back first."""
    parent = output.resolve().parent
    if not parent.is_dir():
        return
    litter = []
    for entry in sorted(parent.iterdir()):
        m = _LITTER.fullmatch(entry.name)
        if m and m["name"] == output.name and entry.is_dir() and not entry.is_symlink() \
                and int(m["pid"]) != os.getpid() and not _alive(int(m["pid"])) and _is_ours(entry):
            litter.append(entry)
    if not os.path.lexists(output):
        old = [e for e in litter if "-old-" in e.name and (e / MARKER).is_file()]
        if old:
            os.rename(old[0], output)
            litter.remove(old[0])
            log.warning("put the previous site back from %s (a build was killed mid-swap)", old[0].name)
    for entry in litter:
        shutil.rmtree(entry, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL (file system without it), EOPNOTSUPP
        return False
    raise OSError(errno, os.strerror(errno))


def write_site(files: dict[str, bytes], output: Path) -> None:
    """Write ``files`` into a temporary folder beside ``output``, then swap it in.

    The swap exchanges the two folders in one step where the OS can (Linux), so the output
    path is never missing; elsewhere it is two renames, and a build killed between them is
    repaired by the next one (:func:`clean_litter`)."""
    with site_folder(output) as tmp:
        write_files(tmp, files)


@contextmanager
def site_folder(output: Path):
    """A new, empty site folder beside ``output`` (holding only our marker) to write the site into;
    swapped in for ``output`` when the block ends without an exception, removed if it raises."""
    output = Path(output)
    parent = output.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    clean_litter(output)
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}-new-{os.getpid()}-", dir=parent))
    try:
        (tmp / MARKER).write_bytes(MARKER_TEXT)  # first, so a killed build's folder is provably ours
        yield tmp
        os.chmod(tmp, 0o755)
        _swap_in(tmp, output, parent)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BuildError(f"cannot write the site: {exc.strerror or exc}", display_path(output)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_files(folder: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` (output path -> bytes) into ``folder``, in path order."""
    made: set[Path] = set()
    for rel, data in sorted(files.items()):
        target = folder / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        target.write_bytes(data)
        _pause_for_tests("write")


def _swap_in(tmp: Path, output: Path, parent: Path) -> None:
    target = output.resolve() if output.is_symlink() else output
    if target.exists() and _exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)  # now the previous site
        return
    old = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{output.name}-old-{os.getpid()}-", dir=parent))
        os.rmdir(old)
        os.replace(target, old)
        _pause_for_tests("swap")
    try:
        os.replace(tmp, target)
    except OSError:
        if old is not None:
            os.replace(old, target)  # put the previous site back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


class SiteFiles(Mapping):
    """A built site's files by output path, read from its folder when asked for (a large site's
    bytes are not held in memory after the build)."""

    def __init__(self, folder: Path, paths: Iterable[str]):
        self.folder = Path(folder)
        self._paths = sorted(paths)
        self._known = set(self._paths)

    def __getitem__(self, path: str) -> bytes:
        if path not in self._known:
            raise KeyError(path)
        return (self.folder / path).read_bytes()

    def __contains__(self, path: object) -> bool:
        return path in self._known

    def __iter__(self):
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


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
