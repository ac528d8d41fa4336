"""``labs serve``: build, serve on localhost, rebuild on every change and reload open pages.

The site is served from memory: every good build replaces one ``dict`` of output files, so a
request sees one whole build, never half of one. Each good build is also written to
``--output`` with :func:`generator.sitefolder.write_site` (a temporary folder swapped in), in the
background and a moment later, so the page reloads without waiting for the disk.

Threads::

    main      waits for Ctrl-C (SIGINT) or SIGTERM, then stops the others in order; exit 0
    http      ThreadingHTTPServer: pages from memory, /__labs__/reload.js, /__labs__/events
    watchdog  file events under content/ and theme/, minus editor swap and temp files
    rebuild   takes a burst of events once it has gone quiet, runs SiteBuilder.rebuild
    mirror    writes the latest good site to --output, skipping versions already superseded

A content or theme error never stops the server: the last good site stays served and every
open page gets the list of errors over server-sent events, drawn as an overlay by the
injected ``/__labs__/reload.js``; the next good build clears it. That script is added to HTML
responses here, never to what ``labs build`` writes.
"""

from __future__ import annotations

import gc
import hashlib
import ipaddress
import json
import logging
import os
import posixpath
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
import webbrowser
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from generator import sitefolder
from generator.workers import lab_pool
from generator.errors import (
    BuildError,
    ContentError,
    Diagnostic,
    MoreErrors,
    SiteError,
    cap_per_file,
    display_path,
)
from generator.incremental import Rebuild, SiteBuilder

log = logging.getLogger(__name__)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'; "
       "frame-ancestors 'none'")
# Sent with every response, error responses of the HTTP layer (400, 414, 431, 501) included.
SECURITY_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    # The policy the pages are built for, so a mistake in a theme shows up while writing.
    ("Content-Security-Policy", CSP),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
)
REQUEST_TIMEOUT_SECONDS = 10  # a connection that sends nothing for this long is closed
MAX_CONNECTIONS = 64  # connections served at once (each is a thread); more are closed at once
PREFIX = "/__labs__/"
EVENTS_PATH = PREFIX + "events"
RELOAD_PATH = PREFIX + "reload.js"

# A burst of file events (truncate + write + close, or write-temp + rename) ends within a few
# milliseconds; 20 ms of quiet catches it without being felt. A steady stream of events is cut
# after 500 ms so the site never waits forever (e.g. a checkout rewriting every file).
QUIET_SECONDS = 0.02
MAX_WAIT_SECONDS = 0.5
# Writing a large site to disk takes a while; waiting for the author to pause keeps it out
# of the way of the next rebuild.
MIRROR_DELAY_SECONDS = 0.3
# An idle event stream sends a comment this often, so dead connections are noticed.
HEARTBEAT_SECONDS = 10.0

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "application/javascript; charset=utf-8",
    ".mjs": "application/javascript; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".xml": "application/xml",
    ".txt": "text/plain; charset=utf-8",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".webmanifest": "application/manifest+json",
}

