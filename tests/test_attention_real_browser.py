"""Lab 07's "Your sentence" through the real model (MiniLM, 8-bit, in the page), in a real Chromium:
the page's numbers against NumPy's run of the same bundle (reference_model), from file:// and over
http under the site's CSP; Cancel; a missing and a corrupt model file; the hash across a reload;
axe with the real model's views open. Shares the sites and helpers of test_browser.py."""

from __future__ import annotations

import functools
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    _Handler, _watched_context, axe, axe_clean, context, head_select, open_lab, page, sentence_select, shipped, sites, watch,
    words,
)

from generator.kinds.attention.realheads import largest_remainder_array, word_attention
from generator.runtime.bundle import reference_model
from generator.runtime.site import bundle_at
from generator.serve.statichost import StaticHostServer

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "content" / "models" / "all-minilm-l6-v2"
SENTENCE = "The unbelievably tired cat didn't chase Zürich's pigeons."
LOAD_MS = 120_000  # 16 MB of base64 decoded on a shared machine

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _pick_real(page):
    page.get_by_label("Your sentence", exact=True).focus()
    page.get_by_label(re.compile("the real model, MiniLM")).check()
    expect(page.locator("#sl-own-load")).to_contain_text("MB to download", timeout=30_000)


def _show(page, text: str = SENTENCE):
    page.get_by_label("Your sentence", exact=True).fill(text)
    page.get_by_role("button", name="Show it").click()


def _shown(page):
    expect(sentence_select(page)).to_have_value("own", timeout=LOAD_MS)


@functools.lru_cache(maxsize=1)
def _numpy(text: str):
    return word_attention(reference_model(bundle_at(BUNDLE)), text)


@pytest.mark.parametrize("where", ["file", "http"])
def test_the_real_model_on_a_typed_sentence_equals_numpy(page, shipped, where):
    open_lab(page, shipped, where)
    _pick_real(page)
    expect(page.locator("#sl-own-load .sl-own-expect")).to_contain_text("8-bit weights:")  # what a sentence can expect (own-real.js expectation)
    expect(page.locator("#sl-own-load a")).to_have_attribute("href", re.compile(r"model-license\.[0-9a-f]{8}\.txt$"))
    _show(page)
    _shown(page)
    got = page.evaluate("(() => { const W = Labs.code.ownReal.last; return {words: W.words, special: W.special, "
                        "attention: Array.from(W.attention), perMille: W.perMille}; })()")
    want = _numpy(SENTENCE)
    assert got["words"] == list(want.words)  # the pieces merged into words as the build merges them
    assert got["special"] == list(want.special)
    n = len(want.words)
    mine = np.asarray(got["attention"]).reshape(want.attention.shape[0], want.attention.shape[1], n, n)
    assert np.abs(mine - want.attention).max() <= 1e-4
    # Each row rounded to per mille as the build rounds real-heads.json (Hamilton's method).
    assert got["perMille"] == largest_remainder_array(mine, 1000).tolist()
    # Every view of a real sentence: the 72 heads, named as the lab's own sentences' heads.
    expect(head_select(page).locator("option")).to_have_count(72)
    expect(head_select(page).locator('option[value="L3H1"]')).to_have_text(re.compile("^layer 3, head 1( — finder: .+)?$"))
    assert words(page).all_inner_texts() == list(want.words)
    # It opens on the head finder's best head, and the Head list marks every head the finder found.
    found = page.evaluate("Labs.data.ownRealModel.found")  # the finder's heads, best first, with the model's page data
    assert found and head_select(page).input_value() == found[0]["head"]
    marked = head_select(page).locator("option", has_text="— finder: ")
    assert sorted(marked.evaluate_all("os => os.map(o => o.value)")) == sorted({f["head"] for f in found})
    best = int(found[0]["head"][1:].split("H")[0]), int(found[0]["head"].split("H")[1])
    # ... on the word whose strongest link to another word, in that head, is the sentence's strongest.
    rows = np.asarray(got["perMille"])[best]  # as the page has them: per mille
    words_only = [i for i, s in enumerate(want.special) if not s]
    q = max(words_only, key=lambda i: max(rows[i][j] for j in words_only if j != i))
    expect(page.locator("#sl-caption")).to_have_text(re.compile(f"^Where “{re.escape(want.words[q])}” looks — layer {best[0]}, head {best[1]}$"))
    expect(page.locator("#sl-grid button.sl-cell")).to_have_count(72)
    assert re.search(r"&m=real$", page.url) and "t=The+unbelievably" in page.url


