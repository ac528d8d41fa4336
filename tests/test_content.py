"""Validation of authored content, one test per kind of mistake, through the ``labs`` command.

Each bad case copies the shipped content/ into a temporary folder, makes one small edit to
one file (a string replacement), runs ``labs build`` from that folder and compares stderr with
the exact ``path:line:col: error: message`` line an author would see. The expected line and
column are found in the edited file by a needle, ``"answer: |mat"``, where ``|`` marks the
column — so a case keeps pointing at the right place when the shipped content grows.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from generator.cli import main
from generator.errors import ContentError
from generator.prose.markdown_render import MarkdownLimit

ROOT = Path(__file__).resolve().parent.parent
THEME = ROOT / "theme"
LAB = "content/labs/attention/"
GIST = (ROOT / LAB / "gist.md").read_text(encoding="utf-8")  # its length goes into one message
FOLDER, DELETE, WHOLE = object(), object(), object()  # special edits: a folder instead, no file, whole file


@dataclass
class Case:
    file: str  # relative to the project folder, e.g. "content/labs/attention/quiz.yaml"
    old: object  # text to replace (first occurrence), WHOLE for the whole file
    new: object  # replacement text or bytes; FOLDER or DELETE to replace the file itself
    at: str | None  # needle with "|" at the expected column; None for 1:1
    message: str  # may use {first_line}: the line of the needle's first occurrence
    nth: int = 1  # which occurrence of the needle
    shown: str = ""  # the path printed, when it is not ``file``
    extra: dict[str, str] = field(default_factory=dict)  # more files to create, by path


def position(text: str, at: str | None, nth: int = 1) -> tuple[int, int]:
    """1-based (line, column) of the ``|`` in the ``nth`` occurrence of ``at`` in ``text``."""
    if at is None:
        return 1, 1
    before, bar, after = at.partition("|")
    index = -1
    for _ in range(nth):
        index = text.find(before + after, index + 1)
        assert index >= 0, f"needle {at!r} (occurrence {nth}) not in the edited file"
    index += len(before) if bar else 0
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def apply(project: Path, case: Case) -> str:
    """Make the case's edit in ``project``; the expected stderr line."""
    for rel, text in case.extra.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    path = project / case.file
    edited = ""
    if case.new is DELETE:
        path.unlink()
    elif case.new is FOLDER:
        path.unlink()
        path.mkdir()
    else:
        raw = path.read_bytes()
        old = raw if case.old is WHOLE else str(case.old).encode()
        new = case.new if isinstance(case.new, bytes) else str(case.new).encode()
        assert old in raw, f"the shipped {case.file} no longer contains {case.old!r}; update this case"
        raw = raw.replace(old, new, 1)
        path.write_bytes(raw)
        edited = raw.decode("utf-8", "replace")
    line, column = position(edited, case.at, case.nth)
    first_line = position(edited, case.at, 1)[0] if case.at else 1
    return f"{case.shown or case.file}:{line}:{column}: error: {case.message.format(first_line=first_line)}"


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


def build(capsys) -> tuple[int, list[str]]:
    code = main(["build", "--content", "content", "--theme", str(THEME), "--output", "site"])
    return code, capsys.readouterr().err.splitlines()


TAGS = ("tags: DET, NOUN, PRON, VERB, AUX, ADJ, ADV, ADP, CONJ, PART, NUM, PUNCT "
        "(also PROPN = NOUN, CCONJ/SCONJ = CONJ, PREP = ADP)")

ANCESTOR_RULE = ("must be *, 'self', 'none' or an origin such as https://moodle.example.edu "
                 "(a scheme and a host, an optional port, no path)")

# The parser's own words: libyaml's when PyYAML has it (as its wheels do), else PyYAML's.
UNCLOSED_LIST = ("did not find expected ',' or ']'" if hasattr(yaml, "CSafeLoader")
                 else "expected ',' or ']', but got ':'")

