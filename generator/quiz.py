"""quiz.yaml, read: a lab's questions → a :class:`~generator.model.Quiz`.

Layout::

    questions:
      - type: single                        # single | multiple | a type of the lab's kind
        id: q-scale                         # optional; default q<n>; the options' order is drawn from it
        prompt: Why divide by √d?           # inline Markdown
        explanation: …                      # optional
        shuffle: false                      # optional: keep the options in the written order
        options:
          - {text: …, why: …, correct: true}

Single and multiple choice are read here; a question of the lab kind's own types
(``LabKind.question_types``) is read by the kind (``LabKind.read_question``). Options are
shuffled by :mod:`generator.quizorder`. The loader (:mod:`generator.content`) opens the file
and hands its Reader here, with the function that renders inline Markdown and checks its links.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from generator.errors import did_you_mean
from generator.kinds import LabKind
from generator.model import Option, Question, Quiz, quiz_storage_key
from generator.prose.markdown_render import RenderedMarkdown
from generator.prose.slug import SLUG_RE
from generator.quizorder import same_place_everywhere, shuffled
from generator.source import Reader

QUESTION_TYPES = ("single", "multiple")  # every lab has these; a lab kind may add its own

# (reader, where, *, required=True) -> the rendered inline Markdown at ``where``, or None after
# reporting its mistakes there: the loader's, with the lab's link targets.
InlineMarkdown = Callable[..., RenderedMarkdown | None]


def read_quiz(r: Reader, slug: str, kind: LabKind, spec: Any, markdown: InlineMarkdown, lost: set[str]) -> Quiz | None:
    """The questions of quiz.yaml read through ``r``: single and multiple choice, and ``kind``'s
    own types (read by the kind against ``spec``, what it read of lab.yaml; None if that had
    mistakes). Options are shuffled by the question's id, except where a question says
    ``shuffle: false`` or its kind keeps their order. A question with a mistake is left out and
    its id added to ``lost``; None when the file's shape is wrong."""
    if r.mapping((), required=("questions",)) is None:
        return None
    questions, ids, drawn = [], set(), None
    for i, value in enumerate(r.sequence(("questions",)) or []):
        q = read_question(r, ("questions", i), i, kind, spec, markdown)
        if q is None:
            given = r.value(("questions", i, "id"))
            lost.add(given if isinstance(given, str) else f"q{i + 1}")
            continue
        if q.id in ids:
            r.error(("questions", i, "id"), f"duplicate question id {q.id!r}")
            continue
        ids.add(q.id)
        keep = q.type not in QUESTION_TYPES + tuple(kind.shuffled_question_types) or (
            isinstance(value, dict) and "shuffle" in value and r.boolean(("questions", i, "shuffle")) is False)
        questions.append(q if keep else shuffled(slug, q))
        drawn = drawn if drawn or keep or not q.options else q.id  # the first question whose order is drawn
    digest = hashlib.sha256(r.doc.text.encode()).hexdigest()[:10]
    places = same_place_everywhere(tuple(questions))
    warnings = ()
    if places is not None:
        where = ", ".join(str(p + 1) for p in places)
        fix = (f"give question {drawn!r} another id (the order of its options is drawn from its id), or add "
               f"'shuffle: false' to it and put its right option elsewhere than place {where}" if drawn else
               f"put the right option of one 'shuffle: false' question elsewhere than place {where}")
        d = r.doc.diagnostic(("questions",), f"every question shows its correct option in the same place ({where}), "
                             f"so a learner can answer without reading; {fix}", key=True)
        warnings = (f"{d.path}:{d.line}:{d.column}: warning: {d.message}",)
    return Quiz(tuple(questions), quiz_storage_key(slug, digest), warnings)


