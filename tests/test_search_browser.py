"""The header's search box in Chromium, used as a learner uses it: from file:// and served under
the site's CSP, by keyboard, with a screen reader's attributes checked and axe run over it.

Needs Chromium (tests/conftest.py); these tests fail without it, never skip."""

from __future__ import annotations

import re

import pytest
from conftest import HeadersHost, watched_page

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
    expect.set_options(timeout=10_000)
except ImportError:  # pragma: no cover - the browser fixture reports it
    pass

SEARCH_FILES = re.compile(r"/assets/(search-index\.js|lunr\.[0-9a-f]{8}\.js|later/search\.[0-9a-f]{8}\.(js|css)|search/)")


@pytest.fixture(scope="module")
def host(shipped_site):
    served = HeadersHost(shipped_site)
    yield served
    served.close()


@pytest.fixture
def page(browser):
    with watched_page(browser) as page:
        yield page


def url(where: str, site, host, path: str = "labs/sampling/") -> str:
    if where == "file":
        return (site / path / "index.html").as_uri() if path.endswith("/") or not path else (site / path).as_uri()
    return f"{host.origin}/{path}"


def box(page):
    return page.get_by_role("combobox", name="Search the labs")


def options(page):
    return page.locator("#search-list [role=option]")


def test_softmax_from_disk_shows_lab_07s_section_first_and_enter_opens_it_there(page, shipped_site):
    page.goto((shipped_site / "index.html").as_uri())
    page.keyboard.press("/")
    expect(box(page)).to_be_focused()
    page.keyboard.type("softmax", delay=20)
    first_group = page.locator("#search-list [role=group]").first
    expect(first_group.locator(".search-group-label")).to_have_text(re.compile(r"^07 · Attention"))
    first = options(page).first
    expect(first).to_have_attribute("aria-selected", "true")
    expect(box(page)).to_have_attribute("aria-activedescendant", first.get_attribute("id"))
    expect(first.locator("mark").first).to_have_text(re.compile("softmax", re.I))
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/labs/attention/index\.html#[\w-]+$"))
    anchor = page.url.split("#", 1)[1]
    target = page.locator(f"[id='{anchor}']")
    expect(target).to_be_attached()
    page.wait_for_timeout(300)  # the page settles (parts coming in as it is sent there)
    top = target.evaluate("el => el.getBoundingClientRect().top")
    assert 0 <= top < 800, f"#{anchor} is at {top}px, not in view"


@pytest.mark.parametrize("where", ["http", "file"])
def test_nothing_of_the_search_loads_before_the_box_is_focused(page, shipped_site, host, where):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    page.goto(url(where, shipped_site, host))
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)
    assert not [u for u in asked if SEARCH_FILES.search(u)], asked
    box(page).focus()
    expect(page.locator("[data-search]")).to_have_attribute("data-ready", "true")
    loaded = {m.group(1).split(".")[0] for u in asked if (m := SEARCH_FILES.search(u))}
    assert {"search-index", "lunr", "later/search"} <= loaded, loaded


def test_results_come_as_you_type_grouped_by_page_with_the_words_marked(page, shipped_site, host):
    page.goto(url("http", shipped_site, host))
    box(page).click()
    page.keyboard.type("temperature sampling", delay=20)
    expect(options(page).first).to_be_visible()
    groups = page.locator("#search-list [role=group]")
    labels = groups.locator(".search-group-label").all_inner_texts()
    assert labels and len(labels) == len(set(labels)), labels  # one group per page
    assert labels[0].startswith("08 · Sampling"), labels
    for group in groups.all():  # each group is labelled by its label, and holds options only
        assert group.get_attribute("aria-labelledby") == group.locator(".search-group-label").get_attribute("id")
    marked = {m.lower() for m in page.locator("#search-list mark").all_inner_texts()}
    assert {"temperature", "sampling"} <= marked, marked
    status = page.locator("[data-search] [role=status]")
    expect(status).to_have_text(re.compile(r"^\d+ results? on \d+ pages?$"))


def test_english_stemming_tokenizer_finds_tokenization(page, shipped_site, host):
    page.goto(url("http", shipped_site, host))
    box(page).click()
    page.keyboard.type("tokenizer", delay=20)
    expect(options(page).first).to_be_visible()
    marked = {m.lower() for m in page.locator("#search-list mark").all_inner_texts()}
    assert "tokenizer" not in marked or len(marked) > 1
    assert marked & {"tokenization", "tokens", "token", "tokenizers"}, marked


def test_arrows_move_the_active_option_escape_closes_then_empties(page, shipped_site, host):
    page.goto(url("http", shipped_site, host))
    box(page).click()
    page.keyboard.type("attention", delay=20)
    expect(options(page).first).to_have_attribute("aria-selected", "true")
    n = options(page).count()
    assert n >= 3
    page.keyboard.press("ArrowDown")
    expect(options(page).nth(1)).to_have_attribute("aria-selected", "true")
    expect(options(page).first).to_have_attribute("aria-selected", "false")
    expect(box(page)).to_have_attribute("aria-activedescendant", options(page).nth(1).get_attribute("id"))
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # from the first, up wraps to the last
    expect(options(page).nth(n - 1)).to_have_attribute("aria-selected", "true")
    expect(box(page)).to_be_focused()  # the focus never leaves the box
    page.keyboard.press("Escape")
    expect(box(page)).to_have_attribute("aria-expanded", "false")
    expect(page.locator(".search-pop")).to_be_hidden()
    expect(box(page)).to_have_value("attention")
    page.keyboard.press("ArrowDown")  # opens it again
    expect(box(page)).to_have_attribute("aria-expanded", "true")
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    expect(box(page)).to_have_value("")
    page.keyboard.type("zzqxj", delay=20)
    expect(page.locator("[data-search] [role=status]")).to_have_text("No results for “zzqxj”")
    expect(box(page)).to_have_attribute("aria-expanded", "false")


def test_a_click_on_a_result_opens_it_and_slash_in_a_text_field_is_typed(page, shipped_site, host):
    page.goto(url("http", shipped_site, host, "labs/attention/"))
    box(page).click()
    page.keyboard.type("nucleus", delay=20)
    first = options(page).first
    expect(first).to_be_visible()
    first.click()
    page.wait_for_url(re.compile(r"/labs/sampling/#[\w-]+$"))
    box(page).click()
    page.keyboard.type("a/b")
    expect(box(page)).to_have_value("a/b")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_with_the_results_open(page, shipped_site, host, scheme):
    from axe_playwright_python.sync_playwright import Axe

    page.emulate_media(color_scheme=scheme)
    page.goto(url("http", shipped_site, host))
    box(page).click()
    page.keyboard.type("softmax", delay=20)
    expect(options(page).first.locator(".search-snippet")).to_be_visible()
    results = Axe().run(page)
    assert results.violations_count == 0, results.generate_report()
