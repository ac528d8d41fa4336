"""The ``labs`` command: exit codes (0 ok, 1 content/build errors, 2 usage), exact output lines.

Runs ``generator.cli.main(argv)`` in-process with capsys, from a temporary working directory
holding copies of the fixture content and theme; one real subprocess checks the entry point.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_labs as run


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SECONDS = r"\d+\.\d\d s"


def edit(path: Path, old: str, new: str) -> str:
    """Replace the first ``old`` in ``path`` with ``new``; the edited text."""
    text = path.read_text(encoding="utf-8")
    assert old in text
    text = text.replace(old, new, 1)
    path.write_text(text, encoding="utf-8")
    return text


def where(text: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the ``|`` in the first ``needle`` in ``text``."""
    before, _, after = needle.partition("|")
    index = text.index(before + after) + len(before)
    return text.count("\n", 0, index) + 1, index - text.rfind("\n", 0, index)


# -- help and usage -------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["", "build", "check", "new", "serve"], ids=lambda c: c or "labs")
def test_help_everywhere(capsys, command):
    code, out, err = run(capsys, *([command] if command else []), "--help")
    assert (code, err) == (0, [])
    assert out[0].startswith(f"usage: labs {command}".rstrip() + " ")


def test_help_lists_the_commands(capsys):
    _, out, _ = run(capsys, "--help")
    text = "\n".join(out)
    for command in ("build", "check", "new", "serve"):
        assert re.search(rf"^\s+{command}\s+\S", text, re.M), f"{command} missing from --help"


def test_help_through_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "generator", "--help"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("usage: labs ")


@pytest.mark.parametrize("argv, last_line", [
    ([], "labs: error: the following arguments are required: COMMAND"),
    (["bild"], "labs: error: argument COMMAND: invalid choice: 'bild' (choose from "),
    (["build", "--bogus"], "labs: error: unrecognized arguments: --bogus"),
    (["new"], "labs new: error: the following arguments are required: SLUG"),
    (["build", "--base-url", "example.org"],
     "labs build: error: argument --base-url: 'example.org' is not an absolute http(s) URL such as "
     "https://example.org/labs/"),
    (["serve", "--port", "99999"],
     "labs serve: error: argument --port: 99999 is not a port: use 1-65535, or 0 for any free port"),
    (["serve", "--port", "-5"],
     "labs serve: error: argument --port: -5 is not a port: use 1-65535, or 0 for any free port"),
    (["serve", "--port", "80a"], "labs serve: error: argument --port: '80a' is not a port number"),
], ids=["no-command", "unknown-command", "unknown-option", "missing-argument", "bad-base-url", "port-too-big",
        "port-negative", "port-not-a-number"])
def test_usage_errors_exit_2(project, capsys, argv, last_line):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == []
    assert err[0].startswith("usage: labs")
    assert err[-1] == last_line or (last_line.endswith("(choose from ") and err[-1].startswith(last_line))
    assert not (project / "site").exists()


# -- build ------------------------------------------------------------------------------------


def test_build_prints_one_line_per_stage_and_a_summary(project, capsys):
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, err) == (0, [])
    patterns = [
        rf"loaded 2 labs from content/ \({SECONDS}\)",
        rf"computed 2 labs: 2 attention \({SECONDS}\)",
        rf"rendered 8 pages \({SECONDS}\)",
        rf"built 8 pages, 2 labs in {SECONDS} → site/",
    ]
    assert len(out) == len(patterns) and all(re.fullmatch(p, line) for p, line in zip(patterns, out)), out
    assert (project / "site/labs/alpha/index.html").is_file()


def test_build_summary_counts_one_lab_in_the_singular(project, capsys):
    shutil.rmtree(project / "content/labs/beta")
    edit(project / "content/site.yaml", "  - beta\n", "")
    for path in ("content/labs/alpha/gist.md", "content/labs/alpha/details.md", "content/labs/alpha/faq.yaml"):
        text = (project / path).read_text(encoding="utf-8")
        (project / path).write_text(re.sub(r"\[([^]]*)\]\(lab:beta[^)]*\)", r"\1", text), encoding="utf-8")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, err) == (0, [])
    assert out[0].startswith("loaded 1 lab from content/ (")
    assert re.fullmatch(rf"built 6 pages, 1 lab in {SECONDS} → site/", out[-1]), out