def read_question(r: Reader, where: tuple, index: int, lab_kind: LabKind, spec: Any,
                  markdown: InlineMarkdown) -> Question | None:
    """One question at ``where`` (the ``index``-th of the quiz), or None after reporting its mistakes."""
    types = QUESTION_TYPES + tuple(lab_kind.question_types)
    value = r.value(where)
    qtype = value.get("type") if isinstance(value, dict) else None
    if isinstance(value, dict) and "type" in value:
        written = r.string(where + ("type",), multiline=False)
        if written is not None and written not in types:  # which keys belong depends on the type
            r.error(where + ("type",), f"unknown question type {written!r}{did_you_mean(written, types)}; "
                    f"labs of kind {lab_kind.name!r} have: {', '.join(types)}")
            return None
        if written is None:
            return None
    common = ("type", "prompt")
    if qtype in lab_kind.question_types:
        own_required, own_optional = lab_kind.question_keys.get(qtype, ((), ()))
        m = r.mapping(where, required=common + tuple(own_required), optional=("id", "explanation") + tuple(own_optional))
    else:
        m = r.mapping(where, required=common + ("options",), optional=("id", "explanation", "shuffle"))
    if m is None:
        return None
    qtype = r.string(where + ("type",), multiline=False)
    if qtype not in types:
        if qtype is not None:
            r.error(where + ("type",), f"unknown question type {qtype!r}{did_you_mean(qtype, types)}; "
                    f"labs of kind {lab_kind.name!r} have: {', '.join(types)}")
        return None
    qid = r.string(where + ("id",), required=False, multiline=False) or f"q{index + 1}"
    if not SLUG_RE.match(qid):
        r.error(where + ("id",), f"question id {qid!r} must be lower-case letters, digits and dashes")
    prompt = markdown(r, where + ("prompt",))
    explanation = markdown(r, where + ("explanation",), required=False)
    if prompt is None:
        return None
    explanation_html = explanation.html if explanation else ""
    if qtype in lab_kind.question_types:
        if spec is None:  # lab.yaml has mistakes (reported there); the kind cannot check this
            return None
        own = lab_kind.read_question(r, where, qtype, qid, spec)
        if own is None:
            return None
        return Question(qid, qtype, prompt.html, prompt.text, tuple(own.options), explanation_html,
                        data=own.data, match=own.match)
    options = []
    unreadable = False  # an option with a mistake of its own: its count errors would only echo it
    for j, _ in enumerate(r.sequence(where + ("options",)) or []):
        ow = where + ("options", j)
        before = len(r.diags.items)
        option = r.mapping(ow, required=("text", "why"), optional=("correct",))
        if option is None or len(r.diags.items) > before:  # e.g. 'corect:' — already reported
            unreadable = True
        if option is None:
            continue
        text = markdown(r, ow + ("text",))
        why = markdown(r, ow + ("why",))
        correct = r.boolean(ow + ("correct",))
        if correct is None and option.get("correct") is not None:
            unreadable = True
        if text and why:
            options.append(Option(f"{qid}-{chr(97 + j) if j < 26 else j}", _unwrap_p(text.html), text.text,
                                  bool(correct), why.html))
        else:
            unreadable = True
    n_correct = sum(o.correct for o in options)
    if options and not unreadable:
        if len(options) < 2:
            r.error(where + ("options",), "a question needs at least two options")
        if n_correct == 0:
            r.error(where + ("options",), "no option is marked 'correct: true'")
        if qtype == "single" and n_correct > 1:
            r.error(where + ("options",), f"a single-choice question has exactly one correct option, "
                    f"found {n_correct}; use type: multiple for several")
    texts = [o.text for o in options]
    for j, o in enumerate(options):
        if texts.count(o.text) > 1 and texts.index(o.text) != j:
            r.error(where + ("options", j, "text"), f"duplicate option {o.text!r}")
    return Question(qid, qtype, prompt.html, prompt.text, tuple(options), explanation_html)


def _unwrap_p(html: str) -> str:
    """An option is one line of inline Markdown: drop the paragraph wrapper."""
    html = html.strip()
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        return html[3:-4]
    return html
