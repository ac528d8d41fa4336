"""A built page's HTML as an :mod:`xml.etree` tree, read with the standard library's HTML parser.

The pages are the build's own (templates and sanitised Markdown): every element is closed, so a
stack is all the tree needs. Void elements are leaves; text goes where ElementTree keeps it
(``text`` of an element, ``tail`` of its previous sibling). Attribute values are unescaped."""

from __future__ import annotations

from html.parser import HTMLParser
from xml.etree.ElementTree import Element, SubElement

VOID = frozenset("area base br col embed hr img input link meta source track wbr".split())


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("root")
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = SubElement(self.stack[-1], tag, {name: value or "" for name, value in attrs})
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        SubElement(self.stack[-1], tag, {name: value or "" for name, value in attrs})

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        parent = self.stack[-1]
        if len(parent):
            parent[-1].tail = (parent[-1].tail or "") + data
        else:
            parent.text = (parent.text or "") + data


def parse(html: str) -> Element:
    """The elements of ``html`` under one ``root`` element."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root


def classes(element: Element) -> set[str]:
    return set(element.get("class", "").split())


def find_all(root: Element, test) -> list[Element]:
    """Every element below ``root`` (document order) for which ``test(element)`` is true."""
    return [e for e in root.iter() if e is not root and test(e)]


def text_of(element: Element) -> str:
    """Its text, whitespace folded."""
    return " ".join("".join(element.itertext()).split())
