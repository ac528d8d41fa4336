"""faq.yaml, read: a lab's frequently asked questions → :class:`~generator.model.FaqItem` records.

Layout::

    - question: Why divide by √d?          # one line
      answer: Because the dot products grow…  # inline Markdown (math, links, code)
      id: why-sqrt                         # optional; default: faq-<slug of the question>

The loader (:mod:`generator.content`) opens the file and hands its Reader here, with the
function that renders an answer's Markdown and checks its links.
"""

from __future__ import annotations

from collections.abc import Callable

from generator.model import FaqItem
from generator.prose.markdown_render import RenderedMarkdown
from generator.prose.slug import SLUG_RE, slugify
from generator.source import Reader

# (reader, where, *, required=True) -> the rendered inline Markdown at ``where``, or None after
# reporting its mistakes there: the loader's, with the lab's link targets.
InlineMarkdown = Callable[..., RenderedMarkdown | None]


def read_faq(r: Reader, markdown: InlineMarkdown, lost: set[str]) -> tuple[FaqItem, ...]:
    """The items of faq.yaml (a list of ``{question, answer, id?}``) read through ``r``, every
    mistake reported there; an item with a mistake is left out and its id added to ``lost`` (a
    link to it is not reported as broken: the mistake is the news). ``markdown(r, where)``
    renders the inline Markdown of an answer."""
    items, ids = [], set()
    for i, _ in enumerate(r.sequence(()) or []):
        before = len(r.diags.items)
        if r.mapping((i,), required=("question", "answer"), optional=("id",)) is None:
            continue
        question = r.string((i, "question"), multiline=False)
        answer = markdown(r, (i, "answer"))
        given = r.string((i, "id"), required=False, multiline=False)
        item_id = given or (f"faq-{slugify(question)}" if question else "")
        if given and not SLUG_RE.match(given):
            r.error((i, "id"), f"FAQ id {given!r} must be lower-case letters, digits and dashes")
        elif given and given in ids:
            r.error((i, "id"), f"duplicate FAQ id {given!r}")
        elif item_id in ids:
            r.error((i, "question"), f"duplicate FAQ id {item_id!r}; give one of them an 'id'")
        if question and answer and len(r.diags.items) == before:  # (an item with a mistake: left out)
            ids.add(item_id)
            items.append(FaqItem(item_id, question, answer.html, answer.text))
        elif item_id:
            lost.add(item_id)
    return tuple(items)
