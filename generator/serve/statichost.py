"""A built site served from its folder the way a static host serves it: files as they are, and
the site's ``404.html`` (with status 404) for a path it does not have. The browser tests and the
Lighthouse benchmark serve the output of ``labs build`` with it; ``labs serve`` serves from
memory instead (:mod:`generator.serve.server`)."""

from __future__ import annotations

import http.server
import sys
from pathlib import Path


class StaticHostHandler(http.server.SimpleHTTPRequestHandler):
    """``SimpleHTTPRequestHandler`` (pass ``directory=``), silent, with the site's 404 page."""

    def send_error(self, code, message=None, explain=None):
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):
        pass


class StaticHostServer(http.server.ThreadingHTTPServer):
    """A threading HTTP server for :class:`StaticHostHandler` that, like a host, takes a client that
    went away (a browser cancelling a request it no longer needs) as nothing to report: the
    standard server prints each one's traceback on stderr, from whichever thread, whenever."""

    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)
