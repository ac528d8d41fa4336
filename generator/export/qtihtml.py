"""A page's HTML as the content QTI 2.1 allows: the XHTML subset of its ``itemBody`` in the QTI
namespace, and MathML in its own (the QTI 2.1 schema imports MathML 2).

Elements of the subset keep only the attributes QTI gives them (``a href``, ``img src alt``, a
table cell's span and scope: not ``id``, ``class``, ``data-*`` or ARIA, which belong to the
site). Elements outside it are left out and their content kept (a button's word, a ``mark``'s
text), except those whose content means nothing in an item (``input``, ``script``, ``svg``).
A link is kept when it leads to an absolute http(s) address — a link inside the site, when the
site has a ``base_url``, is made one — else its text stays without it; an image likewise, else
its ``alt`` text."""

from __future__ import annotations

import copy
from urllib.parse import urljoin, urlsplit
from xml.etree.ElementTree import Element, SubElement

QTI = "http://www.imsglobal.org/xsd/imsqti_v2p1"
MATHML = "http://www.w3.org/1998/Math/MathML"

INLINE = frozenset("a abbr acronym b big br cite code dfn em i img kbd q samp small span strong sub sup tt var".split())
BLOCK = frozenset("address blockquote caption col colgroup dd div dl dt h1 h2 h3 h4 h5 h6 hr li ol p pre "
                  "table tbody td tfoot th thead tr ul".split())
ATTRIBUTES = {
    "a": ("href",), "img": ("src", "alt", "width", "height"), "col": ("span",), "colgroup": ("span",),
    "td": ("colspan", "rowspan", "scope", "headers", "abbr"), "th": ("colspan", "rowspan", "scope", "headers", "abbr"),
}
DROPPED = frozenset("input select textarea script style template svg canvas noscript iframe object".split())


def qname(tag: str) -> str:
    """A QTI element's name as the tree holds it: the documents declare QTI's namespace as the
    default one on their root (an ``xmlns`` attribute), so their elements are written bare."""
    return tag


def is_block(element: Element) -> bool:
    """Whether a converted element is a block (then it may not stand where only inline content may)."""
    return element.tag in BLOCK or (element.tag == "math" and element.get("display") == "block")


class Converter:
    """Converts HTML elements (from :mod:`generator.export.htmltree`) of one page at ``page_url``
    (absolute, or "" when the site has no ``base_url``)."""

    def __init__(self, page_url: str):
        self.page_url = page_url

    def into(self, parent: Element, source: Element) -> Element:
        """Append ``source``'s content (its text and children, converted) to ``parent``; ``parent``."""
        self._text(parent, source.text)
        for child in source:
            self._element(parent, child)
            self._text(parent, child.tail)
        return parent

    def _text(self, parent: Element, text: str | None) -> None:
        if not text:
            return
        if len(parent):
            parent[-1].tail = (parent[-1].tail or "") + text
        else:
            parent.text = (parent.text or "") + text

    def _absolute(self, url: str) -> str | None:
        target = urljoin(self.page_url, url) if self.page_url else url
        return target if urlsplit(target).scheme in ("http", "https") else None

    def _element(self, parent: Element, source: Element) -> None:
        tag = source.tag
        if tag in DROPPED or "visually-hidden" in source.get("class", "").split():
            return
        if tag == "math":
            parent.append(_mathml(source))
            return
        if tag == "a":
            href = self._absolute(source.get("href", ""))
            if href is None:
                self.into(parent, source)
                return
            self.into(SubElement(parent, qname("a"), {"href": href}), source)
            return
        if tag == "img":
            src = self._absolute(source.get("src", ""))
            if src is None:
                self._text(parent, source.get("alt", ""))
                return
            attrs = {k: source.get(k) for k in ATTRIBUTES["img"] if source.get(k) is not None}
            SubElement(parent, qname("img"), {**attrs, "src": src, "alt": source.get("alt", "")})
            return
        if tag in INLINE or tag in BLOCK:
            attrs = {k: source.get(k) for k in ATTRIBUTES.get(tag, ()) if source.get(k) is not None}
            self.into(SubElement(parent, qname(tag), attrs), source)
            return
        self.into(parent, source)  # not in QTI's XHTML: its content, without it


def _mathml(source: Element) -> Element:
    """A MathML element and its descendants, in MathML's namespace (declared on the ``math``)."""
    out = copy.deepcopy(source)
    out.set("xmlns", MATHML)
    return out


def blocks_of(converted: Element) -> list[Element]:
    """``converted``'s content as blocks: itself when it holds blocks only, else one ``div`` of it."""
    if not (converted.text or "").strip() and all(is_block(e) and not (e.tail or "").strip() for e in converted):
        return list(converted)
    div = Element(qname("div"))
    div.text, div[:] = converted.text, list(converted)
    return [div]
