"""The spotlight's door for code loaded later (spotlight.js: ``setOwnSentence``,
``clearOwnSentence``, ``update``, ``view``, ``state``), in a real Chromium.

A sentence made in the browser may carry the model's attention instead of designed heads, in the
shape of ``Labs.data.realHeads[id]``: here a synthetic one (seeded per-mille rows, as an in-page
model would give) goes through the door, and the Head select's 72 real heads, the model grid,
the pattern view and the [CLS]/[SEP] switch must work for it as for the lab's own sentences.
Shares the sites, the watched pages (a console error fails a test) and the helpers of test_browser.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    _watched_context, axe, axe_clean, context, drawn, head_select, open_lab, page, percentages, sentence_select, shipped, sites,
    watch, words,
)

from generator.kinds.attention.realheads import largest_remainder_array

pytestmark = pytest.mark.browser
WORDS = ["[CLS]", "dogs", "chase", "the", "red", "ball", "[SEP]"]
SPECIAL = [True, False, False, False, False, False, True]
LAYERS, HEADS = 6, 12  # all-MiniLM-L6-v2, the shipped lab's model

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _attention(seed: int = 7) -> list:
    """[layers][heads][n][n] per-mille weights, each row summing to exactly 1000, as the real
    heads' scripts carry them (largest remainder of a seeded softmax)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 2, (LAYERS, HEADS, len(WORDS), len(WORDS)))
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    return largest_remainder_array(weights, 1000).tolist()


def _sentence(**extra) -> dict:
    return {"label": "Your sentence: dogs chase the red ball", "note": "A sentence the test made in the page.",
            "own": "m=door-test", "real": {"words": WORDS, "special": SPECIAL, "attention": _attention()}, **extra}


def _door_ready(page):
    """The door is ready once a module that sets "your sentence" has started: the box's code,
    fetched (with spotlight-more.js, which checks a sentence) when the box gets the focus."""
    page.get_by_label("Your sentence", exact=True).focus()
    for _ in range(100):
        if page.evaluate("!!Labs.code.own"):
            break
        page.wait_for_timeout(50)
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")


def _set(page, sentence: dict, patch: dict | None = None):
    page.evaluate("([S, patch]) => Labs.test.spotlight.door.setOwnSentence(S, patch)", [sentence, patch or {}])


def _expected(layer: int, head: int, q: int) -> list[int]:
    return largest_remainder_array(np.asarray(_attention()[layer][head][q]) / 1000, 100).tolist()


@pytest.mark.parametrize("where", ["file", "http"])
def test_a_sentence_with_only_real_heads_shows_like_the_labs_own(page, shipped, where):
    open_lab(page, shipped, where)
    _door_ready(page)
    _set(page, _sentence(), {"h": "L2H5", "q": 2})
    expect(sentence_select(page)).to_have_value("own")
    expect(page.locator('#sl-sentence optgroup[label="Yours"] option')).to_have_text("Your sentence: dogs chase the red ball")
    expect(page).to_have_url(re.compile(r"#s=own&h=L2H5&q=2&scale=1&special=1&m=door-test$"))
    assert words(page).all_inner_texts() == WORDS
    expect(page.locator("#sl-caption")).to_have_text("Where “chase” looks — layer 2, head 5")
    assert percentages(page) == _expected(2, 5, 2)
    expect(page.locator("#sl-note")).to_have_text("A sentence the test made in the page.")

    # The Head select offers the 72 real heads and no teaching heads; the strip of teaching heads is gone.
    expect(head_select(page).locator("option")).to_have_count(LAYERS * HEADS)
    expect(head_select(page).locator('optgroup[label="Teaching heads"]')).to_have_count(0)
    expect(page.locator("#sl-multiples")).to_be_hidden()
    head_select(page).select_option("L5H11")
    expect(page.locator("#sl-caption")).to_have_text("Where “chase” looks — layer 5, head 11")
    assert percentages(page) == _expected(5, 11, 2)

    # The model grid: showing a real head opens it, on this sentence's attention, computed in the page.
    expect(page.locator("#sl-model")).to_have_attribute("open", "")
    expect(page.locator("#sl-model-intro")).to_contain_text("computed in your browser")
    expect(page.locator("#sl-grid button.sl-cell")).to_have_count(LAYERS * HEADS)
    page.locator('#sl-grid button.sl-cell[data-head="L0H3"]').click()
    expect(head_select(page)).to_have_value("L0H3")
    assert percentages(page) == _expected(0, 3, 2)

    # Hiding [CLS] and [SEP] leaves the other weights as they are.
    page.get_by_role("switch", name="Hide special tokens").click()
    expect(page.locator("#sl-readout tbody tr:visible th", has_text="[CLS]")).to_have_count(0)
    shown = [p for p, special in zip(_expected(0, 3, 2), SPECIAL) if not special]
    assert percentages(page) == shown
    expect(page.locator("#sl-readout tfoot tr", has_text="Shown").locator("td.sl-pct")).to_have_text(f"{sum(shown)}%")

    # The pattern view: every query of the head, without the hidden tokens.
    page.locator("#sl-pattern summary").click()
    table = page.locator("table.sl-pat")
    expect(table.locator("caption")).to_have_text("Every query of layer 0, head 3 (all-MiniLM-L6-v2)")
    expect(table.locator("tbody tr")).to_have_count(5)
    row = [p for p, special in zip(_expected(0, 3, 1), SPECIAL) if not special]  # "dogs" as the query
    assert table.locator("tbody tr").nth(0).locator("td .visually-hidden").all_inner_texts() == [f"{p}%" for p in row]