def test_content_errors_exit_1_with_every_error_line(project, capsys):
    quiz = edit(project / "content/labs/alpha/quiz.yaml", "type: multiple", "type: multi")
    lab = edit(project / "content/labs/alpha/lab.yaml", "topic: basics", "topic: basic")
    (q_line, q_col), (l_line, l_col) = where(quiz, "type: |multi"), where(lab, "topic: |basic")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, out) == (1, [])
    assert err == [
        f"content/labs/alpha/lab.yaml:{l_line}:{l_col}: error: unknown topic 'basic' (did you mean 'basics'?); "
        "topics are declared in content/site.yaml",
        f"content/labs/alpha/quiz.yaml:{q_line}:{q_col}: error: unknown question type 'multi' (did you mean "
        "'multiple'?); labs of kind 'attention' have: single, multiple, word",
        "2 errors; nothing was written",
    ]
    assert not (project / "site").exists()


def test_a_key_typo_a_broken_anchor_and_a_wrong_answer_key_come_out_in_one_run(project, capsys):
    beta_quiz = edit(project / "content/labs/beta/quiz.yaml", "correct: true", "corect: true")
    beta_gist = edit(project / "content/labs/beta/gist.md", "lab:alpha#details", "lab:alpha#detials")
    alpha_quiz = edit(project / "content/labs/alpha/quiz.yaml", "answer: cat", "answer: mat")
    alpha_gist = edit(project / "content/labs/alpha/gist.md", "(index:)", "(#nowhere)")
    (t_line, t_col), (b_line, b_col) = where(beta_quiz, "|corect: true"), where(beta_gist, "](|lab:alpha#detials)")
    (a_line, a_col), (n_line, n_col) = where(alpha_quiz, "answer: |mat"), where(alpha_gist, "](|#nowhere)")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, out) == (1, [])
    assert err[0] == (f"content/labs/alpha/gist.md:{n_line}:{n_col}: error: link to a missing anchor: #nowhere")
    assert err[1].startswith(f"content/labs/alpha/quiz.yaml:{a_line}:{a_col}: error: answer key 'mat' is wrong")
    assert err[2] == (f"content/labs/beta/gist.md:{b_line}:{b_col}: error: link to a missing anchor: "
                      "../alpha/#detials"), "a lab with a load error is link-checked as far as it loaded"
    assert err[3].startswith(f"content/labs/beta/quiz.yaml:{t_line}:{t_col}: error: unknown key 'corect'")
    assert err[4:] == ["4 errors; nothing was written"]
    assert not (project / "site").exists()


def test_a_computed_error_comes_after_the_load_line(project, capsys):
    quiz = edit(project / "content/labs/alpha/quiz.yaml", "answer: cat", "answer: mat")
    line, column = where(quiz, "answer: |mat")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1
    assert len(out) == 1 and out[0].startswith("loaded 2 labs from content/")
    assert err == [
        f"content/labs/alpha/quiz.yaml:{line}:{column}: error: answer key 'mat' is wrong: in head 'syntax', "
        "'sat' attends most to 'cat' (55%), not 'mat' (30%)",
        "1 error; nothing was written",
    ]


def test_build_errors_exit_1_with_one_line(project, capsys):
    (project / "site").mkdir()
    (project / "site/keep.txt").write_text("mine", encoding="utf-8")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, out) == (1, [])
    assert err == ["site: error: refusing to replace a folder that was not built by labs (no .labs-build in it); "
                   "empty it or choose another --output"]
    assert (project / "site/keep.txt").read_text(encoding="utf-8") == "mine"


