"""Lab 07 as a learner uses it, in a real Chromium at a desktop's and a phone's size: "Show it"
brings the spotlight's stage into view (designed heads and MiniLM), a long sentence keeps every
weight on screen (it wraps; each key's percentage is under it), Arabic reads right to left, and the
choice of model is on the page before the first keystroke. Shares the sites, the watched pages
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
    # The box's first focus loads its code (own-ui.js), whose hint under the form can move the page:
    # wait for it, and put the box back at the top, as a learner reading on would
    page.wait_for_function("() => !!window.Labs.code.own", timeout=30_000)
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


ARABIC = "القطة جلست على الحصيرة"  # "the cat sat on the mat", written right to left


def test_text_fields_and_the_stage_follow_the_sentences_direction(sized, shipped):
    """dir="auto": Arabic typed in either box is laid out right to left, and its words on the stage
    run from the right; an English sentence stays left to right."""
    page = sized
    open_lab(page, shipped, "file")
    direction = "s => getComputedStyle(document.querySelector(s)).direction"
    assert page.evaluate(direction, "#sl-queries") == "ltr"  # the lab's English sentence
    box = page.get_by_label("Your sentence", exact=True)
    box.fill(ARABIC)
    assert page.evaluate(direction, "#sl-own-text") == "rtl"
    page.get_by_label("Source (for cross-attention)").fill(ARABIC)
    assert page.evaluate(direction, "#sl-own-source") == "rtl"
    page.get_by_label("Source (for cross-attention)").fill("")
    box.press("Enter")
    expect(sentence_select(page)).to_have_value("own", timeout=30_000)
    expect(words(page)).to_have_count(len(ARABIC.split()))
    assert page.evaluate(direction, "#sl-queries") == "rtl"
    first, second = (words(page).nth(i).bounding_box() for i in (0, 1))
    assert first["x"] > second["x"]  # the first word read is the rightmost
    # The links still start at the query: the arcs are placed from the laid-out words.
    words(page).nth(1).click()
    expect(words(page).nth(1)).to_have_attribute("aria-pressed", "true")
    assert page.locator("#sl-arcs .sl-links path[d^='M']").count() >= 1


def test_the_model_choice_is_there_before_the_first_keystroke_and_nothing_moves_when_its_code_comes(sized, shipped, watch):
    """The choice of model is in the page from its first paint (no focus, no code loaded), and the
    form does not move when the box's code arrives on the first focus."""
    page = sized
    open_lab(page, shipped, "file")
    designed, real = page.get_by_label(re.compile("the designed heads")), page.get_by_label(re.compile("the real model, MiniLM"))
    expect(designed).to_be_checked()
    expect(real).to_be_visible()
    assert not any(re.search(r"/own\.\w+\.js$", r) for r in watch.requests)  # before the box's code
    parts = ["#sl-own-text", ".sl-own-which", "#sl-own-source", "#sl-own-go"]
    # Each part's box from the form's top: the parts of the page above it that build as they come near do not count.
    where = """ss => { const top = document.getElementById("sl-own").getBoundingClientRect().top;
        return ss.map(s => { const r = document.querySelector(s).getBoundingClientRect(); return [r.x, r.y - top, r.width, r.height]; }); }"""
    before = page.evaluate(where, parts)
    page.get_by_label("Your sentence", exact=True).focus()
    page.wait_for_function("() => !!window.Labs.code.own")
    page.wait_for_timeout(100)  # a frame or two for its styles
    assert page.evaluate(where, parts) == before
    real.check()  # the choice works once the code is here
    expect(page.locator("#sl-own-load")).to_contain_text("MB to download", timeout=30_000)
