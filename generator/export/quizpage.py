"""A lab's quiz as its built page shows it, read through the contract every kind keeps there
(theme/templates/partials/quiz.html, docs/architecture.md):

- ``fieldset.quiz-q#quiz-<id>`` with ``data-type`` and ``data-match="any"`` when one right
  answer is enough; its ``legend`` is the prompt (``.quiz-num`` before it);
- a built-in question's options: ``li.quiz-option > label > input[value]``, ``data-correct`` on
  the right ones; a kind's own: elements with ``data-option`` inside ``.quiz-choices``, the right
  ones ``data-correct`` (anything else in there, such as the attention kind's query word, is not a
  choice);
- ``.quiz-why[data-why-for=<option>]``: what is said of an option once picked (a kind's starts with
  the option in ``.quiz-why-word``);
- ``details.quiz-answer .quiz-explanation``: what is said once answered, right or wrong;
- anything else in the fieldset is the question's context, shown between the prompt and the
  choices (the text a tokens question asks about).

So a kind added later exports as its questions look on the page, with nothing written for it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from xml.etree.ElementTree import Element

from generator.export.htmltree import classes, find_all, parse


@dataclass(frozen=True)
class PageChoice:
    id: str  # the option's id on the page (data-option, or the input's value)
    correct: bool
    content: Element  # an element whose children and text are the choice as shown
    why: Element | None  # what is said of it once picked


@dataclass(frozen=True)
class PageQuestion:
    id: str
    type: str
    multiple: bool  # the learner ticks several (checkboxes); else picks one
    match_any: bool  # one right choice is enough (of several right ones)
    prompt: Element
    context: tuple[Element, ...]
    choices: tuple[PageChoice, ...]
    explanation: Element | None


def _without(element: Element, test: Callable[[Element], bool]) -> Element:
    """A copy of ``element`` without the descendants ``test`` picks (their tails stay)."""
    out = copy.deepcopy(element)
    for parent in list(out.iter()):
        for child in list(parent):
            if test(child):
                index = list(parent).index(child)
                if child.tail:
                    if index:
                        parent[index - 1].tail = (parent[index - 1].tail or "") + child.tail
                    else:
                        parent.text = (parent.text or "") + child.tail
                parent.remove(child)
    return out


def _has(name: str) -> Callable[[Element], bool]:
    return lambda e: name in classes(e)


def questions_of(html: str) -> list[PageQuestion]:
    """The quiz questions of a built lab page, in the page's order (none: no quiz)."""
    root = parse(html)
    return [_question(q) for q in find_all(root, lambda e: e.tag == "fieldset" and "quiz-q" in classes(e))]


def _question(fieldset: Element) -> PageQuestion:
    legend = next(child for child in fieldset if child.tag == "legend")
    prompt = _without(legend, _has("quiz-num"))
    prompt.text = (prompt.text or "").lstrip()  # the space after the number
    whys = {e.get("data-why-for"): _without(e, lambda x: bool(classes(x) & {"quiz-why-word", "quiz-verdict"}))
            for e in find_all(fieldset, lambda e: "quiz-why" in classes(e) and e.get("data-why-for") is not None)}
    boxes = find_all(fieldset, _has("quiz-choices"))
    choices: list[PageChoice] = []
    if boxes:
        for e in find_all(boxes[0], lambda e: e.get("data-option") is not None):
            option = e.get("data-option", "")
            choices.append(PageChoice(option, "data-correct" in e.attrib, _without(e, _has("visually-hidden")),
                                      whys.get(option)))
    else:
        for li in find_all(fieldset, _has("quiz-option")):
            field = next(e for e in li.iter("input"))
            label = next(li.iter("label"))
            option = field.get("value", "")
            choices.append(PageChoice(option, "data-correct" in field.attrib, _without(label, lambda e: e.tag == "input"),
                                      whys.get(option)))
    holders = {id(e) for box in boxes for e in _ancestors_within(fieldset, box)}
    skip = {"quiz-options", "quiz-whys", "quiz-feedback", "quiz-answer", "quiz-actions"}
    context = tuple(copy.deepcopy(child) for child in fieldset
                    if child.tag != "legend" and id(child) not in holders and not classes(child) & skip)
    explanations = [e for e in find_all(fieldset, _has("quiz-explanation"))]
    return PageQuestion(
        id=fieldset.get("id", "")[len("quiz-"):], type=fieldset.get("data-type", ""),
        multiple=fieldset.get("data-type") == "multiple", match_any=fieldset.get("data-match") == "any",
        prompt=prompt, context=context, choices=tuple(choices),
        explanation=copy.deepcopy(explanations[0]) if explanations else None)


def _ancestors_within(top: Element, target: Element) -> list[Element]:
    """``target`` and its ancestors below ``top``."""
    path: list[Element] = []

    def walk(node: Element) -> bool:
        for child in node:
            if child is target or walk(child):
                path.append(child)
                return True
        return False

    walk(top)
    return path
