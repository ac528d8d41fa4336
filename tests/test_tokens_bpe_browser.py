"""Lab 03's BPE beside WordPiece in a real Chromium: nothing of it loads before the learner presses
"Compare with BPE" (the tokenizer alone then, never the weights), the tokens it lists for what
the learner types equal generator/models/bpe.py's, written as bpe.visible writes them, over http
and from file://, and a failed load says why without blaming the connection when it is not the
cause."""

from __future__ import annotations

import re

import pytest
from test_browser import (  # noqa: F401 — fixtures shared with the other labs' browser tests
    WHERE, _watched_context, context, page, shipped, sites, watch,
)
from llama_fixtures import smollm2_gguf

from generator.kinds.tokens import bytelevel

pytestmark = pytest.mark.browser
LAB = "labs/tokens/"

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None

# What a learner might type: case, accents, spaces before words and in runs, emoji (bytes),
# scripts without spaces, numerals (one token each), code, a byte this vocabulary lacks, a
# literal special token (spelt, not obeyed), control characters.
TEXTS = [
    "Tokenizers split unhappiness into pieces.", "Paris paris PARIS", "résumé resume café naïve",
    "Hello world", " leading space", "two  spaces   and\ttabs\nnewline", "I love pizza😀", "😀😀 👩‍👩‍👧 🇫🇷",
    "東京は日本の首都です", "Bonjour, comment allez-vous aujourd'hui ?", "नमस्ते दुनिया", "مرحبا بالعالم",
    "3.14159265 and 1,000,000", "for (let i = 0; i < n; i++) total += x[i];", "don't you'll I'm", "<|im_start|>user",
    "a\u00a0b\u200bc", "\x01\x7f", "\U00040000 lead byte F1", "", "   ",
]


@pytest.fixture(scope="module")
def tok():
    return bytelevel.tokenizer(smollm2_gguf())


def _open(page, shipped, where="http"):
    page.goto(shipped.url(where, LAB))
    expect(page.locator("#tokens")).to_have_attribute("data-ready", "true")


TYPE_ALL = """async (texts) => {
  const box = document.getElementById("tk-text"), out = [];
  for (const t of texts) {
    box.value = t;
    box.dispatchEvent(new Event("input"));
    out.push({text: box.value, pieces: [...document.querySelectorAll("#tk-bpe-tokens > li .tk-p")].map(e => e.textContent),
              ids: [...document.querySelectorAll("#tk-bpe-tokens > li")].map(e => +e.dataset.id),
              counts: document.getElementById("tk-bpe-counts").textContent});
  }
  return out;
}"""


@pytest.mark.parametrize("where", WHERE)
def test_bpe_loads_on_press_alone_and_lists_bpe_pys_tokens_for_what_is_typed(page, shipped, watch, where, tok):
    _open(page, shipped, where)
    assert not any(re.search(r"model-tokenizer|model-manifest|bpe-compare|runtime\.", r) for r in watch.requests)
    expect(page.locator("#tk-bpe-hint")).to_contain_text("KB compressed, loaded when you ask")
    page.get_by_role("button", name="Compare with BPE").click()
    expect(page.locator("#tk-bpe")).to_have_attribute("data-state", "ready", timeout=30_000)
    expect(page.locator("#tk-bpe-status")).to_contain_text("49,152 tokens")
    assert not any("model-weights" in r for r in watch.requests)  # a tokenizer needs no weights
    results = page.evaluate(TYPE_ALL, TEXTS)
    for r in results:
        want = bytelevel.count(r["text"], tok)
        assert (r["pieces"], r["ids"]) == (list(want.pieces), list(want.ids)), r["text"]
        assert r["counts"].startswith(f"{len(want.ids)} BPE tokens"), r
    emoji = next(r for r in results if r["text"] == "I love pizza😀")
    assert "[UNK]" not in emoji["pieces"] and "".join(emoji["pieces"]).endswith("<0xF0><0x9F><0x98><0x80>")
    assert "holding bytes of a character" in emoji["counts"]
    spaced = next(r for r in results if r["text"] == "Hello world")
    assert spaced["pieces"] == ["Hello", "␣world"]
    lacking = next(r for r in results if r["text"].startswith("\U00040000"))
    assert "were dropped" in lacking["counts"]  # 0xF1 has no token: said, not hidden
    # WordPiece follows the same typing: both lists show the same text
    page.locator("#tk-text").fill("Paris PARIS")
    expect(page.locator("#tk-tokens .tk-p")).to_have_text(["[CLS]", "paris", "paris", "[SEP]"])
    expect(page.locator("#tk-bpe-tokens .tk-p")).to_have_text(["Paris", "␣PAR", "IS"])


def test_a_missing_tokenizer_file_is_said_plainly_and_the_button_comes_back(browser, watch, shipped):
    ctx = _watched_context(browser, watch)
    watch.allow(r"Failed to load resource|net::ERR")
    try:
        page = ctx.new_page()
        page.route(re.compile(r".*model-tokenizer\..*"), lambda route: route.abort())
        _open(page, shipped)
        page.get_by_role("button", name="Compare with BPE").click()
        expect(page.locator("#tk-bpe")).to_have_attribute("data-state", "failed", timeout=20_000)
        status = page.locator("#tk-bpe-status").inner_text()
        assert status.startswith("The BPE tokenizer could not be loaded") and "offline" not in status, status
        expect(page.get_by_role("button", name="Compare with BPE")).to_be_enabled()
    finally:
        ctx.close()
