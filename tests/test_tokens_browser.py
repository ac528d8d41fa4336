"""The tokens lab (lab 03) in a real Chromium: the vocabulary loading on first use only, "Your text"
and its Tokens list, step by step, compare, the pieces quiz, axe-core in light and dark, both
screen sizes, file://, and the page's pieces and ids against transformers' BertTokenizer on more
than 1,000 generated strings, typed through the page's own text box."""

from __future__ import annotations

import gzip
import re
from urllib.parse import urlsplit

import pytest
from conftest import lab_data
from test_browser import (  # noqa: F401 — fixtures shared with the other labs' browser tests
    ARTIFACTS, WHERE, _watched_context, axe, context, everything_in, page, settle, shipped, sites, watch,
)
from test_runtime_tokenizer_parity import _against_transformers, generated

from generator.models.wordpiece import clean_text, encode
from generator.kinds.tokens.pieces import count, search
from generator.runtime.site import bundle_at

pytestmark = pytest.mark.browser
LAB = "labs/tokens/"
BUNDLE_DIR = "content/models/all-minilm-l6-v2"
N_PARITY = 1300

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


@pytest.fixture(scope="module")
def tokenizer(shipped):
    return bundle_at(shipped.content / "models" / "all-minilm-l6-v2").tokenizer


def _data(shipped) -> dict:
    html = (shipped.folder / LAB / "index.html").read_text(encoding="utf-8")
    return lab_data(html)


def _open(page, shipped, where="http"):
    page.goto(shipped.url(where, LAB))
    expect(page.locator("#tokens")).to_have_attribute("data-ready", "true")


def _load(page):
    page.locator("#tk-text").focus()
    expect(page.locator("#tokens")).to_have_attribute("data-vocab", "ready", timeout=20_000)


def _listed(page, selector="#tk-tokens") -> list[tuple[str, int, bool]]:
    return [tuple(x) for x in page.evaluate("""(sel) => [...document.querySelectorAll(sel + " > li")].map(li =>
        [li.querySelector(".tk-p").textContent, +li.dataset.id, li.hidden])""", selector)]


def _tries_shown(page) -> list[list]:
    """Each prefix step by step shows as tried, and whether it shows as found."""
    return page.evaluate("""() => [...document.querySelectorAll("#tk-steps .tk-try")].map(s =>
        [s.firstChild.textContent, s.classList.contains("tk-hit")])""")


def test_first_visit_weighs_at_most_35_kb_gzip_and_the_vocabulary_is_not_part_of_it(shipped):
    page = shipped.folder / LAB / "index.html"
    html = re.sub(r"<noscript>.*?</noscript>", "", page.read_text(encoding="utf-8"), flags=re.S)
    refs = re.findall(r'<(?:link\b[^>]*\brel="(?:stylesheet|icon|preload|modulepreload)"[^>]*\bhref|script\b[^>]*\bsrc)="([^"]+)"', html)
    files = [("index.html", page.read_bytes())] + [(r, (page.parent / r).read_bytes()) for r in refs if not urlsplit(r).scheme]
    packed = sum(len(gzip.compress(b, 9)) for _, b in files)
    assert packed <= 35_000, f"first visit {packed} B gzip"
    assert not any("model-vocab" in r or "runtime." in r for r in refs), refs
    data = _data(shipped)
    assert data["runtime"]["vocab_bytes"] > 200_000  # the script it does not load on a first visit