def test_an_unrepresentable_source_date_epoch_is_one_error(project, capsys, monkeypatch):
    code, _, _ = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 0
    before = {p: p.read_bytes() for p in (project / "site").rglob("*") if p.is_file()}
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "99999999999999")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1
    assert err == ["error: SOURCE_DATE_EPOCH=99999999999999 is not a date this machine can represent"]
    assert {p: p.read_bytes() for p in (project / "site").rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("argv, line", [
    (["--content", "nowhere"], "nowhere:1:1: error: content folder not found (run `labs init DIR` to start a site)"),
    (["--theme", "nowhere"], "nowhere: error: theme folder not found"),
    (["--theme", "content/site.yaml"], "content/site.yaml: error: theme folder not found"),
], ids=["no-content", "no-theme", "theme-is-a-file"])
def test_missing_folders_are_errors_not_tracebacks(project, capsys, argv, line):
    base = {"--content": "content", "--theme": "theme"}
    base.update(dict(zip(argv[::2], argv[1::2])))
    code, out, err = run(capsys, "build", *[x for kv in base.items() for x in kv], "--output", "site")
    assert code == 1
    assert err[0] == line


# -- check ----------------------------------------------------------------------------------------


def test_check_validates_everything_and_writes_nothing(project, capsys):
    code, out, err = run(capsys, "check", "--content", "content", "--theme", "theme")
    assert (code, err) == (0, [])
    assert re.fullmatch(rf"ok: 2 labs, 8 pages checked in {SECONDS} — no errors", out[-1]), out
    assert sorted(os.listdir(project)) == ["content", "theme"]


def test_check_reports_the_same_errors_as_build(project, capsys):
    text = edit(project / "content/labs/alpha/details.md", "[FAQ](#faq)", "[FAQ](#faqs)")
    line, column = where(text, "(|#faqs)")
    build = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    check = run(capsys, "check", "--content", "content", "--theme", "theme")
    assert build[0] == check[0] == 1
    assert build[2] == check[2] == [
        f"content/labs/alpha/details.md:{line}:{column}: error: link to a missing anchor: #faqs",
        "1 error; nothing was written",
    ]


# -- the symlink policy for a custom theme ------------------------------------------------------


@pytest.mark.parametrize("link, points_to", [
    ("theme/static/secret.txt", "secret.txt"),
    ("theme/static/extra", "outside-folder"),
    ("theme/templates", "outside-folder"),
], ids=["file", "folder-inside-static", "top-folder"])
def test_a_theme_link_out_of_the_theme_is_an_error_naming_it(project, capsys, link, points_to):
    (project / "secret.txt").write_text("not for the site", encoding="utf-8")
    (project / "outside-folder").mkdir()
    (project / "outside-folder/secret.css").write_text("body{}", encoding="utf-8")
    target = project / link
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(project / points_to)
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1
    assert f"{link}:1:1: error: {link} is a symbolic link to {points_to}, outside theme/" in err, err
    assert not (project / "site").exists()


def test_theme_links_that_stay_inside_the_theme_are_published(project, capsys):
    (project / "theme/shared").mkdir()
    (project / "theme/shared/robots-extra.txt").write_text("hello", encoding="utf-8")
    (project / "theme/static").mkdir(exist_ok=True)
    (project / "theme/static/hello.txt").symlink_to(project / "theme/shared/robots-extra.txt")
    (project / "theme/static/loop").symlink_to(project / "theme/static")  # a loop: read once, not forever
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, err) == (0, [])
    assert (project / "site/assets/hello.txt").read_text(encoding="utf-8") == "hello"


# -- many errors in one file -------------------------------------------------------------------


def _faq_with_mistakes(project: Path, n: int) -> None:
    (project / "content/labs/alpha/faq.yaml").write_text(
        "".join(f"- question: Question {i}?\n  answr: no\n" for i in range(n)), encoding="utf-8")


def test_errors_are_capped_at_20_per_file_with_one_line_for_the_rest(project, capsys):
    _faq_with_mistakes(project, 30)  # two mistakes each: an unknown key and a missing answer
    edit(project / "content/labs/alpha/lab.yaml", "topic: basics", "topic: basic")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1
    faq = [line for line in err if line.startswith("content/labs/alpha/faq.yaml:")]
    assert len(faq) == 21 and all(": error: " in line for line in faq[:20])
    assert faq[20] == "content/labs/alpha/faq.yaml: … and 40 more errors in this file"
    assert any(line.startswith("content/labs/alpha/lab.yaml:") for line in err)  # other files still shown
    assert err[-1] == "61 errors; nothing was written"  # the count is of every error


