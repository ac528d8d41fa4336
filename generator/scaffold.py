"""``labs new SLUG``: a complete, valid lab to start writing from."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from generator.content import SLUG_RE, lab_folders
from generator.errors import BuildError, ContentError, display_path
from generator.source import load_yaml

LAB_YAML = """\
# {title}: the lab's page is built from this file and the files it names.
number: {number}
title: {title}
subtitle: A first look
tagline: >-
  One or two sentences that make a learner want to click the first word.
topic: {topic}
summary: >-
  What this lab teaches, in a sentence or two. Used for the page's meta description
  and the catalogue.

legend:
  - term: Query
    meaning: what a word looks for
  - term: Key
    meaning: what a word offers

gist:
  kicker: The gist · 20 seconds
  file: gist.md

sections:
  - id: under-the-hood
    kicker: Under the hood
    title: What you just played, written down
    file: under-the-hood.md

cards:
  - icon: "★"
    title: A card
    body: A short aside in **Markdown**.

widget:
  prompt: Click any word to make it the query.
  default: {{sentence: example, head: syntax, query: sat}}
  sentences:
    - id: example
      # Tag content words as word/ROLE; function words (the, on, …) are known already.
      text: The cat/NOUN sat/VERB on the mat/NOUN
      claims:
        syntax:
          - sat -> cat, mat
"""

GIST_MD = """\
Write the idea of the lab in a short paragraph. *Markdown* works, and so does math:
$\\mathrm{{softmax}}(QK^\\top/\\sqrt{{d}})V$.
"""

HOOD_MD = """\
Explain how it works. Fenced code is highlighted:

```python
weights = softmax(q @ k.T / np.sqrt(d))
```

Link to other parts of the page with `#anchors`, for example the [FAQ](#faq).
"""

FAQ_YAML = """\
- question: What is this lab about?
  answer: >-
    Answers are **Markdown**.
"""

QUIZ_YAML = """\
questions:
  - type: single
    prompt: Which option is right?
    options:
      - text: This one
        correct: true
        why: Say why it is right.
      - text: That one
        why: Say why it is wrong.
  - type: word
    prompt: Click the word that **sat** attends to most.
    sentence: example
    query: sat
    answer: cat
"""


def new_lab(content: Path, slug: str, title: str | None = None, topic: str | None = None) -> Path:
    """Create ``content/labs/<slug>/``; raise BuildError if it exists or the slug is not valid."""
    content = Path(content)
    if not SLUG_RE.match(slug):
        raise BuildError(f"lab slug {slug!r} must be lower-case letters, digits and dashes, e.g. 'self-attention'")
    folder = content / "labs" / slug
    if folder.exists():
        raise BuildError("already exists; `labs new` never overwrites", display_path(folder))
    site_yaml = content / "site.yaml"
    try:
        doc = load_yaml(site_yaml)
    except ContentError as exc:
        raise BuildError(f"cannot read the site's topics: {exc.diagnostics[0].message}", display_path(site_yaml)) from None
    topics = [t.get("slug") for t in (doc.data.get("topics") or []) if isinstance(t, dict)] if isinstance(doc.data, dict) else []
    if topic is None:
        if not topics:
            raise BuildError("site.yaml declares no topics; add one or pass --topic", display_path(site_yaml))
        topic = topics[0]
    elif topic not in topics:
        raise BuildError(f"unknown topic {topic!r}; site.yaml declares: {', '.join(map(str, topics))}",
                         display_path(site_yaml))
    numbers = [0]
    for other in lab_folders(content):
        try:
            value = load_yaml(content / "labs" / other / "lab.yaml").data.get("number")
            numbers.append(int(value))
        except (ContentError, AttributeError, TypeError, ValueError):
            continue
    if title is not None and (not title.strip() or "\n" in title or "\r" in title):
        raise BuildError("the title must be one line of text, e.g. --title 'Positional encoding'")
    title = title or slug.replace("-", " ").capitalize()
    files = {
        "lab.yaml": LAB_YAML.format(title=_yaml_text(title), number=max(numbers) + 1, topic=topic),
        "gist.md": GIST_MD.format(),
        "under-the-hood.md": HOOD_MD,
        "faq.yaml": FAQ_YAML,
        "quiz.yaml": QUIZ_YAML,
    }
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _yaml_text(text: str) -> str:
    """``text`` as a YAML value that reads back as exactly ``text``: plain when that is safe,
    else double-quoted (a JSON string is a valid YAML double-quoted scalar)."""
    try:
        node = yaml.compose(f"title: {text}\n", Loader=yaml.SafeLoader)
        value = node.value[0][1] if isinstance(node, yaml.MappingNode) and len(node.value) == 1 else None
        if (isinstance(value, yaml.ScalarNode) and value.style is None and value.value == text
                and value.tag != "tag:yaml.org,2002:null"):
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)