CASES = [
    # -- keys -----------------------------------------------------------------------------
    pytest.param(Case(LAB + "lab.yaml", "subtitle:", "subtitel:", "|subtitel:",
                      "unknown key 'subtitel' (did you mean 'subtitle'?)"), id="unknown-key-did-you-mean"),
    pytest.param(Case(LAB + "faq.yaml", "- id: what-it-adds\n", "- id: what-it-adds\n  hint: none\n", "|hint:",
                      "unknown key 'hint' (allowed: answer, id, question)"), id="unknown-key-lists-the-allowed"),
    pytest.param(Case(LAB + "lab.yaml", "title: Attention\n", "", None,
                      "missing required key 'title' in the document"), id="missing-required-key"),
    pytest.param(Case(LAB + "lab.yaml", "title: Attention\n", "title: Attention\ntitle: Again\n", "|title: Again",
                      "duplicate key 'title'"), id="duplicate-yaml-key"),
    # -- types and empty text ----------------------------------------------------------------
    pytest.param(Case(LAB + "lab.yaml", "number: 07", "number: seven", "number: |seven",
                      "'number' must be a whole number, not text"), id="wrong-type-number"),
    pytest.param(Case(LAB + "faq.yaml", "question: What does an attention layer add to a token's vector?",
                      "question: [What, is, it]", "question: |[What", "'question' must be text, not a list"), id="wrong-type-text"),
    pytest.param(Case(LAB + "quiz.yaml", "correct: true", "correct: maybe", "correct: |maybe",
                      "'correct' must be true or false, not text"), id="wrong-type-boolean"),
    pytest.param(Case(LAB + "quiz.yaml", "prompt: In attention, which vector describes **what a word is looking for**?",
                      'prompt: ""', 'prompt: |""', "'prompt' must not be empty"), id="empty-text"),
    pytest.param(Case(LAB + "faq.yaml", "question: What does an attention layer add to a token's vector?",
                      "question:", "question:|\n", "'question' must not be empty"), id="empty-value"),
    # -- duplicates --------------------------------------------------------------------------
    pytest.param(Case(LAB + "quiz.yaml", "id: scaling", "id: sum-to-one", "id: |sum-to-one",
                      "duplicate question id 'sum-to-one'", nth=2), id="duplicate-question-id"),
    pytest.param(Case(LAB + "faq.yaml", "id: three-vectors", "id: what-it-adds", "id: |what-it-adds",
                      "duplicate FAQ id 'what-it-adds'", nth=2), id="duplicate-faq-id"),
    pytest.param(Case(LAB + "lab.yaml", "- id: animal", "- id: cat-mat", "- id: |cat-mat",
                      "duplicate sentence id 'cat-mat' (first used on line {first_line})", nth=2),
                 id="duplicate-sentence-id"),
    pytest.param(Case("content/site.yaml", "topics:\n", "topics:\n  - slug: llm-engineering\n    title: Again\n"
                      "    blurb: Twice.\n", "slug: |llm-engineering", "duplicate topic slug 'llm-engineering'", nth=2),
                 id="duplicate-topic-slug"),
    pytest.param(Case("content/site.yaml", "  - attention", "  - attention\n  - attention", "  - |attention",
                      "lab 'attention' is listed twice", nth=2), id="duplicate-lab-slug"),
    # -- references ---------------------------------------------------------------------------
    pytest.param(Case(LAB + "lab.yaml", "topic: llm-engineering", "topic: llm-engineerin", "topic: |llm-engineerin",
                      "unknown topic 'llm-engineerin' (did you mean 'llm-engineering'?); "
                      "topics are declared in content/site.yaml"), id="unknown-topic"),
    pytest.param(Case("content/site.yaml", "  - attention", "  - attention\n  - attenton", "  - |attenton",
                      "no lab folder content/labs/attenton/ (did you mean 'attention'?)"), id="unknown-lab"),
    pytest.param(Case(LAB + "quiz.yaml", "type: multiple", "type: multi", "type: |multi",
                      "unknown question type 'multi' (did you mean 'multiple'?); labs of kind 'attention' have: single, multiple, word"),
                 id="unknown-question-type"),
    pytest.param(Case(LAB + "quiz.yaml", "type: word", "type: wrd", "type: |wrd",
                      "unknown question type 'wrd' (did you mean 'word'?); labs of kind 'attention' have: single, multiple, word"),
                 id="unknown-question-type-alone"),
    pytest.param(Case(LAB + "quiz.yaml", "        correct: true", "        corect: true", "        |corect: true",
                      "unknown key 'corect' (did you mean 'correct'?)"), id="misspelt-correct-alone"),
    pytest.param(Case(LAB + "quiz.yaml", "sentence: cat-mat", "sentence: cat-hat", "sentence: |cat-hat",
                      "unknown sentence 'cat-hat' (did you mean 'cat-mat'?); "
                      "sentences are declared under 'widget' in lab.yaml"), id="unknown-sentence"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "[softmax](lab:atention)", "[softmax](|lab:atention)",
                      "link to unknown lab 'atention' (did you mean 'attention'?)"), id="link-to-unknown-lab"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "[softmax](#nowhere)", "[softmax](|#nowhere)",
                      "link to a missing anchor: #nowhere"), id="link-to-missing-anchor"),
    pytest.param(Case(LAB + "lab.yaml", "sat/VERB on the mat", "sat/VRB on the mat", "sat/|VRB on",
                      "unknown tag 'VRB' on 'sat' (did you mean 'VERB'?); tags: DET, NOUN, PRON, VERB, AUX, ADJ, "
                      "ADV, ADP, CONJ, PART, NUM, PUNCT (also PROPN = NOUN, CCONJ/SCONJ = CONJ, PREP = ADP)"),
                 id="unknown-tag-in-the-default-sentence"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "$\\sqr{d}$", "$|\\sqr{d}$",
                      "unknown TeX command \\sqr in $\\sqr{{d}}$ (did you mean \\sqrt?)"), id="tex-unknown-command"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "$\\frac{a}{b$", "$\\frac{a}|{b$",
                      "unbalanced braces in $\\frac{{a}}{{b$: this '{{' is never closed"), id="tex-unclosed-brace"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "$x^2}$", "$x^2|}$",
                      "unbalanced braces in $x^2}}$: this '}}' closes nothing"), id="tex-stray-brace"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "$QK^T and more", "|$QK^T and",
                      "unclosed $: nothing closes the math this '$' starts (write \\$ for a dollar sign)"),
                 id="tex-unclosed-dollar"),
    pytest.param(Case(LAB + "faq.yaml", "answer: >-\n", "answer: >-\n    Costs $\\sqr{2}$ here.\n", "$|\\sqr{2}",
                      "unknown TeX command \\sqr in $\\sqr{{2}}$ (did you mean \\sqrt?)"), id="tex-in-yaml"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "[softmax](other.html)", "[softmax](|other.html)",
                      "link to a page that does not exist: other.html"), id="link-to-missing-page"),
    pytest.param(Case("content/site.yaml", "base_url: https://attention-labs.github.io/",
                      "base_url: attention-labs.github.io", "base_url: |attention-labs",
                      "base_url 'attention-labs.github.io' must be an absolute http(s) URL such as "
                      "https://example.org/labs/, with no ?query or #fragment"), id="base-url-not-absolute"),
    pytest.param(Case("content/site.yaml", "base_url: https://attention-labs.github.io/",
                      'base_url: \'https://x.org/"><script>\'', "base_url: |'https",
                      "base_url 'https://x.org/\"><script>' must be an absolute http(s) URL such as "
                      "https://example.org/labs/, with no ?query or #fragment"), id="base-url-with-markup"),
    pytest.param(Case("content/site.yaml", "language: en", "language: english please", "language: |english",
                      "language 'english please' must be a language tag such as en, en-GB or pt-BR"),
                 id="language-not-a-tag"),
    pytest.param(Case("content/site.yaml", "language: en\n", "language: en\nembed:\n  frame_ancestors:\n"
                      "    - https://moodle.example.edu\n    - https://moodle.example.edu/course/7\n",
                      "    - |https://moodle.example.edu/course",
                      f"frame_ancestors entry 'https://moodle.example.edu/course/7' {ANCESTOR_RULE}"),
                 id="frame-ancestors-with-a-path"),
    pytest.param(Case("content/site.yaml", "language: en\n", "language: en\nembed:\n  frame_ancestors:\n"
                      "    - \"'self'; script-src *\"\n", "    - |\"'self'",
                      f"frame_ancestors entry \"'self'; script-src *\" {ANCESTOR_RULE}"),
                 id="frame-ancestors-that-would-end-the-policy"),
    pytest.param(Case("content/site.yaml", "language: en\n", "language: en\nembed:\n  frame_ancestor:\n"
                      "    - https://moodle.example.edu\n", "  |frame_ancestor:",
                      "unknown key 'frame_ancestor' (did you mean 'frame_ancestors'?)"),
                 id="frame-ancestors-misspelt"),
    pytest.param(Case(LAB + "lab.yaml", "number: 07", "number: \u00b2", "number: |\u00b2",
                      "'number' must be a whole number, not text"), id="number-superscript-digit"),
    pytest.param(Case(LAB + "lab.yaml", "number: 07", "number: \u0667", "number: |\u0667",
                      "'number' must be a whole number, not text"), id="number-arabic-indic-digit"),
    pytest.param(Case(LAB + "lab.yaml", "number: 07", "number: 1000000000000000000000000000000", "number: |1000",
                      "'number' must be at most 999"), id="number-too-large"),
    pytest.param(Case(LAB + "quiz.yaml", "query: sat", "query: sat#\u00b2", "query: |sat#",
                      "'sat#\u00b2': the sentence has 1 'sat'; write sat#1 … sat#1"), id="quiz-query-superscript"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "[" * 5000, None,
                      "this paragraph has too many unclosed or deeply nested brackets ('[', '(' or '<') for the "
                      "Markdown parser; close them, or escape them as \\[ \\( \\<"), id="markdown-unclosed-brackets"),
    pytest.param(Case(LAB + "gist.md", "**softmax**", "word " * 50_000, None,
                      f"Markdown text of {len(GIST.replace('**softmax**', 'word ' * 50_000, 1)):,} characters is "
                      "over the limit of 200,000; split it into several files or sections"), id="markdown-too-large"),
    # -- answer keys ---------------------------------------------------------------------------
    pytest.param(Case(LAB + "quiz.yaml", "      - text: Exactly 1\n        correct: true\n", "      - text: Exactly 1\n",
                      "      |- text: Exactly 1", "no option is marked 'correct: true'"), id="single-without-correct"),
    pytest.param(Case(LAB + "quiz.yaml", "      - text: The number of words in the sentence\n",
                      "      - text: The number of words in the sentence\n        correct: true\n",
                      "      |- text: Exactly 1",
                      "a single-choice question has exactly one correct option, found 2; use type: multiple for several"),
                 id="single-with-two-correct"),
    pytest.param(Case(LAB + "quiz.yaml", "answer: cat", "answer: mat", "answer: |mat",
                      "answer key 'mat' is wrong: in head 'syntax', 'sat' attends most to 'cat' (55%), not 'mat' (30%)"),
                 id="word-answer-contradicts-weights"),
    pytest.param(Case(LAB + "quiz.yaml", "answer: cat", "answer: dog", "answer: |dog",
                      "no word 'dog' in the sentence; words: The cat sat on the mat"),
                 id="word-answer-not-in-sentence"),
    # -- sentences and claims -------------------------------------------------------------------
    pytest.param(Case(LAB + "lab.yaml", "too tired/ADJ", "too sleepy", "too |sleepy",
                      "'sleepy' needs a tag: it is not a built-in function word, so write it as 'sleepy/NOUN', "
                      f"'sleepy/VERB', 'sleepy/ADJ' …; {TAGS}"), id="untagged-unknown-word"),
    pytest.param(Case(LAB + "lab.yaml", "- it -> animal", "- it -> street", "- |it -> street",
                      "claim 'it -> street' fails in head 'coreference': it's top key is animal (79%)"),
                 id="claim-contradicts-weights"),
    pytest.param(Case(LAB + "lab.yaml", "- it -> animal", "- it -> animl", "- it -> |animl",
                      "no word 'animl' in the sentence (did you mean 'animal'?); "
                      "words: The animal didn't cross the street because it was too tired"),
                 id="claim-names-an-unknown-word"),
    # -- paths -----------------------------------------------------------------------------------
    pytest.param(Case(LAB + "lab.yaml", "file: gist.md", "file: ../../secret.md", "file: |../../secret.md",
                      "path '../../secret.md' points outside content/labs/attention/",
                      extra={"content/secret.md": "Not part of the lab.\n"}), id="path-escapes-with-dotdot"),
    pytest.param(Case(LAB + "lab.yaml", "file: gist.md", "file: ../attention-evil/x.md",
                      "file: |../attention-evil/x.md", "path '../attention-evil/x.md' points outside "
                      "content/labs/attention/"),
                 id="path-escapes-to-a-sibling-sharing-a-prefix"),
    pytest.param(Case(LAB + "lab.yaml", "file: gist.md", "file: gost.md", "file: |gost.md",
                      "Markdown file 'gost.md' not found in content/labs/attention/"), id="markdown-file-not-found"),
    # -- files -------------------------------------------------------------------------------------
    pytest.param(Case(LAB + "lab.yaml", "subtitle: The Spotlight", b"subtitle: The Spotlight \xe2\x80\x94 \xff",
                      "The Spotlight \u2014 |", "file is not valid UTF-8 (byte 0xff); save it as UTF-8"),
                 id="not-utf8"),
    pytest.param(Case(LAB + "quiz.yaml", WHOLE, "", None, "file is empty"), id="empty-file"),
    pytest.param(Case(LAB + "quiz.yaml", WHOLE, "# questions to come\n", None, "file has no YAML content"),
                 id="only-comments"),
    pytest.param(Case(LAB + "gist.md", None, FOLDER, None, "expected a file but found a folder"),
                 id="folder-instead-of-file"),
    pytest.param(Case(LAB + "faq.yaml", None, DELETE, None,
                      "lab 'attention' needs a faq.yaml (run `labs new attention` to see a complete lab)"),
                 id="missing-lab-file"),
    pytest.param(Case("content/site.yaml", None, DELETE, None, "file not found"), id="missing-site-file"),
    pytest.param(Case(LAB + "lab.yaml", "title: Attention\n", "title: [Attention\n", "title: |[Attention",
                      f"invalid YAML: {UNCLOSED_LIST}"), id="yaml-syntax"),
    pytest.param(Case(LAB + "lab.yaml", "title: Attention\n", "title: !!python/object/apply:os.system [echo hi]\n",
                      "title: |!!python", "YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' is not allowed; "
                      "write plain values"), id="yaml-tag-refused"),
    pytest.param(Case("content/labs/Bad_Lab/lab.yaml", None, DELETE, None,
                      "lab folder name 'Bad_Lab' must be lower-case letters, digits and dashes",
                      shown="content/labs/Bad_Lab", extra={"content/labs/Bad_Lab/lab.yaml": "number: 1\n"}),
                 id="lab-folder-name"),
]


