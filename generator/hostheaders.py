"""The HTTP headers a site's pages are written for, and the files that tell static hosts to send
them: ``_headers`` (Netlify, Cloudflare Pages) and ``.htaccess`` (Apache with mod_headers).

Every page runs under one Content-Security-Policy (classic scripts and styles of the site only, a
Worker from ``blob:`` for lab 07's in-page model). A full page may not be framed
(``frame-ancestors 'none'``, ``X-Frame-Options: DENY``); a lab's embed page
(``labs/<slug>/embed.html``) may, by the origins ``site.yaml``'s ``embed: frame_ancestors`` lists
(default ``*``: any), and carries no X-Frame-Options, which cannot name a list. ``labs serve``
sends the same headers (:mod:`generator.serve.httpd`).

The ``_headers`` rules name each page's own paths, so no two rules ever match one request: hosts
differ in how they combine the headers of overlapping rules (Cloudflare Pages joins them, and
two policies are both enforced), and this way none has to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from generator.source import Reader

BASE_POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'; "
               "worker-src 'self' blob:")  # blob: the in-page model's Worker (docs/runtime.md)
CSP = BASE_POLICY.replace("; worker-src", "; frame-ancestors 'none'; worker-src")
ANY_ORIGIN = ("*",)
EMBED_NAME = "embed.html"
# What may stand in frame-ancestors: *, 'self', 'none', or an origin (a scheme and a host, a
# leading "*." allowed, an optional port), nothing that could end the policy or start another.
ANCESTOR_RE = re.compile(r"^(\*|'self'|'none'|https?://(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:(\d{1,5}|\*))?)$")

COMMON = (("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"))


def embed_policy(ancestors: Iterable[str]) -> str:
    """The CSP of an embed page framed by ``ancestors``."""
    return CSP.replace("frame-ancestors 'none'", "frame-ancestors " + " ".join(ancestors))


def page_headers(path: str, ancestors: Iterable[str] = ANY_ORIGIN) -> tuple[tuple[str, str], ...]:
    """The security headers of the page at ``path`` (a path of the site: ``labs/x/embed.html``,
    ``labs/x/index.html``, ``labs/x/``, ``404.html``…): an embed page's, or every other page's."""
    if path.rsplit("/", 1)[-1] == EMBED_NAME:
        return (("Content-Security-Policy", embed_policy(ancestors)),) + COMMON
    return (("Content-Security-Policy", CSP), ("X-Frame-Options", "DENY")) + COMMON


def headers_files(pages: Iterable[str], ancestors: Iterable[str] = ANY_ORIGIN) -> dict[str, bytes]:
    """``_headers`` and ``.htaccess`` for a site whose HTML files are ``pages`` (paths in the site)."""
    ancestors = tuple(ancestors)
    say = f"labs/<slug>/{EMBED_NAME} may be framed by: {' '.join(ancestors)}; every other page by none."
    rules = [f"# The headers the pages of this site are written for (Netlify and Cloudflare Pages read\n"
             f"# this file; docs/embedding.md). {say}\n# One rule per page, so no two rules match a request.\n"]
    for path in sorted(pages):
        urls = ["/" + path]
        if path == "index.html" or path.endswith("/index.html"):
            urls.insert(0, "/" + path[:-len("index.html")])
        lines = "".join(f"  {name}: {value}\n" for name, value in page_headers(path, ancestors))
        rules.extend(f"{url}\n{lines}" for url in urls)
    rules.append("/assets/*\n  X-Content-Type-Options: nosniff\n")
    embed = page_headers(EMBED_NAME, ancestors)
    htaccess = (f"# The headers the pages of this site are written for (Apache, mod_headers; docs/embedding.md).\n"
                f"# {say}\n<IfModule mod_headers.c>\n"
                + "".join(f'Header always set {name} "{value}"\n' for name, value in page_headers("index.html"))
                + f'<FilesMatch "^{re.escape(EMBED_NAME)}$">\n'
                + "".join(f'Header always set {name} "{value}"\n' for name, value in embed)
                + "Header always unset X-Frame-Options\n</FilesMatch>\n</IfModule>\n")
    return {"_headers": "\n".join(rules).encode(), ".htaccess": htaccess.encode()}


def frame_ancestors(r: Reader) -> tuple[str, ...]:
    """site.yaml's ``embed: frame_ancestors``: the origins that may frame a lab's embed page
    (default: any). Each is ``*``, ``'self'``, ``'none'`` or an origin such as
    ``https://moodle.example.edu`` or ``https://*.example.edu:8443``."""
    if r.value(("embed",)) is None or r.mapping(("embed",), optional=("frame_ancestors",)) is None:
        return ANY_ORIGIN
    if r.value(("embed", "frame_ancestors")) is None:
        return ANY_ORIGIN
    found: list[str] = []
    for i, _ in enumerate(r.sequence(("embed", "frame_ancestors")) or []):
        source = r.string(("embed", "frame_ancestors", i), multiline=False)
        if source is None:
            continue
        if not ANCESTOR_RE.match(source.lower() if source.startswith("http") else source):
            r.error(("embed", "frame_ancestors", i),
                    f"frame_ancestors entry {source!r} must be *, 'self', 'none' or an origin such as "
                    "https://moodle.example.edu (a scheme and a host, an optional port, no path)")
        elif source not in found:
            found.append(source)
    return tuple(found) or ANY_ORIGIN