def test_cancel_leaves_the_designed_heads_working(page, shipped):
    open_lab(page, shipped, "http")
    _pick_real(page)
    held = []  # the weights' layer files are held back, so the download is still under way when the learner cancels
    page.route(re.compile(r"/model-layers-\d+\.[0-9a-f]+\.js$"), lambda route: held.append(route))
    _show(page)
    cancel = page.get_by_role("button", name="Cancel")
    expect(cancel).to_be_visible()
    # The bytes so far are text beside the bar, not only its aria-valuetext.
    amount = page.locator("#sl-own-load .sl-own-mb")
    expect(amount).to_have_text(re.compile(r"^[\d.]+ MB of [\d.]+ MB$"), timeout=30_000)
    expect(amount).to_be_visible()
    assert page.evaluate("""() => { const b = document.querySelector("#sl-own-load progress");  // one moment: the download goes on
        return b.getAttribute("aria-valuetext") === b.parentNode.querySelector(".sl-own-mb").textContent; }""")
    cancel.click()
    expect(page.locator(".sl-own-msg")).to_have_text(re.compile("cancelled; the designed heads still work"))
    expect(cancel).to_be_hidden()
    expect(page.get_by_role("button", name="Show it")).to_be_focused()  # the keyboard goes on from where it was
    assert held
    page.unroute(re.compile(r"/model-layers-\d+\.[0-9a-f]+\.js$"))
    page.get_by_label(re.compile("the designed heads")).check()
    _show(page, "The dog chased the ball")
    _shown(page)
    assert words(page).all_inner_texts()[:2] == ["The", "dog"]


def _broken_copy(shipped, tmp_path: Path, how: str):
    """The shipped site with one layer file of the model missing or corrupt, served with the CSP."""
    folder = tmp_path / "site"
    shutil.copytree(shipped.folder, folder)
    victim = sorted(folder.glob("assets/runtime/*/model-layers-03.*.js"))[0]
    if how == "missing":
        victim.unlink()
    else:
        text = victim.read_text()
        at = len(text) // 2
        victim.write_text(text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:])
    server = StaticHostServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/labs/attention/"


@pytest.mark.parametrize("how, said", [("missing", "Part of the real model is missing from this site, so it could not be loaded."),
                                       ("corrupt", "Part of the real model arrived damaged")])
def test_a_missing_or_corrupt_model_file_says_so_and_the_page_works(page, shipped, tmp_path, watch, how, said):
    server, url = _broken_copy(shipped, tmp_path, how)
    watch.prefixes += (url.removesuffix("labs/attention/"),)  # this copy of the site is the site here
    watch.allow("404|Failed to load resource")
    try:
        page.goto(url)
        expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
        _pick_real(page)
        _show(page)
        msg = page.locator(".sl-own-msg")
        expect(msg).to_contain_text(said, timeout=LOAD_MS)
        expect(msg).to_contain_text("The designed heads still work.")
        assert "model-" not in msg.text_content()  # the learner is told what went wrong, not a file's name
        page.get_by_label(re.compile("the designed heads")).check()
        _show(page, "The dog chased the ball")
        _shown(page)
    finally:
        server.shutdown()
        server.server_close()


