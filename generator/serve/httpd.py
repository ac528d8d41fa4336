"""The HTTP side of ``labs serve``: the site served from memory, and the live-reload channel.

Every good build replaces one ``dict`` of output files (:class:`LiveSite`), so a request sees one
whole build, never half of one. HTML responses get ``/__labs__/reload.js`` (``generator/serve/reload.js``)
added before ``</body>``; that script listens on ``/__labs__/events`` (server-sent events) and
reloads the page when what it shows changed, or draws the build's errors over it. Nothing of
this reaches what ``labs build`` writes.

The server is for one author on one machine: it answers only requests addressed to this machine
by name when bound to loopback, closes a connection whose request has not arrived whole within
:data:`REQUEST_TIMEOUT_SECONDS`, caps requests and live-reload streams separately
(:mod:`generator.serve.limits`), and sends the site's security headers on every
response, the HTTP layer's own errors included.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress
import json
import logging
import posixpath
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from generator.errors import BuildError, Diagnostic, MoreErrors
from generator.hostheaders import ANY_ORIGIN, CSP, page_headers
from generator.serve.limits import STREAM_CHECK_SECONDS, LimitedHandlerMixin, LimitedHTTPServer, peer_gone

log = logging.getLogger(__name__)

# Sent with every response, error responses of the HTTP layer (400, 414, 431, 501) included: the
# policy the pages are built for (generator.hostheaders), so a mistake in a theme shows up while
# writing; a lab's embed page gets the headers that let it be framed, as a static host sends them.
SECURITY_HEADERS = (("Cache-Control", "no-store"),) + page_headers("index.html")
REQUEST_TIMEOUT_SECONDS = 10  # a request (line and headers) must arrive whole within this long
MAX_CONNECTIONS = 64  # request slots (each a thread); see generator.serve.limits
MAX_STREAMS = 64  # live-reload streams open at once, on top of the request slots
PREFIX = "/__labs__/"
EVENTS_PATH = PREFIX + "events"
RELOAD_PATH = PREFIX + "reload.js"
# An idle event stream sends a comment this often, so proxies and browsers keep it open.
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


@functools.cache
def reload_script() -> bytes:
    """The live-reload client: a classic script (the site's CSP allows same-origin scripts only)
    that draws the overlay with DOM APIs and CSSOM assignments, no inline scripts or styles."""
    return (Path(__file__).parent / "reload.js").read_bytes()


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
        self.frame_ancestors: tuple[str, ...] = ANY_ORIGIN  # who may frame an embed page (site.yaml)

    def publish(self, files: dict[str, bytes] | None, errors: Iterable[dict] = (),
                changed: Iterable[str] | None = None, frame_ancestors: tuple[str, ...] | None = None) -> None:
        """Serve ``files`` (None: keep the last good ones) with ``errors`` shown on every page.
        ``changed`` names the files that differ from the last ones (None: maybe all);
        ``frame_ancestors``, the site's who-may-frame-an-embed-page (None: as before)."""
        with self.cond:
            if frame_ancestors is not None:
                self.frame_ancestors = frame_ancestors
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


class _Handler(LimitedHandlerMixin, BaseHTTPRequestHandler):
    server: LiveHTTPServer
    server_version = "labs-serve"
    sys_version = ""
    # HTTP/0.9 answers have no status line and no headers, so not even an error would carry the
    # security headers: a request line that cannot be read is answered as HTTP/1.0.
    default_request_version = "HTTP/1.0"

    page = ""  # the site's file this response sends (an embed page has headers of its own)

    def end_headers(self) -> None:
        """Every response carries the security headers, the HTTP layer's own errors included."""
        self.send_header("Cache-Control", "no-store")
        for name, value in page_headers(self.page, self.server.live.frame_ancestors):
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
        self.page = ""  # a connection serves one request after another
        try:
            if not self._host_allowed():
                return self._send(400, TEXT, b"bad request: unexpected Host header\n", body)
            path, _, query = self.path.partition("?")
            if path == RELOAD_PATH:
                return self._send(200, JS, reload_script(), body)
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
            self.page = key
            if key.endswith(".html"):
                data = inject_reload(data, live.etag(key, data))
            self._send(status, content_type(key), data, body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _events(self, query: dict[str, list[str]]) -> None:
        """Server-sent events: one JSON message whenever what this page should show changes."""
        live = self.server.live
        if not self.server.become_stream(self.request):
            self.close_connection = True
            return self._send(503, TEXT, b"too many live-reload streams open\n", True)
        page = query.get("path", ["/"])[0]
        etag = query.get("etag", [""])[0]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"retry: 500\n\n")
        self.wfile.flush()
        seen, last, beat = -1, None, time.monotonic()
        while True:
            news = live.wait(seen, STREAM_CHECK_SECONDS)
            if news is None or peer_gone(self.connection):
                self.close_connection = True
                return
            if news[0] != seen:
                seen, errors = news
                state = {"reload": live.page_etag(page) != etag, "errors": errors}
                if state != last:
                    self.wfile.write(b"data: " + json.dumps(state, sort_keys=True).encode() + b"\n\n")
                    self.wfile.flush()
                    last, beat = state, time.monotonic()
            if time.monotonic() - beat >= HEARTBEAT_SECONDS:
                self.wfile.write(b": ping\n\n")
                self.wfile.flush()
                beat = time.monotonic()


class LiveHTTPServer(LimitedHTTPServer):
    """Serves a :class:`LiveSite` on ``address`` (port 0: a free one), one thread per connection,
    with at most ``max_connections`` request slots and ``max_streams`` live-reload streams
    (:mod:`generator.serve.limits`); a request must arrive whole within ``request_timeout``."""

    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], live: LiveSite, max_connections: int = MAX_CONNECTIONS,
                 request_timeout: float = REQUEST_TIMEOUT_SECONDS, max_streams: int = MAX_STREAMS):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.live = live
        self.loopback_only = is_loopback(address[0])
        super().__init__(address, _Handler, max_connections, max_streams, request_timeout)

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


def _is_ip_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
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
