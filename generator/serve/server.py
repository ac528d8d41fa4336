"""``labs serve``: build, serve on localhost, rebuild on every change and reload open pages.

Threads::

    main      waits for Ctrl-C (SIGINT) or SIGTERM, then stops the others in order; exit 0
    http      the site from memory, /__labs__/reload.js, /__labs__/events (httpd.py)
    watchdog  file events under content/ and theme/, minus editor swap and temp files (watch.py)
    rebuild   takes a burst of events once it has gone quiet, runs SiteBuilder.rebuild (incremental.py)
    mirror    writes the latest good site to --output, skipping versions already superseded (mirror.py)

A content or theme error never stops the server: the last good site stays served and every
open page gets the list of errors over server-sent events, drawn as an overlay by the
injected reload script; the next good build clears it.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import threading
import time
import traceback
import webbrowser
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from generator import sitefolder
from generator.errors import BuildError, ContentError, Diagnostic, cap_per_file, display_path
from generator.filepolicy import regular_problem, walk_once
from generator.serve.incremental import Rebuild, SiteBuilder
from generator.serve.httpd import LiveHTTPServer, LiveSite, build_error_json, diagnostic_json, is_loopback
from generator.serve.mirror import Mirror
from generator.serve.watch import RESCAN, ChangeQueue, watch
from generator.speed.workers import lab_pool

log = logging.getLogger(__name__)


STOP_SECONDS = 1.2  # Ctrl-C or SIGTERM stops within this long (a rebuild under way is abandoned)

def special_files(paths: Iterable[Path], root: Path | None = None) -> list[Diagnostic]:
    """Every FIFO, device or socket among ``paths`` and below those that are folders, or symbolic
    link to one, as the file policy's error (:func:`generator.filepolicy.regular_problem`); none
    is opened. Checked before a rebuild reads anything, so nothing the build or its cache does
    can block on one; folders are walked as the build walks them."""
    found = []
    for top in paths:
        walked = walk_once(top) if os.path.isdir(top) else [(os.path.dirname(top), [], [os.path.basename(top)])]
        for dirpath, _, filenames in walked:
            for name in sorted(filenames):
                problem = regular_problem(Path(dirpath, name), root)
                if problem is not None:
                    found.append(problem)
    return found


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _describe(paths: Iterable[str], root: Path | None = None) -> str:
    """``content/labs/x/quiz.yaml``, or ``… and 2 more``: paths as the author knows them."""
    shown = sorted(display_path(p, root) for p in paths)
    if not shown:
        return "nothing"
    return shown[0] + (f" and {len(shown) - 1} more" if len(shown) > 1 else "")


class DevServer:
    """Everything ``labs serve`` runs, startable and stoppable from code (and tests)."""

    def __init__(self, content: Path, theme: Path | None, output: Path | None, host: str = "127.0.0.1",
                 port: int = 8000, report: Callable[[str], None] = print, warn: Callable[[str], None] = print,
                 options: Mapping[str, Any] | None = None):
        self.content, self.output = Path(content), output
        self.theme = Path(theme) if theme is not None else None
        self.host, self.port = host, port
        self.report, self.warn = report, warn
        self.live = LiveSite()
        self.builder = SiteBuilder(self.content, self.theme, options=options, report=report)
        self.changes = ChangeQueue()
        self.url = ""
        self._httpd: LiveHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._observer = None
        self._mirror: Mirror | None = None
        self._failing = False
        self._owed: set[str] | None = set()  # changes a refused build left for the next (None: all)
        self._errors_printed: list[dict] = []  # the last errors shown in the terminal
        self._root = self.content.resolve().parent  # paths are shown from here, as diagnostics are

    def start(self) -> str:
        """Bind, build, start serving and watching; returns the site's URL."""
        try:
            self._httpd = LiveHTTPServer((self.host, self.port), self.live)
        except OSError as exc:
            raise BuildError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None
        host, port = str(self._httpd.server_address[0]), self._httpd.server_address[1]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
        # The first build may fork worker processes (as `labs build` does for a large site), so
        # it runs before any thread exists; a full rescan right after it catches any file saved
        # before the watcher started.
        with lab_pool(self.content) as map_labs:
            self._first_build(map_labs)
        self._observer = watch([self.content.resolve()] + ([self.theme.resolve()] if self.theme else []), self.changes)
        self.changes.add(RESCAN)
        if self.output is not None:
            self._mirror = Mirror(Path(self.output), self.warn)
            if self.live.files:
                self._mirror.submit(self.live.files, now=True)
        self._spawn("labs-http", self._httpd.serve_forever)
        self._spawn("labs-rebuild", self._rebuild_loop)
        return self.url

    def stop(self) -> None:
        """Stop watching, close connections and let the disk copy of the last good site finish,
        within :data:`STOP_SECONDS`. A rebuild under way is not waited for: a lab's computing can
        take many seconds, and its result would only be thrown away (the thread is a daemon: it
        ends with the process; it writes nothing, the mirror writes)."""
        deadline = time.monotonic() + STOP_SECONDS
        if self._observer is not None:
            self._observer.stop()
        self.changes.close()
        self.live.stop()
        if self._httpd is not None:
            if any(t.name == "labs-http" for t in self._threads):
                self._httpd.shutdown()
            self._httpd.server_close()
        for t in self._threads + ([self._observer] if self._observer is not None else []):
            if t.name != "labs-rebuild":
                t.join(max(0.0, deadline - time.monotonic()))
        if self._mirror is not None and not self._mirror.close(max(0.0, deadline - time.monotonic())):
            self.warn("stopped before the site was written to disk; the next build writes it")

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- building -------------------------------------------------------------------------
    def _first_build(self, map_labs: Callable) -> None:
        result = self.run_build(None, map_labs)
        if result is not None:
            n = len(result.content.labs)
            pages = sum(p.endswith(".html") for p in result.files)
            self.report(f"built {_plural(pages, 'page')}, {_plural(n, 'lab')} in {result.seconds:.2f} s")
        # The first build leaves every lab, payload and page alive for the whole session. Left
        # to the cyclic GC, a full collection walks them all in the middle of some later rebuild;
        # frozen, they are skipped. Acyclic objects are still freed by reference counting when a
        # rebuild replaces them.
        gc.collect()
        gc.freeze()

    def _rebuild_loop(self) -> None:
        while True:
            batch = self.changes.take()
            if batch is None:
                return
            rescan = RESCAN in batch
            batch.discard(RESCAN)
            result = self.run_build(None if rescan else batch)
            if result is None:
                continue
            what = _describe(batch, self._root) if batch else "files during the first build"
            if not result.labs_changed and not result.pages_rendered:
                if batch:
                    self.report(f"changed {what} → nothing to rebuild ({result.seconds:.2f} s)")
            else:
                self.report(f"changed {what} → rebuilt {_plural(len(result.labs_changed), 'lab')}, "
                            f"{_plural(result.pages_rendered, 'page')} in {result.seconds:.2f} s")
            if self._mirror is not None:
                self._mirror.submit(result.files)

    def run_build(self, batch: set[str] | None, map_labs: Callable = map) -> Rebuild | None:
        """Build; publish the result, or the errors while the last good site stays served."""
        what = "the site" if not batch else _describe(batch, self._root)
        if batch is None or self._owed is None:  # what a refused build did not look at is owed
            batch = None
        else:
            batch = batch | self._owed
        try:
            special = special_files(self.builder.paths_read(batch), self._root)
            if special:
                self._owed = None if batch is None else batch
                raise ContentError(special)
            self._owed = set()
            result = self.builder.rebuild(batch, map_labs)
        except ContentError as exc:
            shown = cap_per_file(exc.diagnostics)  # at most 20 a file, then "… and N more"
            self._fail(what, [diagnostic_json(d) for d in shown], [str(d) for d in shown])
            return None
        except BuildError as exc:
            self._fail(what, [build_error_json(exc)], [str(exc)])
            return None
        except Exception as exc:  # noqa: BLE001 - a bug in labs: say so, keep serving
            self.warn(traceback.format_exc().rstrip())
            self._fail(what, [{"path": "", "line": 0, "column": 0, "source_line": "",
                               "message": f"internal error (a bug in labs, please report it): "
                                          f"{type(exc).__name__}: {exc}"}], [])
            return None
        self.live.publish(result.files, [], result.changed, result.content.site.frame_ancestors)
        if self._failing:
            self.report("errors fixed")
            self._failing = False
        return result

    def _fail(self, what: str, errors: list[dict], lines: list[str]) -> None:
        self.live.publish(None, errors)
        if what == "the site" and self._failing and errors == self._errors_printed:
            return  # the rescan after the first build found the same errors: said already
        self._failing = True
        self._errors_printed = errors
        kept = "still serving the last good site" if self.live.files else "nothing to serve until it builds"
        total = sum(e.get("more", 1) for e in errors)
        if what == "the site":
            self.warn(f"{_plural(total, 'error')} in the site; {kept}")
        else:
            self.warn(f"changed {what} → {_plural(total, 'error')}; {kept}")
        for line in lines:
            self.warn(line)
        return


