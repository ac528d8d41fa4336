"""Lab 07's embed page inside another site, in Chromium: a host page served from another origin
(another port on 127.0.0.1) frames ``labs/attention/embed.html`` from the built site, served
with the headers its ``_headers`` file gives. A word click works inside the frame, the keyboard's
focus goes into the frame and out again, the height message arrives in the documented shape and
matches the embed page's height, and the full lab page refuses to be framed. The embed page is a
file (``embed.html``, not a folder) and works from file://, its "Open the full lab" too. The lab
page's "Copy embed code" (by mouse, and by Tab and Enter) puts the <iframe> docs/embedding.md
shows on the clipboard, and that code pasted into a page of another origin shows a working lab,
inside the sandbox it names. A site whose ``embed: frame_ancestors`` lists one origin is framed by
that origin's page and refused by another's.

Needs Chromium (tests/conftest.py); these tests fail without it, never skip."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import HeadersHost, watched_page

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
    expect.set_options(timeout=15_000)
except ImportError:  # pragma: no cover - the browser fixture reports it
    pass

ROOT = Path(__file__).resolve().parent.parent

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


# -- the embed page's address: a file beside the lab page, which opens from file:// too ------------

def test_every_lab_has_its_embed_page_as_a_file_beside_its_page_never_a_folder(shipped_site):
    labs = sorted(p.parent.name for p in (shipped_site / "labs").glob("*/index.html"))
    assert labs and all((shipped_site / "labs" / slug / "embed.html").is_file() for slug in labs)
    assert not list((shipped_site / "labs").glob("*/embed/")), "an embed/ folder: from file:// it opens as a listing"


def test_the_embed_page_works_from_file_and_opens_the_full_lab_there(browser, shipped_site):
    with watched_page(browser, height=900) as page:
        page.goto((shipped_site / "labs" / "attention" / "embed.html").as_uri())
        expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
        other = page.locator('#sl-queries button.word[aria-pressed="false"]').nth(1)
        word = other.inner_text()
        other.click()
        page.wait_for_function("() => /#s=[\\w-]+&h=\\w+&q=\\d+&scale=1$/.test(location.href)")
        state = page.evaluate("location.hash")
        with page.expect_popup() as opened:
            page.get_by_role("link", name=re.compile("Open the full lab")).click()
        full = opened.value
        # From file:// the folder's address would open a listing: the link names index.html.
        assert full.url == (shipped_site / "labs" / "attention" / "index.html").as_uri() + state
        expect(full.locator("#spotlight")).to_have_attribute("data-ready", "true")
        expect(full.locator('#sl-queries button.word[aria-pressed="true"]')).to_have_text(word)


# -- "Copy embed code" on the lab page ---------------------------------------------------------------

def documented_snippet() -> dict[str, str]:
    """The attributes of the <iframe> docs/embedding.md shows under "Embed code"."""
    from bs4 import BeautifulSoup

    text = (ROOT / "docs" / "embedding.md").read_text(encoding="utf-8")
    block = re.search(r"## Embed code.*?```html\n(.*?)```", text, re.S).group(1)
    frames = BeautifulSoup(block, "html.parser").find_all("iframe")
    assert len(frames) == 1
    return dict(frames[0].attrs)


def copied_snippet(page) -> dict[str, str]:
    from bs4 import BeautifulSoup

    code = page.evaluate("navigator.clipboard.readText()")
    soup = BeautifulSoup(code, "html.parser")
    frames = soup.find_all("iframe")
    assert len(frames) == 1 and code.startswith("<iframe ") and code.endswith("></iframe>"), code  # nothing else
    return dict(frames[0].attrs)


@pytest.fixture
def lab_page(browser, site):
    with watched_page(browser, height=900) as page:
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.origin)
        page.goto(site.origin + "/labs/attention/")
        expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
        page.evaluate("navigator.clipboard.writeText('')")
        yield page


def check_snippet(page, shipped_site) -> dict[str, str]:
    """The copied <iframe>: the documented attributes, its src the published embed page of this
    lab (the canonical link's folder), its title the lab's label, title and subtitle."""
    from bs4 import BeautifulSoup

    expect(page.locator(".embed-code + [role=status]")).to_have_text("Copied. Paste it into your page.")
    got, documented = copied_snippet(page), documented_snippet()
    assert sorted(got) == sorted(documented)
    assert {k: v for k, v in got.items() if k not in ("src", "title")} == \
        {k: v for k, v in documented.items() if k not in ("src", "title")}
    canonical = page.locator("link[rel=canonical]").get_attribute("href")
    assert got["src"] == canonical + "embed.html"
    assert urlsplit(got["src"]).path == urlsplit(documented["src"]).path == "/labs/attention/embed.html"
    embed = BeautifulSoup((shipped_site / "labs/attention/embed.html").read_text(encoding="utf-8"), "html.parser")
    subtitle = page.locator(".hero-sub").inner_text()
    assert got["title"] == f"{embed.select_one('h1.embed-title').get_text()} — {subtitle}" == documented["title"]
    return got


def test_copy_embed_code_puts_the_documented_iframe_on_the_clipboard(lab_page, shipped_site):
    button = lab_page.get_by_role("button", name="Copy embed code")
    expect(button).to_be_visible()
    button.click()
    check_snippet(lab_page, shipped_site)


def test_copy_embed_code_is_reached_by_tab_and_pressed_with_enter(lab_page, shipped_site):
    lab_page.locator("body").focus()
    for _ in range(300):
        lab_page.keyboard.press("Tab")
        if lab_page.evaluate("document.activeElement.matches('[data-embed-code]')"):
            break
    else:
        pytest.fail("Tab never reached Copy embed code")
    lab_page.keyboard.press("Enter")
    check_snippet(lab_page, shipped_site)


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory):
    """A page of another origin, into which a test pastes the embed code."""
    folder = tmp_path_factory.mktemp("pasted")
    served = HeadersHost(folder)
    yield folder, served.origin
    served.close()


def test_the_copied_code_pasted_into_another_site_shows_a_working_lab(lab_page, shipped_site, site, elsewhere, browser):
    lab_page.get_by_role("button", name="Copy embed code").click()
    got = check_snippet(lab_page, shipped_site)
    code = lab_page.evaluate("navigator.clipboard.readText()")
    # The src is the published site's (site.yaml's base_url); here the site is served locally.
    published = urlsplit(got["src"])
    code = code.replace(f"{published.scheme}://{published.netloc}", site.origin, 1)
    folder, origin = elsewhere
    (folder / "index.html").write_text(f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>A course page</title><link rel="icon" href="data:,"></head><body><main><h1>Week 3</h1>
{code}</main></body></html>""", encoding="utf-8")
    with watched_page(browser, height=900, allowed=lambda text: "allow-modals" in text) as host:
        host.goto(origin + "/")
        frame = host.frame_locator("iframe")
        expect(frame.locator("#spotlight")).to_have_attribute("data-ready", "true")
        word = frame.locator('#sl-queries button.word[aria-pressed="false"]').nth(1)
        text = word.inner_text()
        word.click()
        expect(frame.locator('#sl-queries button.word[aria-pressed="true"]')).to_have_text(text)
        with host.expect_popup() as opened:  # allowed by the sandbox, and out of it
            frame.get_by_role("link", name=re.compile("Open the full lab")).click()
        full = opened.value
        assert full.url.startswith(site.origin + "/labs/attention/#s=")
        expect(full.locator("#spotlight")).to_have_attribute("data-ready", "true")
        expect(full.locator('#sl-queries button.word[aria-pressed="true"]')).to_have_text(text)
        # ... and the sandbox holds: the frame may not open a dialog over the host's page.
        dialogs = []
        host.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        host.frame(url=re.compile(r"/labs/attention/embed\.html")).evaluate("alert('from the frame')")
        assert dialogs == []


