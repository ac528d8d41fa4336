"""Lab 07 as a learner uses it, in a real Chromium at a desktop's and a phone's size: "Show it"
brings the spotlight's stage into view (designed heads and MiniLM), and a long sentence keeps every
weight on screen (it wraps; each key's percentage is under it). Shares the sites, the watched pages
(a console error fails a test) and the helpers of test_browser.py."""

from __future__ import annotations

import re

import pytest
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    _watched_context, open_lab, sentence_select, shipped, sites, watch, words,
)

pytestmark = pytest.mark.browser
SIZES = {"desktop": (1280, 800), "phone": (375, 812)}
LOAD_MS = 120_000  # MiniLM's 16 MB of base64 decoded on a shared machine
LONG = ("The old teacher who lived near the river walked slowly to the quiet market every morning "
        "and bought fresh bread and warm milk and a small cake for the children of the village before school")

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


@pytest.fixture(params=sorted(SIZES))
def sized(request, browser, watch):
    width, height = SIZES[request.param]
    ctx = _watched_context(browser, watch, width, height)
    yield ctx.new_page()
    ctx.close()
    assert not watch.problems, watch.problems


def _in_view(page, selector) -> bool:
    """Whether the element's top edge, and the rows of words under it, are on the screen."""
    return page.evaluate("""s => { const r = document.querySelector(s).getBoundingClientRect();
        return r.top >= 0 && r.top < innerHeight - 100; }""", selector)


@pytest.mark.parametrize("which", ["designed", "real"])
def test_show_it_brings_the_stage_into_view(sized, shipped, which):
    page = sized
    open_lab(page, shipped, "file")
    box = page.get_by_label("Your sentence", exact=True)
    box.evaluate("b => b.scrollIntoView({block: 'start'})")  # the learner scrolls down to the box, below the spotlight
    box.click()
    # The box's first focus draws the model choice (own-ui.js), which can move the page: wait for
    # it, and put the box back at the top, as a learner reading on would
    expect(page.get_by_label(re.compile("the real model, MiniLM"))).to_be_attached(timeout=30_000)
    box.evaluate("b => b.scrollIntoView({block: 'start'})")
    page.wait_for_function("""() => document.getElementById("sl-queries").getBoundingClientRect().top < 0""")
    assert not _in_view(page, "#sl-queries")  # the stage is off screen while they type
    if which == "real":
        page.get_by_label(re.compile("the real model, MiniLM")).check()
        expect(page.locator("#sl-own-load")).to_contain_text("MB to download", timeout=30_000)
    box.fill("My neighbour's dog chased the red ball")
    page.get_by_role("button", name="Show it").click()
    expect(sentence_select(page)).to_have_value("own", timeout=LOAD_MS)
    # Once the (smooth) scroll is over: the stage's top, its words and the links above them on screen.
    page.wait_for_function("""() => { const r = document.getElementById("sl-queries").getBoundingClientRect();
        return document.getElementById("sl-stage").getBoundingClientRect().top >= 0 && r.bottom <= innerHeight; }""")
    expect(words(page).first).to_be_in_viewport()


def test_a_long_sentence_keeps_every_weight_on_screen(sized, shipped):
    page = sized
    open_lab(page, shipped, "file")
    box = page.get_by_label("Your sentence", exact=True)
    box.click()
    box.fill(LONG)
    box.press("Enter")
    expect(sentence_select(page)).to_have_value("own")
    expect(words(page)).to_have_count(len(LONG.split()))
    width = page.viewport_size["width"]
    for query in (len(LONG.split()) - 1, 3):  # the learner clicks the last word, then one near the start
        words(page).nth(query).click()
        expect(words(page).nth(query)).to_have_attribute("aria-pressed", "true")
        page.wait_for_timeout(0)
        shown = page.evaluate("""() => {
            const line = document.querySelector("#sl-queries").parentNode;
            const labels = [...document.querySelectorAll("#sl-arcs .sl-links text")].map(t => {
                const r = t.getBoundingClientRect();
                return { text: t.textContent, left: r.left, right: r.right };
            });
            const wordsAt = [...document.querySelectorAll("#sl-queries button.word")].map(b => {
                const r = b.getBoundingClientRect(); return [r.left, r.right]; });
            const table = [...document.querySelectorAll("#sl-readout tbody .sl-pct")].map(td => td.textContent);
            return { scrolls: line.scrollWidth > line.clientWidth + 1, labels, wordsAt, table };
        }""")
        assert not shown["scrolls"]  # no word is off to the side: the sentence wraps
        assert all(0 <= left and right <= width for left, right in shown["wordsAt"])
        # Every key's weight is written under it, on screen, and is the readout table's number.
        assert [label["text"] for label in shown["labels"]] == shown["table"]
        assert all(re.fullmatch(r"\d+%", label["text"]) for label in shown["labels"])
        assert all(0 <= label["left"] and label["right"] <= width for label in shown["labels"])
