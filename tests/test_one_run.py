"""Every mistake of a run in that run: a lab with a load error is still computed and link-checked
as far as it loaded (README: "all errors of a run together")."""

from __future__ import annotations

import re

from conftest import run_labs

POSITIONED = re.compile(r"^\S[^:]*:\d+:\d+: error: \S")
ALPHA = "content/labs/alpha/"


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_key_typo_a_wrong_answer_key_a_broken_anchor_and_a_false_claim_in_one_run(project, capsys):
    _edit(project / ALPHA / "quiz.yaml", "      - text: This one\n        correct: true",
          "      - text: This one\n        corect: true")  # the load error
    _edit(project / ALPHA / "quiz.yaml", "answer: cat", "answer: on")  # wrong answer key
    _edit(project / ALPHA / "gist.md", "[all labs](index:)", "[all labs](index:) and [here](#nowhere)")  # anchor
    _edit(project / "content/labs/beta/lab.yaml", "- cat -> chat", "- cat -> dort")  # a false claim
    for argv in (("build",), ("build", "--no-cache"), ("check",)):
        code, _, err = run_labs(capsys, *argv)
        assert code == 1, err
        errors = [line for line in err if ": error: " in line]
        assert all(POSITIONED.match(line) for line in errors), err
        assert any(line.startswith(f"{ALPHA}quiz.yaml:") and "corect" in line for line in errors), err
        assert any(line.startswith(f"{ALPHA}quiz.yaml:") and "'on'" in line for line in errors), err
        assert any(line.startswith(f"{ALPHA}gist.md:") and "#nowhere" in line for line in errors), err
        assert any(line.startswith("content/labs/beta/lab.yaml:") and "dort" in line for line in errors), err
    assert not (project / "site").exists()


def test_a_lab_with_a_load_error_is_never_taken_from_the_build_cache(project, capsys):
    _edit(project / ALPHA / "quiz.yaml", "      - text: This one\n        correct: true",
          "      - text: This one\n        corect: true")
    for _ in range(2):  # the second run must report the same: nothing of the lab was stored
        code, _, err = run_labs(capsys, "build")
        assert code == 1 and any("corect" in line for line in err), err