@pytest.mark.parametrize("case", CASES)
def test_each_kind_of_mistake_is_one_exact_error_line(project, capsys, case):
    expected = apply(project, case)
    code, err = build(capsys)
    assert (code, err) == (1, [expected, "1 error; nothing was written"])
    assert not (project / "site").exists()


def test_every_mistake_of_a_run_is_reported_together(project, capsys):
    quiz = project / LAB / "quiz.yaml"
    text = quiz.read_text(encoding="utf-8")
    for old, new in [("type: multiple", "type: multi"), ("answer: cat", "answer: dog"),
                     ("- id: qkv\n", "- id: qkv\n    hint: none\n")]:
        assert old in text, f"the shipped quiz.yaml no longer contains {old!r}"
        text = text.replace(old, new, 1)
    quiz.write_text(text, encoding="utf-8")
    expected = [
        f"{LAB}quiz.yaml:{line}:{column}: error: {message}" for (line, column), message in sorted([
            (position(text, "type: |multi"), "unknown question type 'multi' (did you mean 'multiple'?); "
                                             "labs of kind 'attention' have: single, multiple, word"),
            (position(text, "answer: |dog"), "no word 'dog' in the sentence; words: The cat sat on the mat"),
            (position(text, "|hint: none"), "unknown key 'hint' (allowed: explanation, id, options, prompt, shuffle, type)"),
        ])
    ]
    code, err = build(capsys)
    assert (code, err) == (1, expected + ["3 errors; nothing was written"])