@pytest.mark.parametrize("where", WHERE)
def test_the_vocabulary_loads_on_focus_and_typing_lists_the_pieces_with_their_ids(page, shipped, watch, where, tokenizer):
    _open(page, shipped, where)
    data = _data(shipped)
    enc = encode(data["text"], tokenizer)
    assert _listed(page) == [(t, i, False) for t, i in zip(enc.tokens, enc.ids)]  # drawn at build
    assert not any("model-vocab" in r for r in watch.requests)
    expect(page.locator("#tk-nojs")).to_have_count(0)
    expect(page.locator("#tk-load-hint")).to_be_visible()
    _load(page)
    assert sum("model-vocab" in r for r in watch.requests) == 1
    text = "Café didn't pay 3.14 for 東京 😀 unhappiness!"
    page.locator("#tk-text").fill(text)
    enc = encode(text, tokenizer)
    expect(page.locator("#tk-tokens > li")).to_have_count(len(enc.tokens))
    assert _listed(page) == [(t, i, False) for t, i in zip(enc.tokens, enc.ids)]
    counts = {k: page.locator(f'[data-count="{k}"]').inner_text() for k in ("chars", "words", "pieces")}
    assert counts == {"chars": str(len(text)), "words": str(len(clean_text(text).split())),
                      "pieces": str(len(enc.tokens) - 2)}
    page.get_by_label("Show [CLS] and [SEP]").uncheck()
    assert [h for _, _, h in _listed(page)] == [True] + [False] * (len(enc.tokens) - 2) + [True]
    expect(page.locator("#tk-tokens > li:visible")).to_have_count(len(enc.tokens) - 2)
    page.locator("#tk-text").fill("unhappiness")  # the choice holds for new text
    expect(page.locator("#tk-tokens > li:visible")).to_have_count(4)


@pytest.mark.parametrize("where", WHERE)
def test_step_by_step_shows_every_prefix_tried_and_the_normalisation(page, shipped, where, tokenizer):
    _open(page, shipped, where)
    data = _data(shipped)
    # drawn at build for the default word
    default = [search(w, tokenizer) for w in count(data["word"], tokenizer).words]
    assert _tries_shown(page) == [[t["piece"], t["found"]] for s in default for t in s["tries"]]
    page.locator("#tk-word").fill("Naïve-Tokenization")
    expect(page.locator("#tokens")).to_have_attribute("data-vocab", "ready", timeout=20_000)
    expect(page.locator("#tk-steps .tk-w").first).to_have_text("Naïve-Tokenization")
    steps = page.locator("#tk-steps > li").all_inner_texts()
    assert "naïve-tokenization" in steps[1] and "naive-tokenization" in steps[2]
    words = ["naive", "-", "tokenization"]
    tries = [t for w in words for t in search(w, tokenizer)["tries"]]
    assert _tries_shown(page) == [[t["piece"], t["found"]] for t in tries]
    assert "token ##ization" in " ".join(page.locator("#tk-steps .tk-result code").all_inner_texts())


def test_compare_and_why_it_matters_show_the_examples_as_python_splits_them(page, shipped, tokenizer):
    _open(page, shipped, "file")
    data = _data(shipped)
    lab = re.findall(r"- id: ([a-z0-9-]+)\n\s+text: (.+)", (shipped.content / "labs/tokens/lab.yaml").read_text("utf-8"))
    assert len(lab) >= 6
    for example_id, text in lab:
        c = count(text.strip('"'), tokenizer)
        assert _listed(page, f"#tk-ex-{example_id} ol") == [(p, i, False) for p, i in zip(c.pieces, c.ids)]
        row = page.locator(f"#tk-ex-{example_id} td.tk-num").all_inner_texts()
        assert row[0] == str(c.spaced_words)
        total = len(c.pieces) + 2
        item = page.locator(f'#tk-matters li[data-example="{example_id}"]').inner_text()
        assert f"is {total} pieces" in item and f"{data['runtime']['positions'] // total} such texts" in item
    assert page.locator("#tk-ex-emoji .tk-unk").count() == 1


