"""``labs new SLUG`` (a complete, valid lab of any kind to start writing from) and ``labs init DIR``
(a new site with one example lab of each built-in kind)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml

from generator.content import SLUG_RE, lab_folders, load_lab, load_site
from generator.errors import BuildError, ContentError, SiteError, display_path
from generator.kinds import all_kinds, get_kind, kind_names
from generator.source import load_yaml

DEFAULT_KIND = "attention"  # what `labs new` makes when no --kind is given (if installed)

LAB_YAML = """\
# {title}: the lab's page is built from this file and the files it names.
kind: {kind}
number: {number}
title: {title}
subtitle: A first look
tagline: >-
  One or two sentences that make a learner want to try the widget.
topic: {topic}
summary: >-
  What this lab teaches, in a sentence or two. Used for the page's meta description
  and the catalogue.

gist:
  kicker: In short
  file: gist.md

sections:
  - id: under-the-hood
    kicker: How it works
    title: Step by step
    file: under-the-hood.md

cards:
  - icon: "★"
    title: A card
    body: A short aside in **Markdown**.

# Below: the legend (common to every lab, optional), then the keys of labs of kind '{kind}'.
"""

GIST_MD = """\
Write the idea of the lab in a short paragraph. *Markdown* works, and so does math:
$\\frac{{a}}{{b}}$ inline, or a display formula between double dollar signs.
"""

HOOD_MD = """\
Explain how it works. Fenced code is highlighted:

