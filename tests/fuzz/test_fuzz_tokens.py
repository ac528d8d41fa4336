"""Hostile input on the tokens kind: what an author can write that is too large for the page or
for Python's numbers ends in an error at its line, never a traceback or a page that ships it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_labs
from test_tokens import edit  # replaces text once in the tokens lab's file; the line it was on

ROOT = Path(__file__).resolve().parents[1].parent
THEME = ROOT / "theme"

pytestmark = pytest.mark.project("shipped")  # the project fixture (conftest.py) starts from it


def errors_at(capsys, project: Path, name: str, line: int) -> list[str]:
    code, out, err = run_labs(capsys, "check", "--content", "content", "--theme", str(THEME))
    assert code == 1, (out, err)
    assert not any("Traceback" in e for e in out + err), err
    return [e for e in err if e.startswith(f"content/labs/tokens/{name}:{line}:")]


@pytest.mark.parametrize("count", ["9" * 5000, "0" * 3000 + "4"])
def test_a_piece_count_of_thousands_of_digits_is_a_claim_like_any_other(project, capsys, count):
    # int() refuses strings of over 4,300 digits; the claim's number is compared, not converted
    line = edit(project, "lab.yaml", "'\"unhappiness\" has 4 pieces'", f"'\"unhappiness\" has {count} pieces'")
    code, out, err = run_labs(capsys, "check", "--content", "content", "--theme", str(THEME))
    if count.lstrip("0") == "4":  # leading zeros: still the number 4, and true
        assert (code, err) == (0, []), err
        return
    assert code == 1 and not any("Traceback" in e for e in out + err), err
    assert any(e.startswith(f"content/labs/tokens/lab.yaml:{line}:") and "is false" in e for e in err), err


def test_a_claims_quoted_text_longer_than_an_example_is_refused(project, capsys):
    line = edit(project, "lab.yaml", "'\"unhappiness\" has 4 pieces'", f"'\"{'a' * 40_000}\" has 4 pieces'")
    assert any("a claim's quoted text is 40,000 characters; at most 2000" in e
               for e in errors_at(capsys, project, "lab.yaml", line))


def test_a_pieces_questions_text_longer_than_an_example_is_refused(project, capsys):
    line = edit(project, "quiz.yaml", "    text: unhappiness\n", f"    text: {'b' * 3000}\n")
    assert any("a pieces question's text is 3,000 characters; at most 2000" in e
               for e in errors_at(capsys, project, "quiz.yaml", line))


def test_a_vocabulary_too_large_for_the_page_is_refused_at_its_key(project, capsys):
    folder = project / "content/models/huge-vocab"
    folder.mkdir()
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(250_000)]
    (folder / "vocab.txt").write_text("\n".join(pieces) + "\n", encoding="utf-8")
    line = edit(project, "lab.yaml", "vocabulary: ../../models/all-minilm-l6-v2", "vocabulary: ../../models/huge-vocab")
    assert any("holds 250,005 pieces" in e and "at most 250,000" in e
               for e in errors_at(capsys, project, "lab.yaml", line))


@pytest.mark.parametrize("choice", ["9" * 20, "12"])
def test_a_piece_count_choice_no_text_of_that_length_can_have_is_an_error_at_it(project, capsys, choice):
    # "unhappiness" is 11 bytes, and a piece holds one at least: 12 pieces or 10^20 cannot be offered
    line = edit(project, "quiz.yaml", "choices: [1, 3, 4, 11]", f"choices: [1, 3, 4, {choice}]")
    assert any(f"{choice} pieces cannot be a choice: 'unhappiness' is 11 bytes" in e
               for e in errors_at(capsys, project, "quiz.yaml", line))
