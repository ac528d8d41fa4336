"""``labs export scorm``: each lab as a SCORM 1.2 package of one SCO (docs/lms.md).

A package (``<slug>.zip``) is the lab's page as the site has it, at the same path
(``labs/<slug>/index.html``, so every relative address in it holds), with everything it can
load: the files beside it and every file of the site that a file of the package names, followed
from file to file (the theme's assets, the kind's bundle and shared files, the in-page model when
the lab offers it). Its ``imsmanifest.xml`` (IMS CP 1.1.2 with ADL's SCORM 1.2 extension) makes
the page one SCO. The page gets one more script, ``lms/scorm.js``, which reports the quiz's score
and status through the LMS's SCORM API when there is one.

Links from the page to pages the package does not hold (the site's other labs, topics and
index) lead to the published site when it has a ``base_url``; without one they stay as they
are, and the export says so.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from pathlib import Path
from xml.etree.ElementTree import Element, SubElement, tostring

IMSCP = "http://www.imsproject.org/xsd/imscp_rootv1p1p2"
ADLCP = "http://www.adlnet.org/xsd/adlcp_rootv1p2"
XSI = "http://www.w3.org/2001/XMLSchema-instance"
SCHEMAS = (f"{IMSCP} imscp_rootv1p1p2.xsd http://www.imsglobal.org/xsd/imsmd_rootv1p2p1 imsmd_rootv1p2p1.xsd "
           f"{ADLCP} adlcp_rootv1p2.xsd")
ADAPTER = "lms/scorm.js"
ADAPTER_SOURCE = Path(__file__).resolve().parent / "static" / "scorm.js"
TEXT = (".html", ".js", ".css", ".json", ".svg", ".txt")
# A name of a file in a text: a path of letters, digits and ./_- ending in an extension. It is
# found from its extension backwards: the model's data shards (tens of MB of base64, no dot) then
# cost one search for a dot, where a pattern tried at every letter cost 0.3 s a megabyte.
_EXTENSION = re.compile(r"\.(?:js|css|json|svg|png|jpe?g|gif|webp|woff2?|txt|bin|wasm)\b")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./")
_STEM_END = _NAME_CHARS - {".", "/"}
_LONGEST_NAME = 1024  # no file of a site has a longer path


def named(text: str) -> set[str]:
    """The file names ``text`` holds: each extension with the run of name characters before it."""
    names = set()
    for m in _EXTENSION.finditer(text):
        end = start = m.start()
        if not end or text[end - 1] not in _STEM_END:
            continue
        while start and end - start < _LONGEST_NAME and text[start - 1] in _NAME_CHARS:
            start -= 1
        names.add(text[start:m.end()])
    return names
_HREF = re.compile(r'(\shref=")([^"#?:]*)([#?][^"]*)?"')


def reachable(site: Mapping[str, bytes], page: str, start: list[str],
              names: dict[str, set[str]] | None = None) -> set[str]:
    """``start`` and every file of ``site`` that a text file among them names, followed: a name
    counts when it resolves to a file of the site from the naming file's folder, from the page's
    (scripts name files relative to the page that runs them), or from the site's root. ``names``
    keeps each file's names between calls (the labs of a site share their runtime's files)."""
    names = {} if names is None else names
    seen, todo = set(start), list(start)
    page_dir = posixpath.dirname(page)
    while todo:
        path = todo.pop()
        if not path.endswith(TEXT):
            continue
        if path not in names:
            names[path] = named(site[path].decode("utf-8", "replace"))
        here = posixpath.dirname(path)
        for name in names[path]:
            for base in (here, page_dir, ""):
                target = posixpath.normpath(posixpath.join(base, name))
                if target in site and target not in seen:
                    seen.add(target)
                    todo.append(target)
    return seen


def packaged_page(html: str, page: str, inside: set[str], base_url: str) -> tuple[str, list[str]]:
    """The page with the adapter's script added and its links out of the package pointed at the
    published site (``base_url``; "": left as they are). Returns (html, links left pointing nowhere)."""
    folder = posixpath.dirname(page)
    left: list[str] = []

    def rewrite(m: re.Match) -> str:
        href, rest = m.group(2), m.group(3) or ""
        if not href or href.startswith("/"):
            return m.group(0)
        target = posixpath.normpath(posixpath.join(folder, href))
        if target == ".":
            target = ""
        file = target if not href.endswith("/") and target else (target + "/" if target else "") + "index.html"
        if file in inside or target in inside:
            return m.group(0)
        if not base_url:
            left.append(href)
            return m.group(0)
        url = base_url + (target + "/" if href.endswith("/") and target else target)
        return f'{m.group(1)}{url}{rest}"'

    html = _HREF.sub(rewrite, html)
    script = f'<script src="{posixpath.relpath(ADAPTER, folder)}" defer></script>\n</head>'
    return html.replace("</head>", script, 1), left


def manifest(slug: str, title: str, page: str, files: list[str]) -> bytes:
    root = Element("manifest", {"identifier": f"attention-labs-{slug}", "version": "1.0", "xmlns": IMSCP,
                                "xmlns:adlcp": ADLCP, "xmlns:xsi": XSI, "xsi:schemaLocation": SCHEMAS})
    metadata = SubElement(root, "metadata")
    SubElement(metadata, "schema").text = "ADL SCORM"
    SubElement(metadata, "schemaversion").text = "1.2"
    organizations = SubElement(root, "organizations", {"default": "organization"})
    organization = SubElement(organizations, "organization", {"identifier": "organization"})
    SubElement(organization, "title").text = title
    item = SubElement(organization, "item", {"identifier": "item", "identifierref": "sco", "isvisible": "true"})
    SubElement(item, "title").text = title
    resources = SubElement(root, "resources")
    resource = SubElement(resources, "resource", {"identifier": "sco", "type": "webcontent",
                                                       "adlcp:scormtype": "sco", "href": page})
    for path in files:
        SubElement(resource, "file", {"href": path})
    return tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def package(site: Mapping[str, bytes], slug: str, title: str, base_url: str,
            names: dict[str, set[str]] | None = None) -> tuple[dict[str, bytes], list[str]]:
    """The files of one lab's SCORM package, by path, and the links of its page that lead nowhere.
    ``names``: as for :func:`reachable`, shared by the packages of one site."""
    page = f"labs/{slug}/index.html"
    own = [p for p in site if p.startswith(f"labs/{slug}/") and not p.endswith("/embed.html")]
    inside = reachable(site, page, own, names)
    files = {path: site[path] for path in inside}
    html, left = packaged_page(site[page].decode("utf-8"), page, inside, base_url)
    files[page] = html.encode("utf-8")
    files[ADAPTER] = ADAPTER_SOURCE.read_bytes()
    files["imsmanifest.xml"] = manifest(slug, title, page, sorted(files))
    return files, left
