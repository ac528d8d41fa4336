"""Lab 07's embed page inside another site, in Chromium: a host page served from another origin
(another port on 127.0.0.1) frames ``labs/attention/embed.html`` from the built site, served
with the headers its ``_headers`` file gives. A word click works inside the frame, the keyboard's
focus goes into the frame and out again, the height message arrives in the documented shape and
matches the embed page's height, and the full lab page refuses to be framed.

Needs Chromium (tests/conftest.py); these tests fail without it, never skip."""

from __future__ import annotations

import re

import pytest
from conftest import HeadersHost, watched_page

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
    expect.set_options(timeout=15_000)
except ImportError:  # pragma: no cover - the browser fixture reports it
    pass

# The parent-side code docs/embedding.md gives, as a host page would carry it (a file of its own:
# the host's page has no CSP of ours, but keeping scripts out of HTML is the habit anyway).
HOST_JS = """
window.heights = [];
addEventListener("message", event => {
  const frame = document.getElementById("lab");
  if (event.source !== frame.contentWindow || event.data?.type !== "attention-labs:height") return;
  window.heights.push({ origin: event.origin, data: event.data });
  frame.style.height = event.data.height + "px";
});
"""


def host_html(site_origin: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>A course page elsewhere</title>
<link rel="icon" href="data:,"><script src="host.js"></script></head>
<body><main><h1>Week 3: attention</h1>
<button id="before">Before the lab</button>
<iframe id="lab" title="Attention lab" src="{site_origin}/labs/attention/embed.html?scheme=dark"
        style="width: 100%; height: 300px; border: 0"></iframe>
<button id="after">After the lab</button>
<iframe id="full" title="The full lab page" src="{site_origin}/labs/attention/" style="height: 100px"></iframe>
</main></body></html>
"""


@pytest.fixture(scope="module")
def site(shipped_site):
    served = HeadersHost(shipped_site)
    yield served
    served.close()


@pytest.fixture(scope="module")
def host(tmp_path_factory, site):
    """Another origin: the same host name, another port."""
    folder = tmp_path_factory.mktemp("host-page")
    (folder / "index.html").write_text(host_html(site.origin), encoding="utf-8")
    (folder / "host.js").write_text(HOST_JS, encoding="utf-8")
    served = HeadersHost(folder)
    assert served.origin != site.origin
    yield served.origin
    served.close()


@pytest.fixture
def page(browser, host):
    # The one error expected: the full lab page refusing its frame (frame-ancestors 'none').
    with watched_page(browser, height=900, allowed=lambda text: "frame-ancestors" in text or "X-Frame-Options" in text) as page:
        page.goto(host + "/")
        yield page


def lab_frame(page):
    frame = page.frame_locator("#lab")
    expect(frame.locator("#spotlight")).to_have_attribute("data-ready", "true")
    return frame


def test_a_word_click_inside_the_frame_moves_the_spotlight_and_the_frames_url(page, site):
    frame = lab_frame(page)
    words = frame.locator("#sl-queries button.word")
    pressed = frame.locator('#sl-queries button.word[aria-pressed="true"]')
    before = pressed.inner_text()
    other = words.filter(has_not_text=re.compile("^" + re.escape(before) + "$")).nth(1)
    word = other.inner_text()
    other.click()
    expect(pressed).to_have_text(word)
    expect(frame.locator("#sl-caption")).to_contain_text(f"“{word}”")
    inner = page.frame(url=re.compile(r"/labs/attention/embed\.html"))
    assert inner is not None and inner.url.startswith(site.origin)
    # The state is in its URL (written by replaceState once the click is drawn: waited for, not assumed)
    inner.wait_for_function("""() => /#s=[\\w-]+&h=\\w+&q=\\d+&scale=1$/.test(location.href)""")
    assert re.search(r"#s=[\w-]+&h=\w+&q=\d+&scale=1$", inner.evaluate("location.href"))
    assert inner.evaluate("document.documentElement.dataset.scheme") == "dark"  # ?scheme=dark


def test_keyboard_focus_goes_into_the_frame_and_out_again(page):
    lab_frame(page)
    inner = page.frame(url=re.compile(r"/labs/attention/embed\.html"))
    page.locator("#before").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "lab"  # the host sees its iframe focused
    assert inner.evaluate("document.activeElement !== document.body")  # and something in it has the focus
    for _ in range(200):  # onwards through the embed page's stops until the host's next one
        if page.evaluate("document.activeElement.id") == "after":
            break
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "after", "Tab never left the embedded lab"
    page.keyboard.press("Shift+Tab")  # and back in, onto the embed page's last stop
    assert page.evaluate("document.activeElement.id") == "lab"
    assert inner.evaluate("document.activeElement !== document.body")


def test_the_height_message_arrives_in_its_documented_shape_and_is_right(page, site):
    lab_frame(page)
    inner = page.frame(url=re.compile(r"/labs/attention/embed\.html"))
    page.wait_for_function("window.heights.length > 0")
    page.wait_for_timeout(500)  # the parts that arrive late change the height; the last message counts
    page.wait_for_function("""() => {
      const last = window.heights.at(-1).data.height;
      return document.getElementById("lab").getBoundingClientRect().height === last;
    }""")
    last = page.evaluate("window.heights.at(-1)")
    assert last["origin"] == site.origin
    assert set(last["data"]) == {"type", "lab", "height"}
    assert last["data"]["type"] == "attention-labs:height" and last["data"]["lab"] == "attention"
    height = last["data"]["height"]
    assert isinstance(height, int) and height > 300
    body = inner.evaluate("Math.ceil(document.body.getBoundingClientRect().height)")
    assert height == body
    # The frame fits its page now: nothing of the embed page scrolls inside it.
    assert inner.evaluate("document.scrollingElement.scrollHeight <= innerHeight + 1")


def test_the_full_lab_page_refuses_to_be_framed_while_the_embed_page_is_framed(page, site):
    lab_frame(page)
    full = page.locator("#full").element_handle().content_frame()
    # Chromium puts its own error page in a frame whose page's headers refuse that frame.
    assert not full.url.startswith(site.origin), full.url
    expect(page.frame_locator("#full").locator("#spotlight")).to_have_count(0)
