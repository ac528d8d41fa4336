"""Hostile input that once gave a traceback or a silently wrong site: each is now a clear
``path:line:col: error:`` (exit 1) at the value that is wrong."""

from __future__ import annotations

import re

import pytest
from conftest import run_labs

POSITIONED = re.compile(r"^\S[^:]*:\d+:\d+: error: \S")
ALPHA = "content/labs/alpha/lab.yaml"


def _edit(path, old, new):
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _error_at(capsys, prefix: str, words: str) -> None:
    code, _, err = run_labs(capsys, "check")
    assert code == 1, err
    errors = [line for line in err if ": error: " in line]
    assert errors and all(POSITIONED.match(line) for line in errors), err
    assert any(line.startswith(prefix) and words in line for line in errors), err


@pytest.fixture
def sampling_site(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert run_labs(capsys, "init", "s")[0] == 0
    monkeypatch.chdir(tmp_path / "s")
    return tmp_path / "s" / "content/labs/first-sampling-lab"


@pytest.mark.parametrize("old,new", [
    ("mat: 4.1", "mat: " + "9" * 400), ("max: 3,", "max: " + "9" * 400 + ","), ("step: 0.1", "step: " + "9" * 309),
    ("temperature: 1}", "temperature: -" + "9" * 400 + "}"), ("max: 3,", "max: " + "9" * 5000 + ","),
], ids=["logit", "max", "step", "default-temperature", "5000-digits"])
def test_an_integer_above_float_range_is_an_error_at_it(sampling_site, capsys, old, new):
    _edit(sampling_site / "lab.yaml", old, new)
    _error_at(capsys, "content/labs/first-sampling-lab/lab.yaml:", "too large")


def test_a_huge_dial_choice_is_an_error_at_it(sampling_site, capsys):
    _edit(sampling_site / "quiz.yaml", "choices: [0.5, 1, 2]", "choices: [0.5, 1, " + "9" * 400 + "]")
    _error_at(capsys, "content/labs/first-sampling-lab/quiz.yaml:", "too large")


@pytest.mark.parametrize("written", ["[cat-mat]", "{a: b}"], ids=["list", "mapping"])
def test_a_sentence_id_that_is_a_list_or_mapping_is_an_error(project, capsys, written):
    _edit(project / ALPHA, "    - id: cat-mat", f"    - id: {written}")
    _error_at(capsys, ALPHA + ":", "'id'")


def test_number_null_is_an_error_not_a_dropped_lab(project, capsys):
    _edit(project / ALPHA, "number: 1", "number: null")
    _error_at(capsys, ALPHA + ":2:", "'number' must be a whole number")


@pytest.mark.parametrize("url", ["https://example.org/labs/?q=1", "https://example.org/labs/#top",
                                 "https://example.org/?a=b#c"])
def test_a_base_url_with_a_query_or_fragment_is_an_error(project, capsys, url):
    _edit(project / "content/site.yaml", "base_url: https://example.org/labs/", f"base_url: {url}")
    _error_at(capsys, "content/site.yaml:", "no ?query or #fragment")
    code, _, err = run_labs(capsys, "build", "--base-url", url)
    assert code == 2, err


@pytest.mark.parametrize("escape", ["\\0", "\\x1b", "\\a", "\\x85"])
def test_a_control_character_from_a_yaml_escape_is_an_error(project, capsys, escape):
    _edit(project / ALPHA, "title: Alpha", f'title: "Al{escape}pha"')
    _error_at(capsys, ALPHA + ":3:", "control character")


@pytest.mark.parametrize("text, words", [
    ('{"entries": {}, "format": "attention-labs/real-heads-cache", "version": ' + "9" * 5001 + "}",
     "thousands of digits"),
    ("[" * 100_000 + "]" * 100_000, "nested"),
], ids=["5001-digits", "100000-nested"])
def test_an_unreadable_real_heads_cache_is_an_error_at_the_file(tmp_path, text, words):
    from generator.errors import ContentError
    from generator.kinds.attention.cache import load_cache

    path = tmp_path / "real-heads.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ContentError) as info:
        load_cache(path)
    [diagnostic] = info.value.diagnostics
    assert diagnostic.path.endswith("real-heads.json") and words in diagnostic.message, diagnostic


def test_a_fifo_as_the_real_heads_cache_is_an_error_not_a_hang(tmp_path):
    import os

    from generator.errors import ContentError
    from generator.kinds.attention.cache import load_cache

    path = tmp_path / "real-heads.json"
    os.mkfifo(path)
    with pytest.raises(ContentError, match="named pipe"):
        load_cache(path)


def test_a_multi_line_math_error_prints_one_positioned_line(project, capsys):
    from generator.errors import Diagnostic

    assert "\n" not in str(Diagnostic("a.md", 1, 2, "bad math:\n  \\frac{1}{\n  here"))
    gist = project / "content/labs/alpha/gist.md"
    gist.write_text(gist.read_text(encoding="utf-8") + "\n$$\n\\frac{1}{\n\\begin{x}\n$$\n", encoding="utf-8")
    code, _, err = run_labs(capsys, "check")
    assert code == 1 and all(POSITIONED.match(line) for line in err[:-1]), err


def test_the_lab_link_rewrite_leaves_inline_code_alone():
    from generator.prose.markdown_render import render_markdown

    html = render_markdown('Write `<a href="lab:beta">` or [Beta](lab:beta).',
                           lambda href: "../beta/" if href.startswith("lab:") else None).html
    assert 'href="../beta/"' in html and "lab:beta" in html.split("<code>")[1].split("</code>")[0], html