# -- one symlink policy: nothing outside content/ is read, links that stay inside are fine -----------


def _link_out(project: Path, rel: str) -> Path:
    """Move ``rel`` (a file or folder of the content) out of content/ and leave a link to it."""
    inside, outside = project / rel, project / "elsewhere" / Path(rel).name
    outside.parent.mkdir(exist_ok=True)
    shutil.move(inside, outside)
    inside.symlink_to(outside, target_is_directory=outside.is_dir())
    return outside


@pytest.mark.parametrize("rel", [
    "content/site.yaml", "content/labs/attention", "content/labs", f"{LAB}lab.yaml", f"{LAB}quiz.yaml",
    f"{LAB}faq.yaml", f"{LAB}gist.md",
], ids=["site.yaml", "lab-folder", "labs-folder", "lab.yaml", "quiz.yaml", "faq.yaml", "markdown"])
def test_a_symlink_out_of_content_is_an_error_naming_the_link(project, capsys, rel):
    outside = _link_out(project, rel)
    code, err = build(capsys)
    assert code == 1
    assert f"{rel}:1:1: error: {rel} is a symbolic link to elsewhere/{outside.name}, outside content/" in err, err
    assert not (project / "site").exists()


def test_a_symlink_loop_in_content_is_an_error_not_a_hang(project, capsys):
    gist = project / LAB / "gist.md"
    gist.unlink()
    gist.symlink_to(gist)
    code, err = build(capsys)
    assert code == 1
    assert f"{LAB}gist.md:1:1: error: {LAB}gist.md is a symbolic link that loops back on itself" in err, err


