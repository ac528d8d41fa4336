""""Your sentence" in a real Chromium: typed, computed in the page, checked against
``labs attention --designed --json``; guessed tags as editable chips; limits; the URL hash; axe.
Shares the sites, the watched pages (a console error fails a test) and the helpers of test_browser.py."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    LAB, _watched_context, axe, axe_clean, context, drawn, head_select, open_lab, page, percentages, shipped, sites, watch, words,
)

from generator.kinds.attention import teaching
from generator.kinds.attention.realheads import largest_remainder_array
from generator.cli import main
from generator.kinds.attention.commands import designed_heads

pytestmark = pytest.mark.browser
TYPED = "A dog/NOUN chased/VERB the ball/NOUN in the park/NOUN"

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _cli(capsys, *args) -> dict:
    assert main(["attention", "--designed", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def _type(page, text, source=None):
    box = page.get_by_label("Your sentence", exact=True)
    box.click()
    if source is not None:
        page.get_by_label("Source (for cross-attention)").fill(source)
    box.fill(text)
    box.press("Enter")


def _shown(page, text):
    expect(page.locator("#sl-sentence")).to_have_value("own")
    expect(page.locator("#sl-note")).to_contain_text("computed in your browser")


@pytest.mark.parametrize("where", ["file", "http"])
def test_a_typed_sentence_shows_what_the_cli_computes(page, shipped, capsys, where):
    expected = _cli(capsys, TYPED)
    open_lab(page, shipped, where)
    _type(page, TYPED)
    _shown(page, TYPED)
    assert words(page).all_inner_texts() == expected["tokens"]
    for head in designed_heads(False):
        head_select(page).select_option(head)
        pct = largest_remainder_array(np.asarray(expected["heads"][head]), 100).tolist()
        for i, word in enumerate(expected["tokens"]):
            words(page).nth(i).click()
            expect(page.locator("#sl-caption")).to_contain_text(f"Where “{word}” looks — {teaching.head(head).name}")
            shown = percentages(page)
            assert shown == pct[i] and sum(shown) == 100, (head, word)
    # The head strip and the four moves work for it too.
    page.locator("#sl-hood").scroll_into_view_if_needed()
    page.get_by_role("button", name="Mix and add").click()
    expect(page.locator("#sl-step")).to_contain_text("before → after")


def test_cross_and_causal_sentences_match_the_cli(page, shipped, capsys):
    open_lab(page, shipped, "file")
    text, source = "The black/ADJ cat/NOUN sleeps/VERB", "Le/DET chat/NOUN noir/ADJ dort/VERB"
    expected = _cli(capsys, "--source", source, text)
    _type(page, text, source)
    _shown(page, text)
    head_select(page).select_option("alignment")
    for i in range(len(expected["tokens"])):
        words(page).nth(i).click()
        assert percentages(page) == largest_remainder_array(np.asarray(expected["heads"]["alignment"][i]), 100).tolist()
    page.get_by_label("Source (for cross-attention)").fill("")
    page.get_by_label("Causal", exact=True).check()
    _type(page, TYPED)
    expected = _cli(capsys, "--causal", TYPED)
    head_select(page).select_option("syntax")
    words(page).nth(3).click()
    assert percentages(page) == largest_remainder_array(np.asarray(expected["heads"]["syntax"][3]), 100).tolist()
    assert "c=1" in page.evaluate("location.hash")


def test_an_untagged_sentence_gets_guessed_editable_tags(page, shipped, capsys):
    open_lab(page, shipped, "file")
    _type(page, "The grey man walked slowly to Paris")
    _shown(page, "")
    chip = page.get_by_label(re.compile("^Tag of “grey”"))
    expect(chip).to_have_value("NOUN")
    expect(chip).to_have_attribute("aria-label", re.compile(r"\(guessed\)"))
    expect(page.get_by_label(re.compile("^Tag of “walked”"))).to_have_value("VERB")
    expect(page.get_by_label(re.compile("^Tag of “slowly”"))).to_have_value("ADV")
    expect(page.get_by_label(re.compile("^Tag of “Paris”"))).to_have_value("PROPN")
    expect(page.get_by_label(re.compile("^Tag of “The”"))).to_have_value("DET")
    # By keyboard: focus the chip, pick ADJ; the view recomputes and the text says grey/ADJ.
    chip.focus()
    chip.select_option("ADJ")
    expect(page.get_by_label("Your sentence", exact=True)).to_have_value("The grey/ADJ man walked slowly to Paris")
    expect(page.get_by_label(re.compile("^Tag of “grey”"))).to_be_focused()  # the chips were redrawn, the focus kept
    expected = _cli(capsys, "The grey/ADJ man/NOUN walked/VERB slowly/ADV to Paris/PROPN")
    words(page).nth(1).click()
    assert percentages(page) == largest_remainder_array(np.asarray(expected["heads"]["syntax"][1]), 100).tolist()


@pytest.mark.parametrize(("text", "message"), [
    ("", "has no words"),
    ("   ", "has no words"),
    (" ".join(["word"] * 61), "at most 60 words; this one has 61"),
    ("I love 🙂 🎉", "Your sentence: “🙂”, “🎉” are not words the model can read: it reads words"),  # said once, of both
    (("the cat/NOUN sat/VERB on the mat/NOUN. " * 60)[:2000], "at most 60 words; this one has"),
    ("x" * 2001, "2,001 characters"),
    ("the cat/noun", "tags are written in capitals"),
], ids=["empty", "spaces", "61-words", "emoji", "2000-chars", "2001-chars", "lowercase-tag"])
def test_limits_give_a_clear_message(page, shipped, text, message):
    open_lab(page, shipped, "file")
    _type(page, text)
    expect(page.locator(".sl-own-msg")).to_contain_text(message)
    assert page.locator(".sl-own-msg").text_content().count("the model can read") <= 1  # one problem, said once
    expect(page.locator("#sl-sentence")).not_to_have_value("own")


def test_other_scripts_get_a_view_and_a_note(page, shipped):
    open_lab(page, shipped, "file")
    _type(page, "Кошка сидит на ковре")
    _shown(page, "")
    assert words(page).all_inner_texts() == ["Кошка", "сидит", "на", "ковре"]
    expect(page.locator(".sl-own-msg")).to_contain_text("guessed tag NOUN")


def test_the_sentence_lives_in_the_hash_back_forward_and_links(page, shipped, browser, watch):
    open_lab(page, shipped, "file")
    assert not any("/own." in r for r in watch.requests), "own.js must wait for the box"
    _type(page, TYPED)
    _shown(page, TYPED)
    assert any("/own." in r for r in watch.requests)
    words(page).nth(2).click()
    _type(page, "The cat/NOUN sat/VERB")
    expect(words(page)).to_have_count(3)
    expect(page).to_have_url(re.compile(r"t=The\+cat%2FNOUN\+sat%2FVERB"))
    page.go_back()
    expect(words(page)).to_have_count(8)
    expect(page.get_by_label("Your sentence", exact=True)).to_have_value(TYPED)
    page.go_forward()
    expect(words(page)).to_have_count(3)
    link = page.evaluate("location.href")
    other = browser.new_context().new_page()
    try:
        other.goto(link)
        expect(other.locator("#sl-sentence")).to_have_value("own")
        expect(other.locator("#sl-queries button.word")).to_have_count(3)
        expect(other.locator("#sl-caption")).to_contain_text("Where “sat” looks")  # the query came along
    finally:
        other.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_with_the_box_in_use(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    open_lab(page, shipped, "http")
    _type(page, "The grey man walked slowly to Paris", "Le vieil homme")
    _shown(page, "")
    page.get_by_label(re.compile("^Tag of “grey”")).focus()
    drawn(page)  # judged as drawn, not dimmed while a file beside the page loads
    axe_clean(page, axe)
