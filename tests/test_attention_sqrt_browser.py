"""The ÷√d demo under lab 07's spotlight (kinds/attention/sqrt.html, static/70-sqrt.js) in a real
Chromium: the d slider by keyboard, the numbers it shows against the build's, axe-core in light and
dark, no JavaScript, both screen sizes."""

from __future__ import annotations

import re

import pytest
from conftest import lab_data, labs_data
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    ARTIFACTS, LAB, WHERE, _watched_context, axe, axe_clean, context, page, settle, shipped, sites, tab_to, watch,
)

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _sqrt(shipped) -> dict:
    """The numbers the page's demo script carries (sqrt-demo.<hash>.js, named in #lab-data)."""
    html = (shipped.folder / LAB / "index.html").read_text(encoding="utf-8")
    src = lab_data(html)["sqrt"]["src"]
    script = (shipped.folder / LAB / src).read_text(encoding="utf-8")
    return labs_data(script, "sqrtDemo")


# Resolves once an IntersectionObserver like the demo's loader's (70-sqrt.js) has been told where the
# demo is, with whether it is near the screen. Observers are told in the order they were made, so by
# then the loader's own observer has been told too, and would have added the demo's script.
SEEN_BY_AN_OBSERVER = """() => new Promise(resolve => {
  const o = new IntersectionObserver(entries => { o.disconnect(); resolve(entries[0].isIntersecting); },
                                     { rootMargin: "200px 0px" });
  o.observe(document.getElementById("sqrt-demo"));
})"""


def test_the_demo_is_not_loaded_on_a_first_visit_and_is_when_it_nears_the_screen(page, shipped, watch):
    page.goto(shipped.url("http", LAB))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    assert page.evaluate(SEEN_BY_AN_OBSERVER) is False  # the loader has looked, and the demo is not near
    expect(page.locator('script[src*="sqrt-demo"]')).to_have_count(0)
    assert not any("sqrt-demo" in url for url in watch.requests), watch.requests
    expect(page.locator("#sqrt-demo")).to_have_attribute("data-ready", "false")
    page.locator("#sqrt-demo").scroll_into_view_if_needed()
    expect(page.locator("#sqrt-demo")).to_have_attribute("data-ready", "true")
    assert sum(re.search(r"sqrt-demo\.[0-9a-f]{8}\.js$", url) is not None for url in watch.requests) == 1
    assert sum(re.search(r"sqrt-demo\.[0-9a-f]{8}\.css$", url) is not None for url in watch.requests) == 1


def _open(page, shipped, where="http"):
    page.goto(shipped.url(where, LAB))
    page.locator("#sqrt-demo").scroll_into_view_if_needed()
    expect(page.locator("#sqrt-demo")).to_have_attribute("data-ready", "true")


def _bars(page, side: str) -> list[int]:
    return [int(t.rstrip("%")) for t in page.locator(f"#sq-bars-{side} tbody .sq-pct").all_inner_texts()]


def _numbers(page, side: str) -> dict[str, str]:
    dts = page.locator(f"#sq-nums-{side} dt").all_inner_texts()
    dds = page.locator(f"#sq-nums-{side} dd").all_inner_texts()
    return dict(zip(dts, dds))


@pytest.mark.parametrize("where", WHERE)
def test_moving_d_to_512_collapses_the_unscaled_softmax_but_not_the_scaled_one(page, shipped, where):
    sqrt = _sqrt(shipped)
    _open(page, shipped, where)
    slider = page.get_by_label(re.compile(r"Key length d"))
    expect(slider).to_have_attribute("type", "range")
    # A keyboard user reaches the slider with Tab (from the section's heading) and moves it with the arrow keys.
    page.locator("#sq-title").click()
    tab_to(page, slider)
    first = sqrt["sizes"][0]
    expect(page.locator("#sq-d-out")).to_have_text(str(first["d"]))
    assert _bars(page, "raw") == first["pct"] and _bars(page, "scaled") == first["pct_scaled"]
    seen = [first["d"]]
    for _ in sqrt["sizes"][1:]:
        page.keyboard.press("ArrowRight")
        seen.append(int(page.locator("#sq-d-out").inner_text()))
    assert seen == [s["d"] for s in sqrt["sizes"]] == [2, 8, 32, 128, 512]
    expect(slider).to_have_attribute("aria-valuetext", "d = 512")
    big = sqrt["sizes"][-1]
    raw, scaled = _bars(page, "raw"), _bars(page, "scaled")
    assert raw == big["pct"] and scaled == big["pct_scaled"] and sum(raw) == sum(scaled) == 100
    assert raw[0] >= 99, raw  # one key takes (nearly) everything…
    assert scaled[0] < 50 and sum(1 for p in scaled if p >= 5) >= 4, scaled  # …while ÷√d keeps it soft
    raw_top = int(_numbers(page, "raw")["Average top weight"].rstrip("%"))
    scaled_top = int(_numbers(page, "scaled")["Average top weight"].rstrip("%"))
    assert raw_top >= 90 and scaled_top < 50, (raw_top, scaled_top)
    assert _numbers(page, "raw")["Spread of the scores"] == f"{big['spread']:.1f}"
    assert _numbers(page, "scaled")["Spread of the scores"] == "1.0"
    expect(page.locator("#sq-live")).to_contain_text("d = 512")
    expect(page.locator("#sq-table tbody tr.is-current th")).to_have_text("512")
    # Home goes back to the smallest size, where both are soft.
    page.keyboard.press("Home")
    expect(page.locator("#sq-d-out")).to_have_text("2")
    assert _bars(page, "raw")[0] < 50


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_in_the_sqrt_demo(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    _open(page, shipped)
    page.locator("#sq-d").focus()
    page.keyboard.press("End")
    page.locator("#sqrt-demo details summary").click()
    expect(page.locator("#sq-table")).to_be_visible()
    axe_clean(page, axe, context="#sqrt-demo")


def test_without_javascript_the_table_has_every_number(browser, watch, shipped):
    ctx = _watched_context(browser, watch, java_script_enabled=False)
    try:
        page = ctx.new_page()
        page.goto(shipped.url("http", LAB))
        expect(page.locator(".sq-nojs")).to_be_visible()
        expect(page.locator(".sq-app")).to_be_hidden()
        page.locator("#sqrt-demo details summary").click()
        rows = page.locator("#sq-table tbody tr")
        expect(rows).to_have_count(5)
        last = rows.nth(4).locator("th, td").all_inner_texts()
        big = _sqrt(shipped)["sizes"][-1]
        assert last[:4] == ["512", f"{big['spread']:.1f} (22.6)", f"{100 * big['top']:.0f}%", f"{100 * big['top_scaled']:.0f}%"]
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_sqrt_demo_screenshots_and_no_sideways_scrolling(browser, watch, shipped, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = _watched_context(browser, watch, width, height, device_scale_factor=1)
    try:
        page = ctx.new_page()
        _open(page, shipped)
        page.locator("#sq-d").focus()
        page.keyboard.press("End")
        page.locator("#sq-title").scroll_into_view_if_needed()
        page.evaluate("document.getElementById('sq-title').scrollIntoView({block: 'start'})")
        settle(page)
        name = f"sqrt-{width}x{height}.png"
        page.screenshot(path=str(ARTIFACTS / name))
        assert (ARTIFACTS / name).stat().st_size > 5_000
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the lab page scrolls sideways by {overflow}px at {width}x{height}"
        box = page.locator("#sqrt-demo").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
    finally:
        ctx.close()
    assert not watch.problems, watch.problems