def test_symlinks_that_stay_inside_content_are_followed(project, capsys):
    shared = project / "content/shared"
    shared.mkdir()
    shutil.move(project / LAB / "gist.md", shared / "gist.md")
    (project / LAB / "gist.md").symlink_to("../../shared/gist.md")
    shutil.move(project / LAB / "faq.yaml", shared / "faq.yaml")
    (project / LAB / "faq.yaml").symlink_to(shared / "faq.yaml")  # absolute, and still inside
    code, err = build(capsys)
    assert (code, err) == (0, [])


def test_a_dotdot_path_in_lab_yaml_is_still_refused_at_its_line(project, capsys):
    lab = project / LAB / "lab.yaml"
    text = lab.read_text(encoding="utf-8").replace("file: gist.md", "file: ../../site.yaml", 1)
    lab.write_text(text, encoding="utf-8")
    line, column = position(text, "file: |../../site.yaml")
    code, err = build(capsys)
    assert (code, err) == (1, [f"{LAB}lab.yaml:{line}:{column}: error: path '../../site.yaml' points outside "
                               "content/labs/attention/", "1 error; nothing was written"])


def test_yaml_tags_are_never_constructed(project, capsys):
    marker = project / "pwned"
    lab = project / LAB / "lab.yaml"
    lab.write_text(lab.read_text(encoding="utf-8").replace(
        "title: Attention\n", f"title: !!python/object/apply:os.system ['touch {marker}']\n", 1), encoding="utf-8")
    code, _ = build(capsys)
    assert code == 1 and not marker.exists()


