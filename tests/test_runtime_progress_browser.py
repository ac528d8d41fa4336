"""The shared "Load the model" progress (Labs.runtime.loadShown, generator/runtime/static/loader.js),
in Chromium on lab 04's live search, one of the labs that use it: the bytes so far are written as
text beside the bar, the same figure the bar's aria-valuetext gives, and Cancel puts the keyboard
back on the load button. Shares the sites and the watched pages of test_browser.py."""

from __future__ import annotations

import re

import pytest
from test_browser import context, page, shipped, sites, watch  # noqa: F401 — fixtures shared with the browser tests

pytestmark = pytest.mark.browser
LAB = "labs/embeddings/"
HELD = re.compile(r".*/model-layers-03\.[0-9a-f]+\.js$")  # a weight file that never arrives: the download waits on it

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def test_the_download_shows_its_megabytes_as_text_and_cancel_returns_the_keyboard(page, shipped):
    page.route(HELD, lambda route: None)  # held: never answered
    try:
        page.goto(shipped.url("http", LAB))
        expect(page.locator("#embeddings")).to_have_attribute("data-ready", "true")
        load = page.locator("#em-load")
        load.focus()
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.getElementById('em-progress').value > 0")
        amount = page.locator("#em-progress + .rt-mb")
        expect(amount).to_be_visible()
        expect(amount).to_have_text(re.compile(r"^\s*\d+\.\d of \d+\.\d MB$"))
        # Read at one moment (the download goes on): the text, the bar's figures and its aria-valuetext agree.
        text, said, value, top = page.evaluate("""() => { const b = document.getElementById("em-progress");
            return [b.nextElementSibling.textContent, b.getAttribute("aria-valuetext"), b.value, b.max]; }""")
        got, total = (float(x) for x in re.findall(r"\d+\.\d", text))
        assert 0 < got < total
        assert (f"{value / 1e6:.1f}", f"{top / 1e6:.1f}") == (f"{got:.1f}", f"{total:.1f}")
        assert said == text.strip()
        page.locator("#em-cancel").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#em-status")).to_have_text("Cancelled. Nothing more is downloaded.")
        expect(load).to_be_focused()  # not <body>: the keyboard goes on from where it was
        expect(amount).to_be_hidden()
    finally:
        page.close()  # with the held request: it never arrives