def _interrupt(signum: int, frame) -> None:
    raise KeyboardInterrupt


def serve(content: Path, theme: Path | None, output: Path, host: str = "127.0.0.1", port: int = 8000,
          open_browser: bool = False, report: Callable[[str], None] = print,
          warn: Callable[[str], None] = print, options: Mapping[str, Any] | None = None) -> int:
    """Run the development server until Ctrl-C (SIGINT) or SIGTERM; returns the exit code, 0.

    Raises BuildError when it cannot start: a missing content or theme folder, an output
    folder that labs must not replace, or an address it cannot listen on. Content and theme
    errors do not stop it; they are shown in the terminal and on every open page.
    """
    content, output = Path(content), Path(output)
    theme = Path(theme) if theme is not None else None
    for name, folder in (("content", content), ("theme", theme)):
        if folder is not None and not folder.is_dir():
            raise BuildError(f"{name} folder not found", display_path(folder))
    sitefolder.guard_output(output, content, theme)
    if not is_loopback(host):
        warn(f"WARNING: serving on {host}: anyone who can reach this machine on that address can read the site. "
             "This is a development server, not hardened for the internet; use --host 127.0.0.1 unless you "
             "mean it.")
    gate = _Gate()  # once "stopped" is said, a rebuild still running in its thread says nothing more
    server = DevServer(content, theme, output, host, port, gate.wrap(report), gate.wrap(warn), options)
    previous = {}
    main = threading.current_thread() is threading.main_thread()
    try:
        try:
            if main:  # SIGTERM stops it as Ctrl-C does: a KeyboardInterrupt wherever the main thread is
                previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _interrupt)
            url = server.start()  # a first build with workers ends them on the way out (speed/workers.py)
        except KeyboardInterrupt:  # during the first build
            return 0
        try:
            watching = f"{display_path(content)}/" + (f" and {display_path(theme)}/" if theme else "")
            report(f"serving {url} — watching {watching} (Ctrl-C to stop)")
            if open_browser:
                threading.Thread(target=webbrowser.open, args=(url,), name="labs-browser", daemon=True).start()
            # The main thread only waits; a signal's handler raises here and sets no lock-taking
            # object (an Event set from a handler deadlocks when the signal falls inside its wait).
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    finally:
        if main:  # stopping now: a second Ctrl-C must not cut the stop short (the disk copy's cleanup)
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous.setdefault(sig, signal.signal(sig, signal.SIG_IGN))
        try:
            server.stop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    gate.close()
    report("stopped")
    return 0


class _Gate:
    """Lets messages through until closed; a message under way when it closes is finished first."""

    def __init__(self):
        self._lock, self._open = threading.Lock(), True

    def wrap(self, say: Callable[[str], None]) -> Callable[[str], None]:
        def gated(message: str) -> None:
            with self._lock:
                if self._open:
                    say(message)
        return gated

    def close(self) -> None:
        with self._lock:
            self._open = False
