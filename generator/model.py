"""The content model: typed, immutable objects that everything after loading works from.

``content.py`` builds these from YAML and Markdown; ``render.py`` and the templates only read
them. Markdown fields are stored already rendered (``*_html``, sanitised) next to a plain-text
form (``*_text``) used for meta descriptions, JSON-LD and the screen-reader announcements.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.pickling import pickled_as_call


# Everything the pages keep in a learner's browser lives under this localStorage namespace.
STORAGE_NAMESPACE = "attention-labs"
PROGRESS_STORAGE_KEY = f"{STORAGE_NAMESPACE}:v1"  # {"done": [lab slugs]}


def quiz_storage_key(lab_slug: str, quiz_digest: str) -> str:
    """A quiz's answers: versioned by its content, so an edited quiz starts afresh."""
    return f"{STORAGE_NAMESPACE}:quiz:{lab_slug}:{quiz_digest}"


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Topic:
    slug: str
    title: str
    blurb: str


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Site:
    title: str
    description: str
    base_url: str  # absolute, ends with "/", or "" when unknown (then no canonical/sitemap URLs)
    language: str
    topics: tuple[Topic, ...]
    lab_order: tuple[str, ...]
    # Who may frame a lab's embed page (labs/<slug>/embed.html): CSP frame-ancestors sources;
    # "*" is any origin. Full pages are never framed (generator.hostheaders).
    frame_ancestors: tuple[str, ...] = ("*",)


@pickled_as_call
@dataclass(frozen=True, slots=True)
class LegendItem:
    term: str
    meaning: str


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Card:
    title: str
    icon: str  # a short symbol shown before the title, e.g. "⚠"; may be ""
    body_html: str


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Section:
    """A prose section of a lab, from one Markdown file."""

    id: str  # anchor on the page
    kicker: str  # small heading above the title, e.g. "Under the hood"
    title: str
    html: str
    source: str  # author-facing path of the Markdown file


@pickled_as_call
@dataclass(frozen=True, slots=True)
class FaqItem:
    id: str
    question: str
    answer_html: str
    answer_text: str


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Option:
    id: str
    html: str
    text: str
    correct: bool
    why_html: str


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Question:
    """One quiz question. ``type`` is its type as quiz.yaml writes it: "single", "multiple" or one
    of the lab kind's own question types (e.g. the attention kind's "word": click a word of a
    sentence), whose options are read by the lab kind and whose ``data`` only that kind understands."""

    id: str
    type: str
    prompt_html: str
    prompt_text: str
    options: tuple[Option, ...]
    explanation_html: str  # shown once answered, right or wrong
    data: Any = None  # a lab kind's question type only: what the kind read
    match: str = "all"  # "all": pick exactly the correct options; "any": one correct option is enough


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Quiz:
    questions: tuple[Question, ...]
    storage_key: str  # localStorage key, versioned by a hash of the quiz content
    warnings: tuple[str, ...] = ()  # positioned notes for the author (generator.quizorder), never fatal


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Lab:
    slug: str
    number: int
    title: str
    subtitle: str
    tagline: str
    topic: str
    summary: str
    legend: tuple[LegendItem, ...]
    gist: Section
    sections: tuple[Section, ...]  # "under the hood" and any further prose, in order
    cards: tuple[Card, ...]
    faq: tuple[FaqItem, ...]
    quiz: Quiz
    kind: str  # the lab kind's name (see generator.kinds)
    spec: Any  # what the lab kind read from its keys of lab.yaml
    source_dir: Path = field(compare=False)
    number_at: tuple[str, int, int] = field(default=("", 1, 1), compare=False)  # where `number:` is written

    @property
    def label(self) -> str:
        return f"{self.number:02d}"


@pickled_as_call
@dataclass(frozen=True, slots=True)
class Content:
    site: Site
    labs: tuple[Lab, ...]  # in the site's lab order
    root: Path = field(compare=False)

    def topic(self, slug: str) -> Topic:
        return next(t for t in self.site.topics if t.slug == slug)

    def labs_in(self, topic_slug: str) -> tuple[Lab, ...]:
        return tuple(lab for lab in self.labs if lab.topic == topic_slug)