def test_the_pieces_questions_grade_a_count_and_a_clicked_piece(page, shipped):
    _open(page, shipped)
    page.locator("#quick-check-title").scroll_into_view_if_needed()
    count_q = page.locator("#quiz-count-unhappiness")
    count_q.locator(".quiz-choices [data-option]:not([data-correct])").first.click()
    expect(count_q.locator(".quiz-feedback")).to_contain_text("Not quite")
    count_q.get_by_role("button", name="Try again").click()
    count_q.get_by_role("button", name="4", exact=True).click()
    expect(count_q.locator(".quiz-feedback")).to_contain_text("Right")
    pick = page.locator("#quiz-pick-continuation")
    pick.get_by_role("button", name="##izer", exact=True).click()
    expect(pick.locator(".quiz-feedback")).to_have_text("Correct!")
    unk = page.locator("#quiz-pick-unknown")
    unk.get_by_role("button", name="[UNK]", exact=True).press("Enter")  # keyboard works too
    expect(unk.locator(".quiz-feedback")).to_have_text("Correct!")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_axe_clean_and_no_sideways_scrolling(browser, watch, shipped, axe, scheme, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = _watched_context(browser, watch, width, height, device_scale_factor=1, color_scheme=scheme)
    try:
        page = ctx.new_page()
        _open(page, shipped)
        _load(page)
        page.get_by_role("button", name="Compare with BPE").click()  # BPE's list beside WordPiece's, checked too
        expect(page.locator("#tk-bpe")).to_have_attribute("data-state", "ready", timeout=30_000)
        page.locator("#tk-text").fill("Tokenizers split antidisestablishmentarianism and 😀 into pieces.")
        page.locator("#tk-word").fill("antidisestablishmentarianism")
        expect(page.locator("#tk-steps .tk-w").first).to_have_text("antidisestablishmentarianism")
        everything_in(page)
        settle(page)
        page.locator("#try-it").screenshot(path=str(ARTIFACTS / f"tokens-{width}x{height}-{scheme}.png"))
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the tokens lab scrolls sideways by {overflow}px at {width}x{height}"
        results = axe.run(page)
        assert results.violations_count == 0, results.generate_report()
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


TYPE_ALL = """async (texts) => {
  const box = document.getElementById("tk-text"), out = [];
  for (const t of texts) {
    box.value = t;
    box.dispatchEvent(new Event("input"));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    await new Promise(r => setTimeout(r, 0));
    out.push({text: box.value, tokens: [...document.querySelectorAll("#tk-tokens > li .tk-p")].map(e => e.textContent),
              ids: [...document.querySelectorAll("#tk-tokens > li")].map(e => +e.dataset.id),
              counts: ["chars", "words", "pieces"].map(k => +document.querySelector(`[data-count="${k}"]`).textContent)});
  }
  return out;
}"""


def test_the_pages_pieces_and_ids_equal_bert_tokenizer_on_generated_strings(page, shipped, tokenizer):
    pieces = sorted(p for p in tokenizer.vocab if not p.startswith("["))
    texts = [t for t, _ in generated(N_PARITY, seed=23, pieces=pieces)]
    texts = [t for t in texts if not re.search(r"[\ud800-\udfff]", t)]  # a lone surrogate cannot cross to the page
    _open(page, shipped, "file")
    _load(page)
    results = [r for i in range(0, len(texts), 300) for r in page.evaluate(TYPE_ALL, texts[i:i + 300])]
    typed = [r["text"] for r in results]  # what the box holds: a textarea turns \r\n and \r into \n
    assert sum(a != b for a, b in zip(typed, texts)) < len(texts) // 10
    compared, accounted = _against_transformers(typed, results, shipped.content / "models/all-minilm-l6-v2/vocab.txt",
                                                tokenizer)
    assert compared + accounted == len(typed) >= 1000
    for r in results:
        enc = encode(r["text"], tokenizer)
        assert (r["tokens"], r["ids"]) == (list(enc.tokens), list(enc.ids)), r["text"]
        assert r["counts"] == [len(r["text"]), len(clean_text(r["text"]).split()), len(enc.tokens) - 2], r["text"]
    print(f"tokens lab: {len(typed)} strings typed into the page equal BertTokenizer ({compared} as they are, "
          f"{accounted} with literal special tokens read as text)")


def test_without_javascript_the_build_time_pieces_and_a_true_note_are_shown(browser, watch, shipped, tokenizer):
    ctx = _watched_context(browser, watch, java_script_enabled=False)
    try:
        page = ctx.new_page()
        page.goto(shipped.url("file", LAB))
        enc = encode(_data(shipped)["text"], tokenizer)
        assert _listed(page) == [(t, i, False) for t, i in zip(enc.tokens, enc.ids)]
        expect(page.locator("#tk-nojs")).to_be_visible()
        expect(page.locator("#tk-load-hint")).to_be_hidden()
        expect(page.locator("#tk-steps .tk-try").first).to_be_visible()
    finally:
        ctx.close()


def test_on_a_phone_the_pieces_follow_the_box_and_the_build_note_goes_once_the_vocabulary_is_live(
        browser, watch, shipped):
    ctx = _watched_context(browser, watch, 375, 812)
    try:
        page = ctx.new_page()
        _open(page, shipped)
        expect(page.locator("#tk-load-hint")).to_contain_text("Computed when the page was built")
        _load(page)
        expect(page.locator("#tk-load-hint")).to_be_hidden()  # no longer true: the pieces are live
        page.locator("#tk-text").fill("Pieces right under the box")
        page.evaluate("document.getElementById('tk-text').scrollIntoView({block: 'start'})")
        box = page.locator("#tk-text").bounding_box()
        first = page.locator("#tk-tokens > li").nth(1).bounding_box()  # the first piece after [CLS]
        # while typing, a phone's on-screen keyboard covers about the lower 40% of an 812 px screen:
        # the first piece must show above it, with the box at the top
        assert box["y"] > -1 and first["y"] + first["height"] <= 0.6 * 812, (box, first)
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


@pytest.mark.parametrize("where", WHERE)
def test_a_reload_opens_on_the_typed_text_and_word_kept_in_the_address(page, shipped, where, tokenizer):
    """What the learner types is kept in the hash with replaceState (no history entry per
    keystroke): a reload opens on that text and word, split by the vocabulary it loads at once;
    the built text and word again leave the address bare."""
    _open(page, shipped, where)
    data = _data(shipped)
    entries = page.evaluate("history.length")
    text, word = "Tokyo & Kyoto: 東京 😀 #1 = 50% off", "Detokenizers"
    page.locator("#tk-text").fill(text)
    page.locator("#tk-word").fill(word)
    expect(page).to_have_url(re.compile(r"#text=[^&]+&word=Detokenizers$"))
    assert page.evaluate("history.length") == entries
    page.reload()
    expect(page.locator("#tokens")).to_have_attribute("data-vocab", "ready", timeout=20_000)
    expect(page.locator("#tk-text")).to_have_value(text)
    expect(page.locator("#tk-word")).to_have_value(word)
    enc = encode(text, tokenizer)
    expect(page.locator("#tk-tokens > li")).to_have_count(len(enc.tokens))
    assert _listed(page) == [(t, i, False) for t, i in zip(enc.tokens, enc.ids)]
    assert page.locator('[data-count="pieces"]').inner_text() == str(len(enc.tokens) - 2)
    expect(page.locator("#tk-steps .tk-w").first).to_have_text(word)
    tries = [t for w in count(word, tokenizer).words for t in search(w, tokenizer)["tries"]]
    assert _tries_shown(page) == [[t["piece"], t["found"]] for t in tries]
    page.locator("#tk-text").fill(data["text"])
    expect(page).to_have_url(re.compile(r"#word=Detokenizers$"))
    page.locator("#tk-word").fill(data["word"])
    expect(page).not_to_have_url(re.compile("#"))


def test_text_boxes_take_their_direction_from_what_is_typed(page, shipped):
    _open(page, shipped)
    for box in ("#tk-text", "#tk-word"):
        page.locator(box).fill("مرحبا")
        assert page.locator(box).evaluate("e => e.matches(':dir(rtl)')"), box
        page.locator(box).fill("hello")
        assert page.locator(box).evaluate("e => e.matches(':dir(ltr)')"), box


def test_a_failed_load_blames_the_connection_only_when_the_device_is_offline(browser, watch, shipped):
    watch.allow(r"Failed to load resource|net::ERR")
    ctx = _watched_context(browser, watch)
    try:
        page = ctx.new_page()
        _open(page, shipped)
        ctx.set_offline(True)
        page.locator("#tk-text").focus()
        expect(page.locator("#tokens")).to_have_attribute("data-vocab", "failed", timeout=20_000)
        expect(page.locator("#tk-status")).to_contain_text("This device is offline")
        ctx.set_offline(False)
        page.goto("about:blank")
        page.route(re.compile(r".*model-vocab\..*"), lambda route: route.abort())  # online, the file is what fails
        _open(page, shipped)
        page.locator("#tk-text").focus()
        expect(page.locator("#tokens")).to_have_attribute("data-vocab", "failed", timeout=20_000)
        status = page.locator("#tk-status").inner_text()
        assert status.startswith("The vocabulary's file could not be loaded") and "offline" not in status, status
    finally:
        ctx.close()
