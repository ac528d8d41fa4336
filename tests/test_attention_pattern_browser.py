"""The pattern view in a real Chromium: every query of the
current head as a <table>, the causal triangle, a rectangular cross grid, keyboard, 320 px, the
shuffle and the closest learned head; axe in light and dark with each view open. Shares the sites,
the watched pages (a console error fails a test) and the helpers of test_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import labs_data
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    LAB, _watched_context, axe, axe_clean, context, data, head_select, open_lab, page, pressed, settle, shipped, sites, tab_to, watch,
)

pytestmark = pytest.mark.browser
SHOTS = Path("/tmp/pattern-shots")

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _pattern_data(shipped) -> dict:
    (script,) = (shipped.folder / LAB).glob("pattern.*.js")
    return labs_data(script.read_text(encoding="utf-8"), "pattern")


def _open(page):
    page.locator("#sl-pattern summary").click()
    expect(page.locator("table.sl-pat").first).to_be_visible()


READ = """(t) => ({
  caption: t.caption.textContent,
  cols: [...t.tHead.rows[0].querySelectorAll("th")].map(th => th.textContent),
  rows: [...t.tBodies[0].rows].map(tr => tr.querySelector("th").textContent),
  pressed: [...t.querySelectorAll('.sl-pat-q[aria-pressed="true"]')].map(b => b.textContent),
  cells: [...t.tBodies[0].rows].map(tr => [...tr.querySelectorAll("td")].map(td => td.textContent)),
  tabstops: t.querySelectorAll('[tabindex="0"]').length,
})"""


def _grid(page, n: int = 0) -> dict:
    return page.locator("table.sl-pat").nth(n).evaluate(READ)


def _sentence(data, sid):
    return next(s for s in data["sentences"] if s["id"] == sid)


@pytest.mark.parametrize("where", ["http", "file"])
def test_the_pattern_loads_on_open_and_every_cell_is_the_heads_weight(page, shipped, data, watch, where):
    open_lab(page, shipped, where)
    assert not any("pattern." in r for r in watch.requests), "the pattern view's code came with the first visit"
    _open(page)
    assert any(re.search(r"pattern\.\w+\.js$", r) for r in watch.requests)
    S = _sentence(data, "cat-mat")
    for head in ("syntax", "previous", "coreference"):
        head_select(page).select_option(head)
        g = _grid(page)
        assert g["rows"] == S["queries"] and g["cols"] == S["keys"]
        assert g["cells"] == [[f"{p}%" for p in row] for row in S["heads"][head]["pct"]]
        assert g["pressed"] == ["sat"] and g["tabstops"] == 1


def test_the_causal_triangle_is_empty_and_cross_attention_is_rectangular(page, shipped, data):
    open_lab(page, shipped, "http", "#s=decoder&h=syntax&q=2&scale=1")
    _open(page)
    S = _sentence(data, "decoder")
    g = _grid(page)
    n = len(S["queries"])
    for i, row in enumerate(g["cells"]):
        assert row[i + 1:] == ["masked"] * (n - i - 1), (i, row)
        assert all(c.endswith("%") for c in row[: i + 1])
    assert page.locator("table.sl-pat td.is-masked").count() == n * (n - 1) // 2
    expect(page.locator("#sl-pattern-body")).to_contain_text("The empty triangle above the diagonal is the causal mask")

    # A cross sentence of your own: 3 queries × 4 keys.
    page.get_by_label("Your sentence", exact=True).click()
    page.get_by_label("Source (for cross-attention)").fill("Le chat noir dort")
    box = page.get_by_label("Your sentence", exact=True)
    box.fill("The cat/NOUN sleeps/VERB")
    box.press("Enter")
    expect(page.locator("#sl-sentence")).to_have_value("own")
    expect(page.locator("table.sl-pat caption")).to_have_text(re.compile("Syntax"))
    g = _grid(page)
    assert g["rows"] == ["The", "cat", "sleeps"] and g["cols"] == ["Le", "chat", "noir", "dort"]
    assert all(len(r) == 4 for r in g["cells"])
    expect(page.locator("#sl-pattern-body")).to_contain_text("so the grid is 3 × 4, not square")


def test_clicking_a_row_makes_its_word_the_query(page, shipped):
    open_lab(page, shipped, "http")
    _open(page)
    page.locator("table.sl-pat .sl-pat-q", has_text="mat").click()
    expect(pressed(page)).to_have_text("mat")
    expect(page).to_have_url(re.compile(r"&q=5&"))
    assert _grid(page)["pressed"] == ["mat"]


def test_the_grid_is_one_tab_stop_walked_with_arrow_keys(page, shipped, data):
    open_lab(page, shipped, "http")
    _open(page)
    query = page.locator('table.sl-pat .sl-pat-q[aria-pressed="true"]')
    tab_to(page, query)
    at = page.locator(".sl-pat-at")
    page.keyboard.press("ArrowRight")  # sat → The
    expect(page.locator("table.sl-pat td:focus")).to_have_count(1)
    pct = _sentence(data, "cat-mat")["heads"]["syntax"]["pct"]
    expect(at).to_have_text(f"“sat” → “The”: {pct[2][0]}%")
    page.keyboard.press("ArrowRight")
    expect(at).to_have_text(f"“sat” → “cat”: {pct[2][1]}%")
    page.keyboard.press("ArrowDown")
    expect(at).to_have_text(f"“on” → “cat”: {pct[3][1]}%")
    page.keyboard.press("Enter")  # on a cell: its row's word becomes the query, and the focus stays in the grid
    expect(pressed(page)).to_have_text("on")
    expect(page.locator("table.sl-pat td:focus")).to_have_count(1)
    assert _grid(page)["tabstops"] == 1
    page.keyboard.press("Home")
    expect(page.locator('table.sl-pat .sl-pat-q:focus')).to_have_text("on")
    page.keyboard.press("Tab")  # one Tab leaves the grid
    assert page.evaluate("!document.activeElement.closest('table.sl-pat')")


def test_at_320_px_the_grid_scrolls_with_a_visible_hint(browser, watch, shipped):
    ctx = _watched_context(browser, watch, 320, 700)
    try:
        page = ctx.new_page()
        open_lab(page, shipped, "http", "#s=animal&h=coreference&q=7&scale=1")
        wide = "document.documentElement.scrollWidth"
        before = page.evaluate(wide)
        _open(page)
        expect(page.locator(".sl-pat-hint")).to_be_visible()
        box = page.locator(".sl-pat-box")
        assert box.evaluate("b => b.scrollWidth > b.clientWidth")  # the grid scrolls inside its box…
        assert page.evaluate(wide) <= max(before, 320)  # …and the page does not scroll sideways for it
        assert page.locator("#sl-pattern").evaluate("d => d.getBoundingClientRect().right") <= 320
        SHOTS.mkdir(exist_ok=True)
        page.locator("#sl-pattern").screenshot(path=str(SHOTS / "pattern-320.png"))
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


def test_shuffling_moves_the_content_weights_and_breaks_the_previous_word_head(page, shipped):
    P = _pattern_data(shipped)
    open_lab(page, shipped, "http")
    _open(page)
    shuffle = page.get_by_role("button", name="Shuffle the words")
    shuffle.click()
    expect(shuffle).to_have_attribute("aria-pressed", "true")
    X = P["shuffle"]["cat-mat"]
    order = X["order"]
    for head in ("syntax", "coreference", "previous"):
        head_select(page).select_option(head)
        expect(page.locator("table.sl-pat")).to_have_count(2)
        written, moved = _grid(page, 0), _grid(page, 1)
        assert moved["rows"] == [written["rows"][i] for i in order]
        shown = np.array([[int(c[:-1]) for c in row] for row in moved["cells"]])
        permuted = np.array([[int(c[:-1]) for c in row] for row in written["cells"]])[np.ix_(order, order)]
        if head == "previous":
            tops = [written["cols"][int(np.argmax(r))] for r in np.array([[int(c[:-1]) for c in row] for row in written["cells"]])]
            new = [moved["cols"][int(np.argmax(r))] for r in shown]
            assert all(new[a] != tops[order[a]] for a in range(len(order))), (tops, new)  # every word's top key changes
            expect(page.locator(".sl-pat-sum")).to_contain_text("Previous word: “sat” looked at “cat”; shuffled, it looks at")
        else:
            assert (shown == permuted).all(), head
    expect(page.locator(".sl-pat-sum")).to_contain_text("Syntax: “sat” still gives “cat”")
    shuffle.click()
    expect(page.locator("table.sl-pat")).to_have_count(1)


def test_the_closest_learned_head_opens_in_the_spotlight(page, shipped):
    P = _pattern_data(shipped)
    match = P["learned"]["heads"]["previous"]
    open_lab(page, shipped, "http", "#s=cat-mat&h=previous&q=2&scale=1")
    _open(page)
    name = f"layer {match['layer']}, head {match['head']}"
    learned = page.locator(".sl-pat-learned")
    expect(learned).to_contain_text(f"Closest learned head: {name}")
    expect(learned).to_contain_text(f"agreement {100 * match['agreement']:.1f}% over {match['words']} words")
    expect(learned).to_contain_text("1 − total variation distance")
    learned.get_by_role("link", name=re.compile(name)).click()
    expect(head_select(page)).to_have_value(f"L{match['layer']}H{match['head']}")
    expect(pressed(page)).to_have_text("sat")
    expect(page.locator("table.sl-pat caption")).to_have_text(re.compile(f"Every query of {name}"))
    expect(learned).to_contain_text("closest learned head to the designed previous word head")


def test_your_sentence_has_its_pattern_too(page, shipped):
    open_lab(page, shipped, "http")
    _open(page)
    box = page.get_by_label("Your sentence", exact=True)
    box.click()
    box.fill("A dog/NOUN chased/VERB the ball/NOUN")
    box.press("Enter")
    expect(page.locator("#sl-sentence")).to_have_value("own")
    g = _grid(page)
    assert g["rows"] == ["A", "dog", "chased", "the", "ball"]
    assert all(sum(int(c[:-1]) for c in row) == 100 for row in g["cells"])
    expect(page.locator("#sl-pattern-body")).to_contain_text("The shuffle is computed for the lab's own")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("view", ["pattern", "shuffle", "real"])
def test_axe_finds_no_violations_with_the_pattern_open(page, shipped, axe, scheme, view):
    page.emulate_media(color_scheme=scheme)
    open_lab(page, shipped, "http", "#s=decoder&h=L1H9&q=2&scale=1&special=1" if view == "real" else "")
    _open(page)
    if view == "shuffle":
        page.get_by_role("button", name="Shuffle the words").click()
        expect(page.locator("table.sl-pat")).to_have_count(2)
    page.locator("table.sl-pat td").nth(3).hover()
    axe_clean(page, axe)


@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_pattern_screenshots(browser, watch, shipped, width, height):
    SHOTS.mkdir(exist_ok=True)
    ctx = _watched_context(browser, watch, width, height, device_scale_factor=1)
    try:
        page = ctx.new_page()
        open_lab(page, shipped, "http", "#s=decoder&h=syntax&q=2&scale=1")
        _open(page)
        settle(page)
        page.locator("#sl-pattern").screenshot(path=str(SHOTS / f"causal-{width}x{height}.png"))
        page = ctx.new_page()
        open_lab(page, shipped, "http", "#s=animal&h=previous&q=7&scale=1")
        _open(page)
        page.get_by_role("button", name="Shuffle the words").click()
        settle(page)
        page.locator("#sl-pattern").screenshot(path=str(SHOTS / f"shuffle-{width}x{height}.png"))
        page.screenshot(path=str(SHOTS / f"page-{width}x{height}.png"))
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


def test_a_real_head_can_be_shaded_row_by_row_and_the_scale_says_so(page, shipped):
    """A real head spreads its weight thinly: on the 0-100% scale its cells are pale. The learner
    turns on the per-row scale: each row's largest weight is then full colour, and the scale's
    label says what full colour now means."""
    open_lab(page, shipped, "file", "#s=animal&h=L3H1&q=2&scale=1&special=1")
    _open(page)
    shades = """t => [...t.tBodies[0].rows].map(tr => [...tr.querySelectorAll("td:not(.is-masked)")].map(td =>
        [parseFloat(td.style.getPropertyValue("--w")), parseFloat(td.textContent)]))"""
    table = page.locator("table.sl-pat").first
    before = table.evaluate(shades)
    assert all(abs(w - pct / 100) < 0.01 for row in before for w, pct in row)  # the weight itself (its percentage rounds it up or down)
    assert max(w for row in before for w, _ in row) < 1  # no cell is full colour: it is pale
    expect(page.locator(".sl-pat-scale")).to_contain_text("100% of a row")
    page.get_by_role("switch", name="Shade each row by its largest weight").check()
    expect(page.locator(".sl-pat-scale")).to_contain_text("the row's largest weight")
    expect(page.get_by_role("switch", name="Shade each row by its largest weight")).to_be_focused()
    table = page.locator("table.sl-pat").first
    after = table.evaluate(shades)
    for row_before, row_after in zip(before, after):
        top = max(w for w, _ in row_before)
        assert max(w for w, _ in row_after) == pytest.approx(1)
        assert [w for w, _ in row_after] == pytest.approx([w / top for w, _ in row_before], abs=1e-6)
    page.get_by_role("switch", name="Shade each row by its largest weight").uncheck()
    expect(page.locator(".sl-pat-scale")).to_contain_text("100% of a row")