```python
import numpy as np
print(np.round(np.exp([1.0, 2.0]), 2))
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
"""

SITE_YAML = """\
# Site-wide settings. Every lab lives in content/labs/<slug>/ (`labs new SLUG --kind KIND`).
title: {title}
description: >-
  Interactive labs that open up machine-learning models.
# base_url: https://example.org/labs/   # where the site will be published (canonical links, sitemap)
language: en

topics:
  - slug: basics
    title: Basics
    blurb: >-
      The first labs of this site.

# The order labs appear in. Lab folders not listed here follow, alphabetically.
labs: []
"""

THEME_README = """\
Files here override the default theme of attention-labs file by file, at the same path:
templates/lab.html, static/css/10-base.css, kinds/<kind>/widget.html, … A new file adds to it
(static/css/50-mine.css joins the site's stylesheet). Empty: the default theme as it is.
"""

GITIGNORE = "site/\n.labs-cache/\n"

# GitHub Pages from the site's own repository. The generator is installed from what the author
# names (it is not on PyPI, and only they know the commit they tested); Pages says the address the
# site will live at, for canonical links and the sitemap; `labs models fetch` brings the models the
# labs name (from PyPI, SHA-256 checked) before the build reads them.
PAGES_WORKFLOW = """\
# Build the site from content/ and publish site/ to GitHub Pages on every push to main
# (set the repository's Pages source to "GitHub Actions").
name: Publish site
on:
  push:
    branches: [main]
  workflow_dispatch:

permissions:
  contents: read
  pages: write
  id-token: write

concurrency:
  group: pages
  cancel-in-progress: true

jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - id: pages
        uses: actions/configure-pages@v5
      - run: {install}
      - run: labs models fetch
      - run: labs build --base-url "${{{{ steps.pages.outputs.base_url }}}}/"
      - uses: actions/upload-pages-artifact@v3
        with:
          path: site
  deploy:
    needs: build
    runs-on: ubuntu-latest
    environment:
      name: github-pages
      url: ${{{{ steps.deployment.outputs.page_url }}}}
    steps:
      - id: deployment
        uses: actions/deploy-pages@v4
"""
PAGES_WORKFLOW_PATH = ".github/workflows/pages.yml"


def new_lab(content: Path, slug: str, title: str | None = None, topic: str | None = None,
            kind: str | None = None) -> Path:
    """Create ``content/labs/<slug>/`` as a lab of ``kind``; raise BuildError if it exists, the
    slug is not valid, or ``content`` is not a site."""
    content = Path(content)
    if not SLUG_RE.match(slug):
        raise BuildError(f"lab slug {slug!r} must be lower-case letters, digits and dashes, e.g. 'self-attention'")
    site_yaml = content / "site.yaml"
    if not site_yaml.is_file():
        raise BuildError(f"no site here: {display_path(site_yaml)} not found. Run `labs init DIR` to start a site, "
                         "then `labs new` inside it (or pass --content DIR)")
    kinds = kind_names()
    kind = kind or (DEFAULT_KIND if DEFAULT_KIND in kinds else (kinds[0] if kinds else None))
    if kind not in kinds:
        raise BuildError(f"unknown lab kind {kind!r}; the installed kinds are: {', '.join(kinds) or 'none'}")
    folder = content / "labs" / slug
    if folder.exists():
        raise BuildError("already exists; `labs new` never overwrites", display_path(folder))
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
    own = dict(get_kind(kind).scaffold(slug, title))
    files = {
        "lab.yaml": LAB_YAML.format(title=_yaml_text(title), number=max(numbers) + 1, topic=topic, kind=kind)
        + own.pop("lab.yaml", ""),
        "gist.md": GIST_MD.format(),
        "under-the-hood.md": HOOD_MD,
        "faq.yaml": FAQ_YAML,
        "quiz.yaml": QUIZ_YAML + own.pop("questions", ""),
    }
    for name, text in own.items():
        if name in files or "/" in name or name.startswith("."):
            raise BuildError(f"lab kind {kind!r} scaffolds a file named {name!r}, which it may not")
        files[name] = text
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    _spread_right_answers(content, slug)
    return folder


def _spread_right_answers(content: Path, slug: str) -> None:
    """A new lab's quiz builds without the warning that every right answer shows in one place:
    the order of a question's options is drawn from the slug and the question's id, so for some
    slugs the first question's right option falls where the kind's questions put theirs; then the
    first question gets the first id of a few that puts it elsewhere. Left as written when the
    site does not load (the build then says why)."""
    quiz = content / "labs" / slug / "quiz.yaml"
    written = quiz.read_text(encoding="utf-8")
    for n in range(1, 9):
        try:
            lab, _ = load_lab(load_site(content), slug)
        except SiteError:
            return
        if lab is None or not lab.quiz.warnings:
            return
        quiz.write_text(written.replace("  - type: single\n", f"  - id: first-question-{n}\n    type: single\n", 1),
                        encoding="utf-8")


def init_site(directory: Path, title: str | None = None, pages_install: str | None = None) -> list[str]:
    """Write a new site into ``directory`` (new or empty): ``content/site.yaml`` with one topic,
    one example lab of each built-in kind (a kind that ships inside this package), a ``theme/``
    folder for overrides and a ``.gitignore``; with ``pages_install`` (what pip installs the
    generator from), a GitHub Pages workflow too. Returns the labs' slugs."""
    directory = Path(directory)
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise BuildError("already exists and is not an empty folder; `labs init` never overwrites",
                         display_path(directory))
    if title is not None and (not title.strip() or "\n" in title or "\r" in title):
        raise BuildError("the title must be one line of text, e.g. --title 'My ML labs'")
    workflow = pages_workflow(pages_install) if pages_install is not None else None
    name = directory.resolve().name
    title = title or (name.replace("-", " ").replace("_", " ").strip().capitalize() or "Labs")
    builtin = [k.name for k in all_kinds() if type(k).__module__.startswith("generator.")]
    content = directory / "content"
    (content / "labs").mkdir(parents=True)
    (content / "site.yaml").write_text(SITE_YAML.format(title=_yaml_text(title)), encoding="utf-8")
    (directory / "theme").mkdir()
    (directory / "theme" / "README.txt").write_text(THEME_README, encoding="utf-8")
    (directory / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    slugs = []
    for kind in builtin:
        slug = f"first-{kind}-lab"
        new_lab(content, slug, title=f"A first {kind} lab", kind=kind)
        slugs.append(slug)
    if workflow is not None:
        (directory / PAGES_WORKFLOW_PATH).parent.mkdir(parents=True)
        (directory / PAGES_WORKFLOW_PATH).write_text(workflow, encoding="utf-8")
    return slugs


def pages_workflow(install: str) -> str:
    """The GitHub Pages workflow, installing the generator with ``pip install INSTALL`` (a
    requirement such as ``attention-labs @ git+https://github.com/OWNER/attention-labs@COMMIT``, or
    a wheel's path in the repository). The value is quoted for the shell, then for YAML, so that
    what pip receives is exactly ``install``; an Actions expression (``${{ }}``) would be replaced
    before the shell sees it, so it is refused."""
    install = install.strip()
    if not install or "${{" in install or any(ord(ch) < 32 or ord(ch) == 127 for ch in install):
        raise BuildError("--github-pages needs what pip installs the generator from, on one line, e.g. "
                         "--github-pages 'attention-labs @ git+https://github.com/OWNER/attention-labs@COMMIT'")
    return PAGES_WORKFLOW.format(install=json.dumps("pip install " + shlex.quote(install), ensure_ascii=False))


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