def test_twenty_errors_in_a_file_print_without_a_more_line(project, capsys):
    _faq_with_mistakes(project, 10)
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    faq = [line for line in err if line.startswith("content/labs/alpha/faq.yaml:")]
    assert code == 1 and len(faq) == 20 and not any("more error" in line for line in err)
    # The lab is still checked as far as it loaded: the FAQ item details.md links to is gone.
    assert any(line.startswith("content/labs/alpha/details.md:") and "#custom-id" in line for line in err), err


def test_a_first_sentence_that_blows_the_page_budget_is_a_warning_at_its_line(project, capsys):
    words = " ".join(f"w{i}/ADV" for i in range(54))  # 60 words, the most a sentence may have
    text = edit(project / "content/labs/alpha/lab.yaml", "      text: The cat/NOUN sat/VERB on the mat/NOUN\n",
                f"      text: The cat/NOUN sat/VERB on the mat/NOUN {words}\n")
    line, col = where(text, f"text: |The cat/NOUN sat/VERB on the mat/NOUN {words}")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 0
    assert not any(": warning: " in o for o in out), out  # warnings go to stderr, with the errors
    warnings = [e for e in err if ": warning: " in e]
    assert len(warnings) == 1, err
    assert re.fullmatch(rf"content/labs/alpha/lab.yaml:{line}:{col}: warning: the first visit of labs/alpha/ weighs "
                        r"\d+ KB, over the 115 KB page budget, \d+ KB of it this sentence's numbers \(the first "
                        r"sentence's are embedded in the page\): shorten it, or put a shorter sentence first",
                        warnings[0]), warnings[0]


def test_a_short_first_sentence_gets_no_weight_warning(project, capsys):
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 0 and not any("warning" in line for line in out + err)


# -- content/static/: extra files shipped as they are -----------------------------------------------


def test_content_static_is_copied_into_the_site_root_as_it_is(project, capsys):
    static = project / "content/static"
    (static / "img").mkdir(parents=True)
    (static / "CNAME").write_text("labs.example.org\n", encoding="utf-8")
    (static / ".nojekyll").write_bytes(b"")
    (static / "img/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\xff")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert (code, err) == (0, [])
    assert (project / "site/CNAME").read_text(encoding="utf-8") == "labs.example.org\n"
    assert (project / "site/.nojekyll").read_bytes() == b""
    assert (project / "site/img/logo.png").read_bytes() == b"\x89PNG\r\n\x1a\n\0\xff"
    (static / "CNAME").write_text("other.example.org\n", encoding="utf-8")  # a rebuild ships the new one
    assert run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")[0] == 0
    assert (project / "site/CNAME").read_text(encoding="utf-8") == "other.example.org\n"


@pytest.mark.parametrize("rel", ["index.html", "labs/alpha/index.html", ".labs-build", "robots.txt"])
def test_a_static_file_that_would_replace_a_generated_one_is_an_error(project, capsys, rel):
    code, _, _ = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    before = {p: p.read_bytes() for p in (project / "site").rglob("*") if p.is_file()}
    target = project / "content/static" / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("mine", encoding="utf-8")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1
    assert err[0].startswith(f"content/static/{rel}:1:1: error: static/{rel} would replace {rel}, "), err
    assert {p: p.read_bytes() for p in (project / "site").rglob("*") if p.is_file()} == before


def test_a_static_link_out_of_content_is_an_error(project, capsys):
    (project / "secret.txt").write_text("no", encoding="utf-8")
    (project / "content/static").mkdir()
    (project / "content/static/leak.txt").symlink_to(project / "secret.txt")
    code, out, err = run(capsys, "build", "--content", "content", "--theme", "theme", "--output", "site")
    assert code == 1
    assert err[0] == ("content/static/leak.txt:1:1: error: content/static/leak.txt is a symbolic link to secret.txt, "
                      "outside content/"), err


def test_output_cut_short_by_the_reader_is_not_a_traceback(monkeypatch):
    """`labs kinds | head -c 1`: the reader has gone; the command stops quietly (exit 1), no traceback."""
    import os

    from generator.cli import main

    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: the first write fails with EPIPE
    out = os.fdopen(write_end, "w")
    monkeypatch.setattr("sys.stdout", out)
    try:
        assert main(["kinds"]) == 1
    finally:
        out.close()