def test_frame_ancestors_lets_the_listed_origin_frame_an_embed_page_and_no_other(browser, project):
    """site.yaml's ``embed: frame_ancestors`` as Chromium enforces it from the ``_headers`` the
    build writes: a page of the origin listed frames the embed page, a page of another is refused."""
    from generator.build import build

    listed, other = project / "listed", project / "other"
    listed.mkdir()
    other.mkdir()
    hosts = [HeadersHost(listed), HeadersHost(other)]
    site_yaml = project / "content" / "site.yaml"
    site_yaml.write_text(site_yaml.read_text(encoding="utf-8")
                         + f"embed:\n  frame_ancestors:\n    - {hosts[0].origin}\n", encoding="utf-8")
    build(project / "content", None, project / "out")
    site = HeadersHost(project / "out")
    try:
        for folder in (listed, other):
            (folder / "index.html").write_text(f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Host</title><link rel="icon" href="data:,"></head><body><iframe title="Lab"
src="{site.origin}/labs/alpha/embed.html"></iframe></body></html>""", encoding="utf-8")
        with watched_page(browser, allowed=lambda text: "frame-ancestors" in text) as page:
            page.goto(hosts[0].origin + "/")
            expect(page.frame_locator("iframe").locator("body.page-embed")).to_have_count(1)
            page.goto(hosts[1].origin + "/")
            page.wait_for_load_state("load")
            frame = page.locator("iframe").element_handle().content_frame()
            assert not frame.url.startswith(site.origin), frame.url  # Chromium's error page instead
            expect(page.frame_locator("iframe").locator("body.page-embed")).to_have_count(0)
    finally:
        for served in hosts + [site]:
            served.close()
