"""``Labs.util.load`` (theme/static/js/10-util.js), the one loader of files a page adds on demand,
in a real Chromium: each URL fetched once whoever asks (the spotlight, the parts kept for later,
the ÷√d demo), a failed one asked for again, stylesheets too, and all of it from file://.
Shares the sites, the watched pages (a console error fails a test) and the helpers of test_browser.py."""

from __future__ import annotations

import re

import pytest
from conftest import lab_data
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    LAB, _watched_context, context, open_lab, page, shipped, sites, watch,
)

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None

TWICE = """async (src) => {
  const a = Labs.util.load(src), b = Labs.util.load(new URL(src, document.baseURI).href);
  await a;
  return a === b;
}"""
SETTLED = "(src) => Labs.util.load(src).then(() => 'loaded', () => 'failed')"


def _files(shipped) -> dict:
    html = (shipped.folder / LAB / "index.html").read_text(encoding="utf-8")
    return lab_data(html)


def _asked(watch, name: str) -> int:
    return sum(url.split("?")[0].endswith("/" + name.rsplit("/", 1)[-1]) for url in watch.requests)


@pytest.mark.parametrize("where", ["file", "http"])
def test_a_file_asked_for_twice_is_fetched_once_and_has_run(page, shipped, watch, where):
    data = _files(shipped)
    open_lab(page, shipped, where)
    pattern = data["pattern"]["src"]
    assert page.evaluate(TWICE, pattern) is True  # the same promise, by relative or absolute URL
    assert page.evaluate("!!Labs.data.pattern")  # resolved once the script has run
    page.locator("#sl-pattern summary").click()  # the spotlight asks for the same file: no second fetch
    expect(page.locator("table.sl-pat").first).to_be_visible()
    assert _asked(watch, pattern) == 1
    assert page.locator(f'script[src$="{pattern}"]').count() == 1
    assert _asked(watch, data["pattern"]["css"]) == 1  # its stylesheet, through the same loader
    assert page.locator('link[rel="stylesheet"][href$="' + data["pattern"]["css"].rsplit("/", 1)[-1] + '"]').count() == 1

    quiz = page.locator("noscript[data-script]").first.get_attribute("data-script")
    assert page.evaluate(SETTLED, quiz) == "loaded"
    page.evaluate("Labs.later.all()")  # the quiz's part comes in and asks for its script again
    expect(page.locator("#quiz-score")).to_be_visible()
    assert _asked(watch, quiz) == 1


def test_a_file_that_failed_is_fetched_again_the_next_time(page, shipped, watch):
    watch.allow(r"ERR_FAILED|pattern")  # the refused request is logged; that is the point here
    css = _files(shipped)["pattern"]["css"]
    refused = []

    def once(route):
        if not refused:
            refused.append(route.request.url)
            return route.abort()
        return route.continue_()

    page.route(re.compile(re.escape(css.rsplit("/", 1)[-1]) + "$"), once)
    open_lab(page, shipped, "http")
    selector = 'link[rel="stylesheet"][href$="' + css.rsplit("/", 1)[-1] + '"]'
    assert page.evaluate(SETTLED, css) == "failed"
    assert page.locator(selector).count() == 0  # the failed tag is gone
    assert page.evaluate(SETTLED, css) == "loaded"
    assert page.locator(selector).count() == 1
    assert len(refused) == 1 and _asked(watch, css) == 2


@pytest.mark.parametrize("where", ["file", "http"])
def test_a_missing_file_is_a_failure_not_a_hang(page, shipped, watch, where):
    watch.allow(r"ERR_FILE_NOT_FOUND|404|no-such")
    open_lab(page, shipped, where)
    assert page.evaluate(SETTLED, "no-such-file.0000.js") == "failed"