def test_shipped_content_builds_cleanly(project, capsys):
    code, err = build(capsys)
    assert (code, err) == (0, [])


def test_an_id_used_twice_on_a_page_is_an_error_at_the_heading(tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "content", tmp_path / "content")
    monkeypatch.chdir(tmp_path)
    code_md = tmp_path / LAB / "code.md"
    code_md.write_text(code_md.read_text(encoding="utf-8") + "\n## Quiz\n\nMore.\n", encoding="utf-8")
    line = code_md.read_text(encoding="utf-8").splitlines().index("## Quiz") + 1
    code = main(["build", "--theme", str(THEME)])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err == [f"{LAB}code.md:{line}:1: error: id 'quiz' is used twice on labs/attention/index.html; "
                   "links to #quiz would land on the first", "1 error; nothing was written"]


# -- every author-facing pattern is linear-time ------------------------------------------------
# A guard, not a benchmark: 100 KB of the text that made a backtracking pattern stall (long runs
# of spaces between the parts it looks for) must be read, or refused, in well under a second.

LINE = 100_000


def _author_facing_parsers(size: int = LINE):  # size: what every input below is made of
    import re as _re

    from generator.kinds.attention import teaching
    from generator.content import SLUG_RE, valid_base_url, valid_language
    from generator.kinds.attention.realmodel import parse_relation
    from generator.kinds.attention.reading import find_word, parse_claim
    from generator.prose.markdown_render import render_markdown
    from generator.prose.slug import slugify

    spaces = " " * size

    def sentence(text):
        try:
            teaching.parse_sentence(text)
        except teaching.TaggingError:
            pass

    return {
        "claim-spaces-then-paren": lambda: parse_claim("on ->" + spaces + "mat("),
        "claim-spaces-in-share": lambda: parse_claim("a -> b (>=" + spaces + "6"),
        "claim-many-keys": lambda: parse_claim("a -> " + "b, " * (size // 3)),
        "claim-many-arrows": lambda: parse_claim("a" + " ->" * (size // 3)),
        "relation-spaces": lambda: parse_relation("a ->" + spaces + "b (x" + spaces + "y"),
        "relation-many-arrows": lambda: parse_relation("->" * (size // 2) + " (x)"),
        "sentence-words": lambda: sentence("the/DET " * (size // 8)),
        "sentence-punctuation": lambda: sentence("(" * size + "a"),
        "sentence-number": lambda: sentence("1," * (size // 2) + "x"),
        "word-occurrence": lambda: find_word("the#" + "9" * 4000, ["the"] * 3),  # int() of 4300+ digits refuses
        "slug": lambda: SLUG_RE.match("a-" * (size // 2) + "_"),
        "slugify": lambda: slugify("a -" * (size // 3)),
        "base-url": lambda: valid_base_url("https://" + "a" * size + spaces),
        "language": lambda: valid_language("en" + "-a" * (size // 2) + "_"),
        "markdown-spaces": lambda: render_markdown("on ->" + spaces + "mat("),
        "markdown-brackets": lambda: render_markdown("[" * size),
        "markdown-angles": lambda: render_markdown("<a " * (size // 3)),
        "markdown-links": lambda: render_markdown("[a](" * (size // 4)),
        "markdown-math": lambda: render_markdown("$a " * (size // 3)),
        "markdown-emphasis": lambda: render_markdown("*a _b " * (size // 6)),
        "id-pattern": lambda: _re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*").fullmatch("a" * size + "!"),
    }


def _least_cpu(parse) -> float:
    """The least CPU time (process_time) of three runs of ``parse``: a busy machine slows a run, but
    the least of three is what the work itself costs."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        try:
            parse()
        except (ContentError, MarkdownLimit):
            pass  # refused with an error is as good as read
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.parametrize("name", list(_author_facing_parsers()))
def test_every_author_facing_pattern_is_linear_time(name):
    """The cost grows with the input, not with its square: four times the text costs less than
    eight times the CPU (a pattern that backtracks over the text costs sixteen times and more).
    A ratio of two sizes, each the least CPU of three runs, not a time: the machine's speed and
    load cancel out. (1 ms stands in for a smaller input's cost that rounds to nothing.)"""
    small = _least_cpu(_author_facing_parsers(LINE // 4)[name])
    large = _least_cpu(_author_facing_parsers(LINE)[name])
    assert large < 8 * max(small, 0.001), f"{name}: 4x the input cost {large / max(small, 1e-9):.0f}x the CPU"


# -- positions: where the mistake is, not where a parser gave up ------------------------------------


def _write_lines(path: Path, edit_line) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    edit_line(lines)
    path.write_text("\n".join(lines), encoding="utf-8")
    return lines


@pytest.mark.parametrize("file", [f"{LAB}quiz.yaml", f"{LAB}gist.md"], ids=["yaml", "markdown"])
def test_a_nul_byte_is_one_line_at_its_place(project, capsys, file):
    lines = (project / file).read_text(encoding="utf-8").split("\n")
    row = next(i for i, line in enumerate(lines) if len(line) > 12 and not line.startswith("#"))
    lines[row] = lines[row][:10] + "\0" + lines[row][10:]
    (project / file).write_text("\n".join(lines), encoding="utf-8")
    code, err = build(capsys)
    assert (code, err) == (1, [f"{file}:{row + 1}:11: error: a NUL byte (U+0000) is not allowed in a text file; "
                               "remove it", "1 error; nothing was written"])


def test_a_control_character_in_yaml_is_reported_at_its_place(project, capsys):
    quiz = project / LAB / "quiz.yaml"
    text = quiz.read_text(encoding="utf-8").replace("questions:\n", "questions:\n# é\x07\n", 1)
    quiz.write_text(text, encoding="utf-8")
    line, column = position(text, "# é|\x07")
    code, err = build(capsys)
    assert (code, err) == (1, [f"{LAB}quiz.yaml:{line}:{column}: error: invalid YAML: the control character U+0007 "
                               "is not allowed; remove it", "1 error; nothing was written"])


@pytest.mark.parametrize("quote", ['"', "'"], ids=["double", "single"])
def test_an_unclosed_quote_is_reported_at_the_quote_not_at_the_end_of_the_file(project, capsys, quote):
    lab = project / LAB / "lab.yaml"
    text = lab.read_text(encoding="utf-8")
    first = next(line for line in text.split("\n") if line.startswith("title: "))
    text = text.replace(first, f"title: {quote}Attention", 1)
    lab.write_text(text, encoding="utf-8")
    line, column = position(text, f"title: |{quote}Attention")
    code, err = build(capsys)
    assert code == 1
    assert err[0].startswith(f"{LAB}lab.yaml:{line}:{column}: error: invalid YAML: this quote is not closed on its "
                             "line (the YAML parser only noticed at line "), err


def test_a_quote_left_open_at_the_end_of_a_file_is_reported_at_the_quote(project, capsys):
    faq = project / LAB / "faq.yaml"
    text = faq.read_text(encoding="utf-8") + '- question: "Unclosed?\n  answer: yes\n'
    faq.write_text(text, encoding="utf-8")
    line, column = position(text, 'question: |"Unclosed?')
    code, err = build(capsys)
    assert (code, err) == (1, [f"{LAB}faq.yaml:{line}:{column}: error: invalid YAML: this quoted value is never closed",
                               "1 error; nothing was written"])


def test_a_raw_html_id_clash_in_markdown_is_blamed_on_the_markdown_line(project, capsys):
    gist = project / LAB / "gist.md"
    text = gist.read_text(encoding="utf-8") + '\nMore.\n\n<h2 id="quiz">Clash</h2>\n'
    gist.write_text(text, encoding="utf-8")
    line, column = position(text, '<h2 |id="quiz">')
    code, err = build(capsys)
    assert (code, err) == (1, [f"{LAB}gist.md:{line}:{column}: error: id 'quiz' is used twice on "
                               "labs/attention/index.html; links to #quiz would land on the first",
                               "1 error; nothing was written"])


def test_a_checkpoint_folder_without_weights_is_an_error_at_its_lab_yaml_line(project, capsys):
    (project / "empty-model").mkdir()
    lab = project / LAB / "lab.yaml"
    text = lab.read_text(encoding="utf-8").replace("  cache: real-heads.json\n",
                                                   "  cache: real-heads.json\n  checkpoint: ../../../empty-model\n", 1)
    lab.write_text(text, encoding="utf-8")
    line, column = position(text, "checkpoint: |../../../empty-model")
    code, err = build(capsys)
    assert (code, err) == (1, [f"{LAB}lab.yaml:{line}:{column}: error: checkpoint empty-model/ cannot be used: "
                               "empty-model/model.safetensors: model.safetensors not found",
                               "1 error; nothing was written"])
