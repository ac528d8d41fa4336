"""Lab 06 (the next-token kind) in a real Chromium, on the shipped site: a token's detail by
keyboard equals the stored numbers, axe-core in light and dark, both screen sizes, and the first
visit's weight; and, marked ``reference``, the learner's own text scored in the page against transformers."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from conftest import gzip_sizes, lab_data, reference
from llama_fixtures import smollm2_gguf
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    ARTIFACTS, _watched_context, axe, axe_clean, context, everything_in, page, settle, shipped, sites, watch,
)

from generator.runtime import decoded

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[1]
LAB = "labs/next-token/"
FIRST_VISIT_GZIP = 35_000  # bytes: the page and every file it loads before the learner asks for more

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _data(shipped) -> dict:
    return lab_data((shipped.folder / LAB / "index.html").read_text(encoding="utf-8"))


def _open(page, shipped):
    page.goto(shipped.url("http", LAB))
    expect(page.locator("#next-token")).to_have_attribute("data-ready", "true")


def test_a_tokens_detail_by_keyboard_is_its_stored_probability_surprise_and_top_5(page, shipped):
    data = _data(shipped)
    _open(page, shipped)
    fox = next(i for i, t in enumerate(data["texts"]) if t["id"] == "fox")
    text = data["texts"][fox]
    k = text["least"]
    tokens = page.locator(f'.nt-text[data-text="{fox}"] .nt-tok[data-prob]')
    assert tokens.count() == len(text["p"])
    assert [float(x) for x in tokens.evaluate_all("bs => bs.map(b => b.dataset.prob)")] == text["p"]
    tokens.nth(k - 1).focus()
    page.keyboard.press("Tab")  # the keyboard alone: on to the least likely token, then Enter
    page.keyboard.press("Enter")
    expect(tokens.nth(k)).to_have_attribute("aria-pressed", "true")
    head = page.locator(".nt-detail-head").inner_text()
    bits = -math.log2(text["p"][k])
    assert f"{bits:.2f} bits" in head, head
    rows = page.locator(".nt-top tbody tr")
    assert rows.count() == 5
    shown = [r.replace("␣", " ").replace("↵", "\n") for r in rows.locator("th").all_inner_texts()]
    assert shown == [data["tok"][str(j)] for j, _ in text["top"][k]]
    # The guess after the text: its own button, the five likeliest next tokens.
    page.locator(f'.nt-text[data-text="{fox}"] .nt-next').click()
    assert "After the whole text" in page.locator(".nt-detail-head").inner_text()
    first = float(re.sub(r"[^\d.]", "", rows.nth(0).locator("td").nth(0).inner_text()))
    assert first == pytest.approx(100 * text["top"][-1][0][1], rel=1e-2)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_on_the_next_token_lab(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    _open(page, shipped)
    page.locator(".nt-tok").nth(1).click()
    everything_in(page)
    page.locator("#nt-att-box").scroll_into_view_if_needed()
    expect(page.locator(".nt-att td[data-w]").first).to_be_visible()  # the grid's colours are judged too
    axe_clean(page, axe)


@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_next_token_screenshots_and_no_sideways_scrolling(browser, watch, shipped, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    for scheme in ("light", "dark"):
        ctx = _watched_context(browser, watch, width, height, device_scale_factor=1)
        try:
            page = ctx.new_page()
            page.emulate_media(color_scheme=scheme)
            _open(page, shipped)
            page.locator(".nt-tok").nth(1).click()
            settle(page)
            name = f"next-token-{width}x{height}-{scheme}.png"
            page.locator("#try-it").screenshot(path=str(ARTIFACTS / name))
            assert (ARTIFACTS / name).stat().st_size > 5_000
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, f"lab 06 scrolls sideways by {overflow}px at {width}x{height}"
        finally:
            ctx.close()
    assert not watch.problems, watch.problems


def test_the_first_visit_is_within_35_kb_gzip(page, shipped):
    """Every response the page gets until it is ready and idle, each gzipped alone, added up."""
    sizes = gzip_sizes(page)
    _open(page, shipped)
    page.wait_for_load_state("networkidle")
    total = sum(sizes.values())
    print(f"lab 06 first visit: {len(sizes)} files, {total:,} bytes gzipped")
    assert total <= FIRST_VISIT_GZIP, sorted(sizes.items(), key=lambda kv: -kv[1])


HELD_OUT = "Bees turn the nectar of flowers into honey, and they store it in wax cells."


@pytest.mark.reference
def test_your_text_scored_in_the_page_is_transformers_within_half_a_point(page, shipped):
    """The learner's own text, typed and scored in the page (the decoder loaded on request), against
    transformers' GGUF-loaded SmolLM2 on the same ids: every token's data-prob within 0.5 points; its
    logit lens, read in the page, NumPy's within 1e-4."""
    torch = reference("torch")
    transformers = reference("transformers")
    reference("accelerate")
    path = smollm2_gguf()
    _open(page, shipped)
    assert not page.evaluate("!!(window.Labs.runtime && window.Labs.runtime.load)")  # nothing loaded yet
    page.get_by_role("button", name=re.compile(r"Load the model \(\d+ MB\)")).click()
    expect(page.locator("#nt-own-form")).to_be_visible(timeout=300_000)
    page.locator("#nt-own-input").fill(HELD_OUT)
    page.keyboard.press("Enter")
    expect(page.locator("#nt-own-out")).to_have_attribute("data-ready", "true", timeout=300_000)
    ids = page.evaluate("Labs.code.nextToken.data.texts.at(-1).ids")
    shown = [float(x) for x in page.locator("#nt-own-out .nt-tok[data-prob]").evaluate_all(
        "bs => bs.map(b => b.dataset.prob)")]
    tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    assert ids[1:] == tokenizer(HELD_OUT, add_special_tokens=False)["input_ids"]
    assert ids[0] == tokenizer.convert_tokens_to_ids("<|endoftext|>")
    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor([ids])).logits[0].double(), -1).numpy()
    theirs = probs[range(len(ids) - 1), ids[1:]]
    gap = max(abs(a - b) for a, b in zip(shown, theirs))
    print(f"your text: {len(shown)} tokens, largest gap of data-prob to transformers {100 * gap:.4f} points")
    assert len(shown) == len(ids) - 1 > 10
    assert gap < 0.005
    # Its detail works as the authored texts' do, and its logit lens, read in the page, is NumPy's
    # within 1e-4 (the build's compute.read_text on the same text).
    index = page.evaluate("Labs.code.nextToken.data.texts.length - 1")
    page.locator("#nt-own-out .nt-tok").nth(5).click()
    assert "bits" in page.locator(".nt-detail-head").inner_text()
    expect(page.locator(".nt-lens")).to_have_attribute("data-at", f"{index}:5", timeout=120_000)
    from generator.kinds.nexttoken import compute
    from generator.models import llama

    want = compute.read_text(llama.cached_model(path), HELD_OUT)
    assert want["ids"] == ids
    # The cache part's timing, both ways, with what it was measured on.
    page.locator("#nt-timing-run").click()
    timed = page.locator("#nt-timing-out span[data-cached-ms]")
    expect(timed).to_have_count(1, timeout=120_000)
    cached, full = int(timed.get_attribute("data-cached-ms")), int(timed.get_attribute("data-full-ms"))
    assert 0 < cached and 0 < full and "Measured just now in this browser" in timed.inner_text()
    print(f"timing in the test's Chromium: {cached} ms a token with the cache, {full} ms without")
    for at in (5, len(ids) - 1):
        got = page.evaluate(f"Labs.code.nextToken.liveLens({index}, {at})")
        assert [row[0] for row in got] == [row[0] for row in want["lens"][at]], at
        assert max(abs(a - b) for g, w in zip(got, want["lens"][at]) for a, b in zip(g[1:], w[1:])) <= 1e-4, at


