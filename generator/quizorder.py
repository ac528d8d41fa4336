"""The order a quiz shows its options in: shuffled at build, the same on every build.

Authors write the right answer first more often than not, and a learner soon learns to click the
first button. Each question's options are put in an order drawn from the lab's slug, the
question's id and each option's place in quiz.yaml — never from a random generator's state — so a
build is byte-identical to the last one, and an edit to one question moves no other question's
options. ``shuffle: false`` on a question keeps the written order (a scale, "all of the above").
"""

from __future__ import annotations

import hashlib

from generator.model import Question


def option_order(lab_slug: str, question_id: str, count: int) -> list[int]:
    """The written indices of ``count`` options, in the order they are shown."""
    def key(index: int) -> bytes:
        return hashlib.sha256(f"{lab_slug}\0{question_id}\0{index}".encode()).digest()
    return sorted(range(count), key=key)


def shuffled(lab_slug: str, question: Question) -> Question:
    """``question`` with its options in their shown order (ids keep their written letter)."""
    order = option_order(lab_slug, question.id, len(question.options))
    options = tuple(question.options[i] for i in order)
    return Question(question.id, question.type, question.prompt_html, question.prompt_text, options,
                    question.explanation_html, question.data, question.match)


def correct_places(question: Question) -> tuple[int, ...]:
    """Where (counting from 0) the correct options of ``question`` are shown."""
    return tuple(i for i, o in enumerate(question.options) if o.correct)


def same_place_everywhere(questions: tuple[Question, ...]) -> tuple[int, ...] | None:
    """The places of the correct options when every question of a quiz (two or more with
    options) shows them in the same places — a pattern a learner can answer by — else None."""
    places = {correct_places(q) for q in questions if q.options and any(o.correct for o in q.options)}
    counted = sum(1 for q in questions if q.options and any(o.correct for o in q.options))
    return next(iter(places)) if counted >= 2 and len(places) == 1 else None
