"""The allow-lists every HTML fragment an author wrote passes through before it reaches a page
(nh3, the Rust ammonia sanitiser): Markdown's HTML with the MathML made from its TeX, and the
MathML alone.

Scripts, event-handler attributes, ``style`` attributes, iframes, forms and unknown tags are
removed; links keep only the schemes below (our ``lab:``, ``topic:`` and ``index:`` among them,
rewritten after) and get ``rel="noopener noreferrer"``.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import nh3

HTML_TAGS = set(nh3.ALLOWED_TAGS) - {"map", "area", "center", "strike", "tt", "acronym"}
HTML_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
    "ol": {"start"},
    "details": {"open"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "div": {"class"},
    "h2": {"id"},
    "h3": {"id"},
    "h4": {"id"},
    "h5": {"id"},
    "h6": {"id"},
}
URL_SCHEMES = {"http", "https", "mailto", "lab", "topic", "index"}


def sanitiser(**policy) -> Callable[[str], str]:
    """``nh3.clean`` with ``policy``, made once: nh3.clean converts its allow-lists on every call,
    most of what cleaning a short answer costs. Versions of nh3 without a reusable Cleaner get clean()."""
    if hasattr(nh3, "Cleaner"):
        return nh3.Cleaner(**policy).clean
    return partial(nh3.clean, **policy)


MATHML_TAGS = {
    "math", "mi", "mo", "mn", "ms", "mtext", "mrow", "mfrac", "msqrt", "mroot", "msub", "msup", "msubsup",
    "munder", "mover", "munderover", "mtable", "mtr", "mtd", "mspace", "mpadded", "mphantom", "menclose",
    "mstyle", "semantics", "annotation",
}
MATHML_ATTRIBUTES = {
    "math": {"display"},
    "*": {"mathvariant", "stretchy", "fence", "separator", "accent", "accentunder", "lspace", "rspace", "width",
          "height", "depth", "columnalign", "rowspacing", "columnspacing", "notation", "minsize", "maxsize",
          "movablelimits", "displaystyle", "scriptlevel", "linethickness", "form"},
}
clean_mathml = sanitiser(tags=MATHML_TAGS, attributes=MATHML_ATTRIBUTES)  # what latex2mathml writes


# Markdown's HTML with the MathML made from its TeX put in: both allow-lists at once.
ALL_ATTRIBUTES = {**HTML_ATTRIBUTES, **{tag: set(MATHML_ATTRIBUTES["*"]) | MATHML_ATTRIBUTES.get(tag, set())
                                        for tag in MATHML_TAGS}}
clean_html = sanitiser(tags=HTML_TAGS | MATHML_TAGS, attributes=ALL_ATTRIBUTES, url_schemes=URL_SCHEMES,
                       link_rel="noopener noreferrer")