def test_its_figure_says_where_its_weights_were_computed(page, shipped):
    open_lab(page, shipped, "file")
    _door_ready(page)
    _set(page, _sentence(), {"h": "L2H5", "q": 2})
    with page.expect_download() as got:
        page.get_by_role("button", name="Download SVG").click()
    assert got.value.suggested_filename == "attention-own-L2H5-chase.svg"
    texts = [t.text for t in ET.fromstring(Path(got.value.path()).read_text(encoding="utf-8")).iter("{http://www.w3.org/2000/svg}text")]
    assert "Where “chase” looks — layer 2, head 5" in texts
    assert [f"{p}%" for p in _expected(2, 5, 2)] == [t for t in texts if re.fullmatch(r"\d+%", t)]
    assert "Attention Labs — every weight computed in your browser" in texts


def test_another_sentence_and_back_and_clearing_it(page, shipped):
    open_lab(page, shipped, "http")
    _door_ready(page)
    _set(page, _sentence(), {"h": "L1H1", "q": 4})
    sentence_select(page).select_option("cat-mat")  # its real heads are not here yet: a teaching head
    expect(page.locator("#sl-caption")).to_have_text(re.compile("— Syntax head$"))
    sentence_select(page).select_option("own")  # no teaching heads: it opens on a real one, on its first word
    expect(head_select(page)).to_have_value("L0H0")
    expect(page.locator("#sl-caption")).to_have_text("Where “dogs” looks — layer 0, head 0")
    assert words(page).all_inner_texts() == WORDS
    page.go_back()  # the history holds the own sentence's view
    expect(sentence_select(page)).to_have_value("cat-mat")
    page.go_forward()
    expect(sentence_select(page)).to_have_value("own")

    page.evaluate("Labs.test.spotlight.door.clearOwnSentence()")
    expect(page.locator('#sl-sentence option[value="own"]')).to_have_count(0)
    expect(sentence_select(page)).to_have_value("cat-mat")  # the default sentence
    assert page.evaluate("Labs.test.spotlight.state().s") == "cat-mat"


def test_a_teaching_sentence_keeps_its_heads_after_a_real_only_one(page, shipped):
    """Setting a sentence with designed heads (the box) after one with real heads only brings
    the teaching heads back: the door replaces the whole sentence, heads and all."""
    open_lab(page, shipped, "http")
    _door_ready(page)
    _set(page, _sentence())
    expect(page.locator("#sl-multiples")).to_be_hidden()
    box = page.get_by_label("Your sentence", exact=True)
    box.fill("The cat/NOUN sat/VERB")
    box.press("Enter")
    expect(sentence_select(page)).to_have_value("own")
    assert words(page).all_inner_texts() == ["The", "cat", "sat"]
    expect(page.locator("#sl-multiples")).to_be_visible()
    expect(head_select(page).locator('optgroup[label="Teaching heads"] option')).not_to_have_count(0)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_on_a_sentence_with_real_heads_only(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    open_lab(page, shipped, "http")
    _door_ready(page)
    _set(page, _sentence(), {"h": "L3H7", "q": 3})
    page.get_by_role("switch", name="Hide special tokens").click()
    page.locator("#sl-pattern summary").click()
    expect(page.locator("table.sl-pat")).to_be_visible()
    drawn(page)
    axe_clean(page, axe)


CHECK = """(S) => {
  const before = Labs.test.spotlight.state();
  try { Labs.test.spotlight.door.setOwnSentence(S); return "accepted"; }
  catch (e) { return e.message + (JSON.stringify(Labs.test.spotlight.state()) === JSON.stringify(before) ? "" : " (state changed)"); }
}"""


@pytest.mark.parametrize(("change", "message"), [
    ({"real": {"words": WORDS, "special": SPECIAL, "attention": [[[[1000]]]]}}, "real.attention must be [6][12][7][7]"),
    ({"real": {"words": WORDS, "special": SPECIAL[:-1], "attention": []}}, "real.words and real.special must be lists of the same length"),
    ({"real": None}, "it has neither designed heads nor the model's attention"),
    ({"kind": "cross"}, "reads one sentence at a time"),
    ({"kind": "sideways"}, 'kind is "sideways"'),
    ({"heads": {"mystery": {"weights": [[1]]}}}, "head mystery has no description (give it in head_meta)"),
], ids=["shape", "special", "nothing", "cross", "kind", "unknown-head"])
def test_a_malformed_sentence_is_refused_with_the_reason(page, shipped, change, message):
    open_lab(page, shipped, "http")
    _door_ready(page)
    said = page.evaluate(CHECK, _sentence(**change))
    assert said.startswith("setOwnSentence: ") and message in said and "(state changed)" not in said, said
    expect(page.locator('#sl-sentence option[value="own"]')).to_have_count(0)