UNBUILT_PAGE = b"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Not built yet | labs serve</title></head>
<body>
<h1>The site has not been built yet</h1>
<p>Fix the errors listed here and in the terminal; this page reloads by itself.</p>
</body>
</html>
"""

# The live-reload client. A classic script (the site's CSP allows same-origin scripts only)
# that draws the overlay with DOM APIs and CSSOM assignments: no inline scripts or styles.
RELOAD_JS = r"""/* labs serve: live reload and the build-error overlay. Never part of a built site. */
(function () {
  "use strict";
  var script = document.currentScript;
  var etag = (script && script.getAttribute("data-etag")) || "";
  var OVERLAY_ID = "labs-error-overlay";

  function el(tag, text, css) {
    var node = document.createElement(tag);
    if (text) node.textContent = text;
    for (var name in css || {}) node.style[name] = css[name];
    return node;
  }

  function where(error) {
    var at = error.path || "";
    if (error.line > 0) at += ":" + error.line + (error.column > 0 ? ":" + error.column : "");
    return at;
  }

  function draw(errors) {
    var old = document.getElementById(OVERLAY_ID);
    if (old) old.remove();
    if (!errors.length) return;
    var box = el("section", "", {
      position: "fixed", top: "0", left: "0", right: "0", maxHeight: "70vh", overflow: "auto",
      zIndex: "2147483647", boxSizing: "border-box", padding: "1rem 1.25rem",
      background: "#1d1f24", color: "#f3f3f3", borderBottom: "4px solid #e5484d",
      font: "14px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
      boxShadow: "0 6px 24px rgba(0,0,0,.35)", textAlign: "left"
    });
    box.id = OVERLAY_ID;
    box.setAttribute("role", "alert");
    box.setAttribute("aria-label", "Build errors");
    var n = errors.reduce(function (sum, error) { return sum + (error.more || 1); }, 0);
    var head = el("h2", n + (n === 1 ? " error" : " errors") + " in the last build", {
      margin: "0 0 .25rem", font: "bold 16px/1.4 system-ui, sans-serif", color: "#ff8a8e"
    });
    var note = el("p", "The page shows the last good build. Fix the file and this goes away by itself.", {
      margin: "0 0 .75rem", font: "13px/1.4 system-ui, sans-serif", color: "#c9c9c9"
    });
    var hide = el("button", "Hide", {
      float: "right", font: "13px system-ui, sans-serif", padding: ".25rem .75rem", cursor: "pointer"
    });
    hide.type = "button";
    hide.addEventListener("click", function () { box.remove(); });
    box.appendChild(hide);
    box.appendChild(head);
    box.appendChild(note);
    var list = el("ol", "", { margin: "0", padding: "0", listStyle: "none" });
    errors.forEach(function (error) {
      var item = el("li", "", { margin: "0 0 .75rem" });
      item.className = "labs-error";
      var loc = el("div", where(error), { color: "#7cc7ff", fontWeight: "bold" });
      loc.className = "labs-error-where";
      item.appendChild(loc);
      var message = el("div", error.message, { whiteSpace: "pre-wrap" });
      message.className = "labs-error-message";
      item.appendChild(message);
      if (error.source_line) {
        // Keep tabs in the caret's indent so it lines up under the column however tabs render.
        var indent = error.source_line.slice(0, Math.max(0, error.column - 1)).replace(/[^\t]/g, " ");
        var caret = error.column > 0 ? "\n" + indent + "^" : "";
        var code = el("pre", error.source_line + caret, {
          margin: ".25rem 0 0", padding: ".4rem .6rem", background: "#2a2d34", overflow: "auto",
          whiteSpace: "pre", font: "inherit"
        });
        code.className = "labs-error-source";
        item.appendChild(code);
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    document.body.appendChild(box);
  }

  if (!window.EventSource) return;
  var source = new EventSource("/__labs__/events?path=" + encodeURIComponent(location.pathname) +
                               "&etag=" + encodeURIComponent(etag));
  source.onmessage = function (event) {
    var state;
    try { state = JSON.parse(event.data); } catch (e) { return; }
    if (state.reload) {
      source.close();
      location.reload();
      return;
    }
    draw(state.errors || []);
  };
})();
"""


# -- requests -> files --------------------------------------------------------------------

def resolve_path(raw: str, files: Mapping[str, bytes]) -> tuple[int, str]:
    """Map a request target to a file of the site.

    Returns ``(200, key)`` for a file, ``(301, location)`` for a folder asked for without its
    slash, ``(404, "")`` for anything the site does not have and ``(400, reason)`` for a
    target that tries to leave the site (``..``, encoded slashes or backslashes, NUL, control
    characters, bad percent-encoding). Only keys of ``files`` are ever returned, so nothing
    outside the site can be reached whatever the target says.
    """
    path, _, query = raw.partition("?")
    path = path.partition("#")[0]
    if not path.startswith("/"):
        return 400, "the path must start with /"
    lowered = path.lower()
    if "\\" in path or "\0" in path or any(code in lowered for code in ("%00", "%2f", "%5c")):
        return 400, "encoded slashes, backslashes and NUL are not allowed"
    try:
        decoded = unquote(path, errors="strict")
    except UnicodeDecodeError:
        return 400, "the path is not valid UTF-8"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in decoded):
        return 400, "control characters are not allowed"
    segments = decoded.split("/")[1:]
    if any(s in (".", "..") for s in segments):
        return 400, "'.' and '..' are not allowed in paths"
    if any(s.startswith(".") for s in segments):
        return 404, ""  # the build marker and any other dot-file are not part of the site
    key = decoded[1:]
    if key == "" or key.endswith("/"):
        key += "index.html"
    if key in files:
        return 200, key
    if f"{key}/index.html" in files:
        return 301, quote(decoded, safe="/") + "/" + (f"?{query}" if query else "")
    return 404, ""


def content_type(key: str) -> str:
    """The Content-Type header for a site file, by its extension."""
    return CONTENT_TYPES.get(posixpath.splitext(key)[1].lower(), "application/octet-stream")


TEXT, HTML, JS = CONTENT_TYPES[".txt"], CONTENT_TYPES[".html"], CONTENT_TYPES[".js"]


def inject_reload(html: bytes, etag: str) -> bytes:
    """``html`` with the reload script before its last ``</body>`` (or at the end)."""
    tag = f'<script src="{RELOAD_PATH}" data-etag="{etag}" defer></script>\n'.encode()
    at = html.lower().rfind(b"</body>")
    return html + tag if at < 0 else html[:at] + tag + html[at:]


# -- what is being served ------------------------------------------------------------------

def diagnostic_json(d: Diagnostic | MoreErrors) -> dict:
    if isinstance(d, MoreErrors):  # the overlay counts it as the errors it stands for
        return {"path": d.path, "line": 0, "column": 0, "message": f"… and {d.count} more error"
                f"{'s' * (d.count != 1)} in this file", "source_line": "", "more": d.count}
    return {"path": d.path, "line": d.line, "column": d.column, "message": d.message, "source_line": d.source_line}


def build_error_json(exc: BuildError) -> dict:
    """A BuildError (not tied to a line: a missing theme folder, an unreadable file) as an overlay item."""
    message = str(exc).removeprefix(f"{exc.path}: " if exc.path else "").removeprefix("error: ")
    return {"path": exc.path or "", "line": 0, "column": 0, "message": message, "source_line": ""}


class LiveSite:
    """The files being served, the current errors, and a condition to wait for the next change."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.files: dict[str, bytes] = {}  # replaced whole, never changed in place
        self.errors: list[dict] = []
        self.generation = 0
        self.stopping = False
        self._assets = 0  # counts changes of the files pages use (non-HTML)
        self._etags: dict[str, tuple[bytes, str]] = {}

    def publish(self, files: dict[str, bytes] | None, errors: Iterable[dict] = (),
                changed: Iterable[str] | None = None) -> None:
        """Serve ``files`` (None: keep the last good ones) with ``errors`` shown on every page.
        ``changed`` names the files that differ from the last ones (None: maybe all)."""
        with self.cond:
            if files is not None:
                if changed is None or any(not path.endswith(".html") for path in changed):
                    self._assets += 1  # a stylesheet, script or image changed: every page reloads
                self.files = files
            self.errors = list(errors)
            self.generation += 1
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()

    def wait(self, seen: int, timeout: float) -> tuple[int, list[dict]] | None:
        """Wait for a generation other than ``seen`` (or ``timeout``): (generation, errors), or
        None once the server is stopping."""
        with self.cond:
            self.cond.wait_for(lambda: self.generation != seen or self.stopping, timeout)
            return None if self.stopping else (self.generation, self.errors)

    def etag(self, key: str, data: bytes) -> str:
        """Changes when the page or any asset changes: what an open page must reload for."""
        with self.cond:
            memo = self._etags.get(key)
            if memo is None or memo[0] is not data:
                memo = (data, hashlib.sha256(data).hexdigest()[:12])
                self._etags[key] = memo
            return f"{memo[1]}-{self._assets}"

    def page_etag(self, raw_path: str) -> str:
        """The etag of what a GET of ``raw_path`` would be answered with now."""
        with self.cond:  # files and the asset count of one generation
            files = self.files
            if not files:
                return "unbuilt"
            status, key = resolve_path(raw_path, files)
            if status == 404:
                key = "404.html"
            if status not in (200, 404) or key not in files:
                return f"status-{status}"
            return self.etag(key, files[key])


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    server_version = "labs-serve"
    sys_version = ""
    # HTTP/0.9 answers have no status line and no headers, so not even an error would carry the
    # security headers: a request line that cannot be read is answered as HTTP/1.0.
    default_request_version = "HTTP/1.0"
    timeout = REQUEST_TIMEOUT_SECONDS  # StreamRequestHandler sets it on the socket: no idle connection forever

    def end_headers(self) -> None:
        """Every response carries the security headers, the HTTP layer's own errors included."""
        for name, value in SECURITY_HEADERS:
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def do_HEAD(self) -> None:
        self._respond(body=False)

    def do_GET(self) -> None:
        self._respond(body=True)

    def _send(self, status: int, ctype: str, data: bytes, body: bool, headers: Mapping[str, str] = {}) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _host_allowed(self) -> bool:
        """On loopback, only requests addressed to this machine by name: a page on another site
        cannot read ours through a DNS name rebound to 127.0.0.1."""
        if not self.server.loopback_only:
            return True
        host = self.headers.get("Host")
        if host is None:
            return True  # HTTP/1.0 without Host: not a browser
        try:
            name = urlsplit("//" + host.strip()).hostname or ""
        except ValueError:
            return False
        return name == "localhost" or name.endswith(".localhost") or _is_ip_loopback(name)

    def _respond(self, body: bool) -> None:
        live = self.server.live
        try:
            if not self._host_allowed():
                return self._send(400, TEXT, b"bad request: unexpected Host header\n", body)
            path, _, query = self.path.partition("?")
            if path == RELOAD_PATH:
                return self._send(200, JS, RELOAD_JS.encode(), body)
            if path == EVENTS_PATH and body:
                return self._events(parse_qs(query))
            files = live.files
            if not files:
                page = inject_reload(UNBUILT_PAGE, "unbuilt")
                return self._send(503, HTML, page, body)
            status, where = resolve_path(self.path, files)
            if status == 400:
                return self._send(400, TEXT, f"bad request: {where}\n".encode(), body)
            if status == 301:
                return self._send(301, TEXT, b"", body, {"Location": where})
            key = where if status == 200 else "404.html"
            if key not in files:
                return self._send(404, TEXT, b"not found\n", body)
            data = files[key]
            if key.endswith(".html"):
                data = inject_reload(data, live.etag(key, data))
            self._send(status, content_type(key), data, body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _events(self, query: dict[str, list[str]]) -> None:
        """Server-sent events: one JSON message whenever what this page should show changes."""
        live = self.server.live
        page = query.get("path", ["/"])[0]
        etag = query.get("etag", [""])[0]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"retry: 500\n\n")
        seen, last = -1, None
        while True:
            news = live.wait(seen, HEARTBEAT_SECONDS)
            if news is None:
                return
            changed = news[0] != seen
            seen, errors = news
            state = {"reload": live.page_etag(page) != etag, "errors": errors}
            if changed and state != last:
                self.wfile.write(b"data: " + json.dumps(state, sort_keys=True).encode() + b"\n\n")
                last = state
            else:
                self.wfile.write(b": ping\n\n")
            self.wfile.flush()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], live: LiveSite):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.live = live
        self.loopback_only = _is_loopback(address[0])
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        """One thread per connection, at most :data:`MAX_CONNECTIONS` at once: a flood of
        half-sent requests cannot grow threads without end (each also times out)."""
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def server_bind(self) -> None:
        # HTTPServer.server_bind asks DNS for our own name (socket.getfqdn), which can stall
        # for seconds offline; we never use the answer.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # a browser closed a tab or an event stream: nothing to report
        super().handle_error(request, client_address)


# -- watching ------------------------------------------------------------------------------

_SWAP_SUFFIXES = (".swp", ".swo", ".swx", ".swpx", ".tmp", ".temp", ".bak", ".orig", ".part",
                  ".crdownload", ".kate-swp", "~")


def is_editor_noise(path: str | os.PathLike, root: str | os.PathLike | None = None) -> bool:
    """True for editor swap, backup and temp files and anything inside a dot-folder."""
    p = Path(path)
    parts = p.relative_to(root).parts if root is not None and p.is_relative_to(root) else (p.name,)
    name = p.name
    return (
        any(part.startswith(".") for part in parts)  # .lab.yaml.swp, .#lab.yaml, .git/, .goutputstream-*
        or name.startswith(("#", "~$"))  # Emacs autosave, Office lock files
        or name.endswith(_SWAP_SUFFIXES)
        or name == "4913"  # Vim's "can I write here?" probe
        or "___jb_" in name  # JetBrains safe-write
    )


RESCAN = ""  # in a batch: look at every file, not only the paths reported


class ChangeQueue:
    """Changed paths from the watcher, handed over in debounced batches."""

    def __init__(self, quiet: float = QUIET_SECONDS, max_wait: float = MAX_WAIT_SECONDS):
        self.quiet, self.max_wait = quiet, max_wait
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._last = 0.0
        self._closed = False

    def add(self, path: str) -> None:
        with self._cond:
            self._paths.add(path)
            self._last = time.monotonic()
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def take(self) -> set[str] | None:
        """Wait for changes, then for a quiet moment; the batch, or None once closed."""
        with self._cond:
            while not self._paths and not self._closed:
                self._cond.wait()
            first = time.monotonic()
            while not self._closed:
                now = time.monotonic()
                wait = min(self._last + self.quiet, first + self.max_wait) - now
                if wait <= 0:
                    break
                self._cond.wait(wait)
            if self._closed:
                return None
            batch, self._paths = self._paths, set()
            return batch


def _watch(folders: Iterable[Path], queue: ChangeQueue):
    from watchdog.events import FileSystemEventHandler
    from watchdog.observers import Observer

    class Handler(FileSystemEventHandler):
        def __init__(self, root: Path):
            self.root = root

        def on_any_event(self, event) -> None:
            if event.event_type not in ("created", "modified", "deleted", "moved", "closed"):
                return  # opened, closed without writing
            if event.is_directory and event.event_type in ("modified", "closed"):
                return  # comes with the event for the file inside
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                path = os.fsdecode(raw) if raw else ""
                if path and not is_editor_noise(path, self.root):
                    queue.add(path)

    observer = Observer()
    for folder in folders:
        observer.schedule(Handler(folder), str(folder), recursive=True)
    observer.start()
    return observer


# -- writing the site to disk --------------------------------------------------------------

class _Mirror:
    """Writes the latest good site to ``output`` after a short pause, one write at a time.

    The first write is a whole site swapped in (:func:`generator.sitefolder.write_site`); after it,
    only the files that changed since the last write are written (each one atomically: a
    temporary file beside it, renamed over it) and the files that went away are removed, so
    a save does not rewrite a large site. Should the output stop being the folder this mirror
    wrote (its marker gone, or a write failed), the next write is a whole site again."""

    def __init__(self, output: Path, warn: Callable[[str], None], delay: float = MIRROR_DELAY_SECONDS):
        self.output, self.warn, self.delay = output, warn, delay
        self._cond = threading.Condition()
        self._pending: dict[str, bytes] | None = None
        self._due = 0.0
        self._closed = False
        self._on_disk: dict[str, bytes] | None = None  # what the last write left in output
        self._thread = threading.Thread(target=self._run, name="labs-mirror", daemon=True)
        self._thread.start()

    def submit(self, files: dict[str, bytes], now: bool = False) -> None:
        with self._cond:
            self._pending = files
            self._due = time.monotonic() + (0 if now else self.delay)
            self._cond.notify_all()

    def close(self) -> None:
        """Write what is pending now, then stop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                while self._pending is not None and not self._closed and time.monotonic() < self._due:
                    self._cond.wait(self._due - time.monotonic())
                files, self._pending = self._pending, None
                if files is None:
                    return
            try:
                self._write(files)
            except SiteError as exc:
                self._on_disk = None
                self.warn(f"could not write the site to disk (still serving it): {exc}")

    def _write(self, files: dict[str, bytes]) -> None:
        previous, self._on_disk = self._on_disk, None
        target = self.output.resolve()
        marker = target / sitefolder.MARKER
        if previous is None or not marker.is_file() or marker.read_bytes() != sitefolder.MARKER_TEXT:
            sitefolder.write_site(files, self.output)
            self._on_disk = files
            return
        try:
            for rel, data in files.items():
                old = previous.get(rel)
                if old is data or old == data:
                    continue
                path = target / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                temporary = path.with_name(f".{path.name}.labs-tmp")
                temporary.write_bytes(data)
                os.replace(temporary, path)
            for rel in sorted(set(previous) - set(files), reverse=True):
                path = target / rel
                path.unlink(missing_ok=True)
                for folder in path.parents:  # drop folders left empty, up to the site's own
                    if folder == target or any(folder.iterdir()):
                        break
                    folder.rmdir()
        except OSError as exc:
            raise SiteError(f"cannot write the site: {exc.strerror or exc}") from None
        self._on_disk = files


# -- the server ----------------------------------------------------------------------------

def _is_ip_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None)
        except OSError:
            return False
        return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


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
        self._httpd: _HTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._observer = None
        self._mirror: _Mirror | None = None
        self._failing = False
        self._errors_printed: list[dict] = []  # the last errors shown in the terminal
        self._root = self.content.resolve().parent  # paths are shown from here, as diagnostics are

    def start(self) -> str:
        """Bind, build, start serving and watching; returns the site's URL."""
        try:
            self._httpd = _HTTPServer((self.host, self.port), self.live)
        except OSError as exc:
            raise BuildError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from None
        host, port = str(self._httpd.server_address[0]), self._httpd.server_address[1]
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
        # The first build may fork worker processes (as `labs build` does for a large site), so
        # it runs before any thread exists; a full rescan right after it catches any file saved
        # before the watcher started.
        with lab_pool(self.content) as map_labs:
            self._first_build(map_labs)
        self._observer = _watch([self.content.resolve()] + ([self.theme.resolve()] if self.theme else []), self.changes)
        self.changes.add(RESCAN)
        if self.output is not None:
            self._mirror = _Mirror(Path(self.output), self.warn)
            if self.live.files:
                self._mirror.submit(self.live.files, now=True)
        self._spawn("labs-http", self._httpd.serve_forever)
        self._spawn("labs-rebuild", self._rebuild_loop)
        return self.url

    def stop(self) -> None:
        """Stop watching, finish the rebuild under way, close connections, flush the disk copy."""
        if self._observer is not None:
            self._observer.stop()
        self.changes.close()
        self.live.stop()
        if self._httpd is not None:
            if any(t.name == "labs-http" for t in self._threads):
                self._httpd.shutdown()
            self._httpd.server_close()
        for t in self._threads:
            t.join()
        if self._observer is not None:
            self._observer.join()
        if self._mirror is not None:
            self._mirror.close()

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- building -------------------------------------------------------------------------
    def _first_build(self, map_labs: Callable) -> None:
        result = self._run_build(None, map_labs)
        if result is not None:
            n = len(result.content.labs)
            pages = sum(p.endswith(".html") for p in result.files)
            self.report(f"built {_plural(pages, 'page')}, {_plural(n, 'lab')} in {result.seconds:.2f} s")
        # The first build leaves every lab, payload and page alive for the whole session. Left
        # to the cyclic GC, a full collection walks them all (0.8 s at 1000 labs) in the middle
        # of some later rebuild; frozen, they are skipped. Acyclic objects are still freed by
        # reference counting when a rebuild replaces them.
        gc.collect()
        gc.freeze()

    def _rebuild_loop(self) -> None:
        while True:
            batch = self.changes.take()
            if batch is None:
                return
            rescan = RESCAN in batch
            batch.discard(RESCAN)
            result = self._run_build(None if rescan else batch)
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

    def _run_build(self, batch: set[str] | None, map_labs: Callable = map) -> Rebuild | None:
        """Build; publish the result, or the errors while the last good site stays served."""
        what = "the site" if not batch else _describe(batch, self._root)
        try:
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
        self.live.publish(result.files, [], result.changed)
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
    if not _is_loopback(host):
        warn(f"WARNING: serving on {host}: anyone who can reach this machine on that address can read the site. "
             "This is a development server, not hardened for the internet; use --host 127.0.0.1 unless you "
             "mean it.")
    server = DevServer(content, theme, output, host, port, report, warn, options)
    stop = threading.Event()
    previous = {}
    try:
        try:
            url = server.start()
            if threading.current_thread() is threading.main_thread():
                for sig in (signal.SIGINT, signal.SIGTERM):  # from here on, Ctrl-C stops cleanly
                    previous[sig] = signal.signal(sig, lambda *_: stop.set())
        except KeyboardInterrupt:  # Ctrl-C during the first build
            return 0
        watching = f"{display_path(content)}/" + (f" and {display_path(theme)}/" if theme else "")
        report(f"serving {url} — watching {watching} (Ctrl-C to stop)")
        if open_browser:
            threading.Thread(target=webbrowser.open, args=(url,), name="labs-browser", daemon=True).start()
        while not stop.wait(0.25):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    report("stopped")
    return 0