def test_the_sentence_and_the_model_survive_a_reload(page, shipped):
    open_lab(page, shipped, "http")
    _pick_real(page)
    _show(page, "Birds sing loudly")
    _shown(page)
    expect(page).to_have_url(re.compile(r"#s=own&.*t=Birds\+sing\+loudly&m=real$"))
    page.reload()
    # The box is filled and the real model chosen again; the model loads when asked (Show it).
    expect(page.get_by_label("Your sentence", exact=True)).to_have_value("Birds sing loudly", timeout=30_000)
    expect(page.get_by_label(re.compile("the real model, MiniLM"))).to_be_checked()
    # The stage, where the learner looks, says the link's sentence needs the model, and offers to load it.
    notice = page.locator("#sl-notice")
    expect(notice).to_contain_text(re.compile(r"This link shows “Birds sing loudly” through the real model, which loads when you ask: about [\d.]+ MB"))
    expect(notice).to_be_in_viewport()
    assert "m=real" in page.url
    notice.get_by_role("button", name="Show it").click()
    _shown(page)
    assert words(page).all_inner_texts() == ["[CLS]", "Birds", "sing", "loudly", "[SEP]"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_is_clean_with_the_real_model_views_open(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    open_lab(page, shipped, "http")
    _pick_real(page)
    _show(page, "Rivers carve valleys slowly")
    _shown(page)
    expect(page.locator("#sl-model")).to_have_attribute("open", "")
    page.locator("#sl-pattern summary").click()
    expect(page.locator("table.sl-pat")).to_be_visible()
    axe_clean(page, axe)


def test_the_choice_and_its_download_note_fit_a_phone(browser, watch, shipped):
    ctx = _watched_context(browser, watch, 375, 812)
    try:
        page = ctx.new_page()
        open_lab(page, shipped, "http")
        page.get_by_label("Your sentence", exact=True).focus()
        # The choice is in the page; the focus loads the code (own-ui.js) that acts on it.
        expect(page.get_by_label(re.compile("the designed heads"))).to_be_visible()
        page.wait_for_function("() => !!window.Labs.code.own", timeout=30_000)
        page.keyboard.press("Tab")  # from the box to the choice: the radios are one Tab stop, on the checked one
        expect(page.get_by_label(re.compile("the designed heads"))).to_be_focused()
        page.keyboard.press("ArrowDown")  # the arrow keys pick
        expect(page.get_by_label(re.compile("the real model, MiniLM"))).to_be_checked()
        expect(page.locator("#sl-own-load")).to_contain_text("MB to download", timeout=30_000)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        box = page.locator("#sl-own-load").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


def test_offline_the_page_blames_the_connection_and_a_kept_model_still_reads_new_sentences(page, context, shipped, watch):
    """A learner who goes offline before loading the model is told the connection is the cause. Back
    online, "Keep for offline use" loads every part (with its size said first); offline again, a
    sentence of words never read before is still shown."""
    watch.allow("ERR_INTERNET_DISCONNECTED")  # what the browser logs of each file it could not fetch offline
    open_lab(page, shipped, "http")
    _pick_real(page)
    keep = page.get_by_role("button", name=re.compile(r"^Keep for offline use \(up to [\d.]+ MB\)$"))
    expect(keep).to_be_visible()
    from generator.runtime.pagefiles import SHARD_ROWS  # what a word's part of the model is, from the manifest

    expect(page.locator("#sl-own-load")).to_contain_text(re.compile(rf"each new word needs a small part of the model \(about \d+ KB for {SHARD_ROWS} words"))
    context.set_offline(True)
    _show(page)
    msg = page.locator(".sl-own-msg")
    expect(msg).to_contain_text("You are offline, so the real model could not be loaded.", timeout=LOAD_MS)
    assert "model-" not in msg.text_content()
    context.set_offline(False)
    keep.click()
    expect(page.locator("#sl-own-load")).to_contain_text("Kept: every part of the model is loaded", timeout=LOAD_MS)
    expect(keep).to_be_hidden()
    context.set_offline(True)
    _show(page, "Quixotic zebras juggle marmalade beneath Reykjavik's volcanoes")
    _shown(page)
    assert "zebras" in words(page).all_inner_texts()
    context.set_offline(False)