def test_clicking_a_token_reads_the_logit_lens_where_it_was_predicted(page, shipped):
    """The lens table follows the clicked token: its rows are the stored NumPy readings (the
    script beside the page, within 1e-4 of decoded.json's), loaded on the first click."""
    data = _data(shipped)
    stored = {e.inputs["text"]: e.result for e in decoded.load(ROOT / "content" / LAB).entries.values()
              if e.computation == "next-token-text"}
    _open(page, shipped)
    fox = next(i for i, t in enumerate(data["texts"]) if t["id"] == "fox")
    record = stored[data["texts"][fox]["text"]]
    k = len(record["ids"]) - 3  # " dog"
    page.locator(f'.nt-text[data-text="{fox}"] .nt-tok[data-at="{k}"]').click()
    expect(page.locator(".nt-lens")).to_have_attribute("data-at", f"{fox}:{k}")
    lens = page.evaluate(f"Labs.data.nextTokenLens{fox}.lens[{k}]")
    want = record["lens"][k]
    assert [row[0] for row in lens] == [row[0] for row in want]
    assert max(abs(a - b) for got, row in zip(lens, want) for a, b in zip(got[1:], row[1:])) <= 1e-4
    rows = page.locator("#nt-lens-body tr")
    assert rows.count() == len(want) == 31
    last = rows.nth(30).locator("td").nth(0).inner_text().replace("␣", " ")
    assert last == record["text"][str(want[-1][0])]
    assert "“ dog” (the target)" in page.locator("#nt-lens-where").inner_text()


def test_the_attention_grid_is_the_stored_lower_triangle_of_the_chosen_head(page, shipped):
    data = _data(shipped)
    stored = {e.inputs["text"]: e.result for e in decoded.load(ROOT / "content" / LAB).entries.values()
              if e.computation == "next-token-attention"}
    _open(page, shipped)
    fox = next(i for i, t in enumerate(data["texts"]) if t["id"] == "fox")
    page.locator("#nt-att-box").scroll_into_view_if_needed()
    expect(page.locator(".nt-att")).to_have_attribute("data-shows", "0:0:0")
    page.locator("#nt-att-text").select_option(str(fox))
    page.locator("#nt-att-layer").select_option("3")
    page.locator("#nt-att-head").select_option("4")
    grid = page.locator(".nt-att")
    expect(grid).to_have_attribute("data-shows", f"{fox}:3:4")
    want = stored[data["texts"][fox]["text"]]["weights"][3][4]
    m = len(data["texts"][fox]["ids"])
    assert [int(x) for x in grid.locator("td[data-w]").evaluate_all("cs => cs.map(c => c.dataset.w)")] == want
    assert grid.locator("td.nt-masked").count() == m * (m - 1) // 2
    for i in range(m):  # each row's whole percents add up to 100
        cells = grid.locator("tbody tr").nth(i).locator("td[data-w]")
        assert sum(int(t) for t in cells.all_inner_texts()) == 100
    text = page.locator("#nt-att-title + p").inner_text()
    assert "query heads 3–5 read key/value head 1" in text and "3-fold smaller KV cache" in text
