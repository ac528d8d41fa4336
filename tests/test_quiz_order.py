"""The quiz shows its options in an order drawn at build (generator.quizorder): the same on every
build, different from the order written, kept where a question says ``shuffle: false``, and a
warning at quiz.yaml when every question still shows its right answer in the same place."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from generator.cli import main
from generator.quizorder import option_order

ROOT = Path(__file__).resolve().parent.parent
THEME = ROOT / "theme"


pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


def build(project, capsys) -> tuple[int, list[str]]:
    """The exit code, and the errors and warnings (the progress lines left out)."""
    code = main(["build", "--content", "content", "--theme", str(THEME), "--output", "site"])
    out = capsys.readouterr()
    assert ": warning: " not in out.out  # warnings go to stderr, with the errors
    return code, out.err.splitlines()


def shown(project, slug: str) -> dict[str, list[tuple[str, bool]]]:
    """Each question's options as the page lists them: (option id, marked correct)."""
    html = (project / "site" / "labs" / slug / "index.html").read_text(encoding="utf-8")
    out = {}
    for qid, body in re.findall(r'<fieldset class="quiz-q" id="quiz-([^"]+)".*?>(.*?)</fieldset>', html, re.S):
        marks = re.findall(r'<(?:input|button)\b[^>]*?(?:value|data-option)="([^"]+)"([^>]*)>', body)
        if marks:
            out[qid] = [(oid, "data-correct" in rest) for oid, rest in marks]
    return out


def test_the_order_is_a_permutation_drawn_from_lab_and_question():
    orders = {tuple(option_order("attention", f"q{i}", 4)) for i in range(30)}
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    assert len(orders) > 5  # not one order for every question
    assert option_order("attention", "q1", 4) == option_order("attention", "q1", 4)
    assert any(option_order("attention", f"q{i}", 4) != option_order("sampling", f"q{i}", 4) for i in range(5))


def test_right_answers_sit_in_varying_places_and_builds_repeat(project, capsys):
    """In every shipped lab's quiz, of every kind's question types: the right answers are not all
    in one place, and some question shows its options in another order than written."""
    code, err = build(project, capsys)
    assert (code, err) == (0, [])
    slugs = sorted(p.name for p in (project / "site" / "labs").iterdir() if (p / "index.html").is_file())
    assert {"attention", "embeddings", "next-token", "sampling", "tokens"} <= set(slugs)
    first = {slug: shown(project, slug) for slug in slugs}
    for slug, questions in first.items():
        places = {tuple(i for i, (_, ok) in enumerate(opts) if ok) for opts in questions.values() if any(
            ok for _, ok in opts)}
        assert len(places) > 1, f"{slug}: every right answer in the same place: {questions}"
        assert any([oid for oid, _ in opts] != sorted(oid for oid, _ in opts) for opts in questions.values())
    nearest = {q: o for q, o in first["embeddings"].items() if q.startswith("nearest-")}
    assert len(nearest) >= 2 and any(not opts[0][1] for opts in nearest.values()), nearest  # written right-first
    shutil.rmtree(project / "site")
    assert build(project, capsys)[0] == 0
    assert {slug: shown(project, slug) for slug in first} == first


def test_shuffle_false_keeps_the_written_order(project, capsys):
    quiz = project / "content/labs/attention/quiz.yaml"
    text = quiz.read_text(encoding="utf-8")
    text = text.replace("  - id: sum-to-one\n", "  - id: sum-to-one\n    shuffle: false\n", 1)
    quiz.write_text(text, encoding="utf-8")
    assert build(project, capsys) == (0, [])
    ids = [oid for oid, _ in shown(project, "attention")["sum-to-one"]]
    assert ids == sorted(ids)


def test_shuffle_must_be_true_or_false(project, capsys):
    quiz = project / "content/labs/attention/quiz.yaml"
    text = quiz.read_text(encoding="utf-8").replace("  - id: sum-to-one\n", "  - id: sum-to-one\n    shuffle: maybe\n", 1)
    quiz.write_text(text, encoding="utf-8")
    code, err = build(project, capsys)
    line = text.splitlines().index("    shuffle: maybe") + 1
    assert code == 1 and any(e.startswith(f"content/labs/attention/quiz.yaml:{line}:") and "error" in e for e in err), err


QUIZ = """\
questions:
  - id: one
    type: single
    shuffle: false
    prompt: What does the temperature divide?
    options:
      - {text: The logits, correct: true, why: Before the softmax.}
      - {text: The probabilities, why: They are what comes out.}
  - id: two
    type: single
    shuffle: false
    prompt: What does top-k keep?
    options:
      - {text: The k likeliest words, correct: true, why: And drops the rest.}
      - {text: Every word, why: That is no cut at all.}
"""


def test_a_warning_when_every_right_answer_stays_in_one_place(project, capsys):
    """Right answer first in every question: the build says so at 'questions', and still builds;
    shuffled, the same two questions draw different places and the warning goes."""
    quiz = project / "content/labs/sampling/quiz.yaml"
    quiz.write_text(QUIZ, encoding="utf-8")
    code, err = build(project, capsys)
    assert code == 0
    assert err == ["content/labs/sampling/quiz.yaml:1:1: warning: every question shows its correct option in the "
                   "same place (1), so a learner can answer without reading; put the right option of one "
                   "'shuffle: false' question elsewhere than place 1"]
    assert {tuple(ok for _, ok in o) for o in shown(project, "sampling").values()} == {(True, False)}
    quiz.write_text(QUIZ.replace("    shuffle: false\n", ""), encoding="utf-8")
    code, err = build(project, capsys)
    places = {tuple(ok for _, ok in o) for o in shown(project, "sampling").values()}
    assert code == 0 and (err == []) == (len(places) > 1), (err, places)
    if err:  # shuffled, the warning names the question whose id draws the order
        assert err[0].endswith("give question 'one' another id (the order of its options is drawn from its id), or "
                               f"add 'shuffle: false' to it and put its right option elsewhere than place "
                               f"{next(iter(places)).index(True) + 1}"), err
