"""What a learner tripped over (issue 25), in a real Chromium: the quiz's right answers in
varying places, an option's text with <em> and <math> on one line, the quiz's "Set the dial"
link showing the dial, deep links that land and stay, and nothing moving while a lab page draws itself."""

from __future__ import annotations

import time

import pytest
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    WHERE, _watched_context, context, everything_in, page, shipped, sites, watch,
)

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None

LABS = ["labs/attention/", "labs/sampling/"]


@pytest.mark.parametrize("lab", LABS)
def test_the_right_answers_sit_in_varying_places(page, shipped, lab):
    """As served (the quiz script takes the answer key out of the live page once it runs)."""
    page.goto(shipped.url("http", lab))
    places = page.evaluate("""async () => {
      const html = await (await fetch(location.href)).text();
      const doc = new DOMParser().parseFromString(html, "text/html");
      return [...doc.querySelectorAll("fieldset.quiz-q")].map(q =>
        [...q.querySelectorAll(".quiz-option input, .quiz-choices [data-option]")]
          .flatMap((o, i) => o.hasAttribute("data-correct") ? [i] : []).join(",")).filter(Boolean); }""")
    assert len(places) >= 4 and len(set(places)) > 1, places


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("lab", LABS)
def test_option_text_flows_as_running_text(browser, watch, shipped, lab, width):
    """Each option's text, <em> and <math> included, sits on the lines of one paragraph beside its
    box: at 1280 px every short option is one line; at 375 px no piece sits alone on a line of
    its own while the next piece starts on the same line as the first (what flex items did)."""
    ctx = _watched_context(browser, watch, width, 812 if width == 375 else 800)
    try:
        p = ctx.new_page()
        p.goto(shipped.url("http", lab))
        everything_in(p)
        rows = p.evaluate("""[...document.querySelectorAll(".quiz-option label")].map(label => {
            const box = label.querySelector("input").getBoundingClientRect();
            const range = document.createRange();
            range.setStartAfter(label.querySelector("input"));
            range.setEndAfter(label.lastChild);
            const rects = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0);
            // Lines: boxes whose heights overlap (a <math> sits higher or lower than text on its line).
            const lines = [];
            for (const r of rects.sort((a, b) => a.top - b.top)) {
              const last = lines[lines.length - 1];
              if (last && r.top < last.bottom - 2) last.bottom = Math.max(last.bottom, r.bottom);
              else lines.push({ top: r.top, bottom: r.bottom });
            }
            const left = Math.min(...rects.map(r => r.left));
            return {text: label.textContent.trim(), lines: lines.length, left, box: box.right,
                    width: label.getBoundingClientRect().width, chars: label.textContent.trim().length};
        })""")
        assert rows, "no options"
        for row in rows:
            assert row["left"] >= row["box"], row  # the text is beside the box, never under it
            if width == 1280 and row["chars"] < 60:
                assert row["lines"] == 1, row
            assert row["lines"] <= max(1, -(-row["chars"] * 9 // int(row["width"] - 30)) + 1), row
    finally:
        ctx.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_set_the_dial_shows_and_focuses_the_dial(browser, watch, shipped, width):
    ctx = _watched_context(browser, watch, width, 812 if width == 375 else 800)
    try:
        p = ctx.new_page()
        p.goto(shipped.url("http", "labs/sampling/"))
        expect(p.locator("#sampling")).to_have_attribute("data-ready", "true")
        everything_in(p)
        question = p.locator('fieldset.quiz-q[data-type="dial"]').first
        question.locator(".quiz-choices [data-option][data-correct]").first.click()  # the explanation opens
        link = question.locator("a", has_text="Set the dial to")
        expect(link).to_be_visible()
        for _ in range(2):  # the second time the hash is already the link's: no hashchange
            p.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            link.click()
            expect(p.locator("#sa-temp")).to_be_focused()
            expect(p.locator("#sa-temp")).to_be_in_viewport()
            assert p.locator("#sa-temp-out").inner_text() == link.inner_text().removeprefix("Set the dial to ")
    finally:
        ctx.close()


@pytest.mark.parametrize("sentence", ["cat-mat", "translate"])
def test_export_titles_fit_and_wrap(page, shipped, sentence):
    """A caption far longer than the figure is wide comes out in several lines, each inside the
    figure; in cross-attention with a wrapped row, no empty band is left where links would go."""
    page.goto(shipped.url("http", "labs/attention/", f"#s={sentence}"))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    page.get_by_role("button", name="Download SVG").scroll_into_view_if_needed()
    with page.expect_download():
        page.get_by_role("button", name="Download SVG").click()  # loads spotlight-more.js
    caption = "Where “it” looks — " + "a very long caption that names the head, the sentence and more " * 3
    fits = page.evaluate("""caption => {
        const f = Labs.code.spotlightMore.figure(Labs.test.spotlight.door.view(), caption, "A label");
        const box = document.createElement("div");
        box.innerHTML = f.svg;
        document.body.append(box);
        const texts = [...box.querySelectorAll("text")].map(t => {
          const b = t.getBBox();
          return { s: t.textContent, left: b.x, right: b.x + b.width, top: b.y, bottom: b.y + b.height };
        });
        box.remove();
        return { width: f.width, height: f.height, texts };
    }""", caption)
    texts = fits["texts"]
    assert all(t["left"] >= 0 and t["right"] <= fits["width"] for t in texts), [t for t in texts if t["right"] > fits["width"]]
    title = texts[:[t["s"] for t in texts].index("A label")]  # the title's lines come first
    assert len(title) >= 3 and " ".join(t["s"] for t in title) == caption.strip(), title
    assert all(a["bottom"] <= b["top"] + 1 for a, b in zip(title, title[1:]))  # lines do not overlap


def _top_after_settling(p, target: str) -> list[float]:
    """The target's top edge once the page has loaded, then after each of the next frames until
    the spotlight is drawn and the network is quiet (what loads late must not move it)."""
    p.wait_for_load_state("load")
    expect(p.locator("#spotlight")).to_have_attribute("data-ready", "true")
    p.wait_for_load_state("networkidle")
    return p.evaluate("""id => new Promise(done => {
        const tops = [];
        const step = () => {
          tops.push(document.getElementById(id).getBoundingClientRect().top);
          if (tops.length < 30) requestAnimationFrame(step); else done(tops);
        };
        step();
    })""", target)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("target", ["gist", "faq", "quiz", "code"])
def test_deep_links_land_and_stay(browser, watch, shipped, where, width, target):
    ctx = _watched_context(browser, watch, width, 812 if width == 375 else 800)
    try:
        p = ctx.new_page()
        p.goto(shipped.url(where, "labs/attention/", f"#{target}"))
        tops = _top_after_settling(p, target)
        assert all(-2 <= t <= 120 for t in tops), (target, tops[0], tops[-1], min(tops), max(tops))
    finally:
        ctx.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_pattern_view_has_a_colour_scale_true_in_both_schemes(page, shipped, scheme):
    """The grid's colour scale runs from the page's surface (0%) to the cells' full shade (100%),
    as the cells are mixed in that scheme, and the words never say "darker" (in dark mode more
    weight is lighter orange on a dark page)."""
    page.emulate_media(color_scheme=scheme)
    page.goto(shipped.url("http", "labs/attention/", "#s=cat-mat&h=syntax&q=2"))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    page.locator("#sl-pattern summary").click()
    expect(page.locator("table.sl-pat").first).to_be_visible()
    ramp = page.locator(".sl-pat-ramp")
    expect(ramp).to_be_visible()
    expect(page.locator(".sl-pat-scale")).to_contain_text("0%")
    colours = page.evaluate("""() => {
        const probe = (css) => { const d = document.createElement("div"); d.style.background = css;
          document.querySelector(".sl-pat-box").append(d); const c = getComputedStyle(d).backgroundColor; d.remove(); return c; };
        const ramp = getComputedStyle(document.querySelector(".sl-pat-ramp")).backgroundImage;
        const cells = [...document.querySelectorAll(".sl-pat td[style]")].map(td => [parseFloat(td.style.getPropertyValue("--w")), getComputedStyle(td).backgroundColor]);
        cells.sort((a, b) => a[0] - b[0]);
        return { ramp, surface: probe("var(--surface)"), shade: probe("var(--pat)"), low: cells[0], high: cells.at(-1),
                 hint: document.querySelector("#sl-pattern-body .sl-hint").textContent };
    }""")
    assert colours["surface"] != colours["shade"]
    assert colours["surface"] in colours["ramp"] and colours["shade"] in colours["ramp"], colours
    assert "darker" not in colours["hint"].lower() and "orange" in colours["hint"]
    assert colours["high"][0] > colours["low"][0]


@pytest.mark.parametrize("where", WHERE)
def test_links_show_for_a_sentence_wider_than_a_phone(browser, watch, shipped, where):
    """Lab 07's own 11-word sentence at 375 px: it wraps onto rows with no sideways scroll (no
    word, and no weight, off screen), the query in view, and every link with weight drawn from
    the query to its word, row by row (wrapping once hid them)."""
    from test_browser import read_view
    ctx = _watched_context(browser, watch, 375, 812)
    try:
        p = ctx.new_page()
        p.goto(shipped.url(where, "labs/attention/", "#s=animal&h=syntax"))
        expect(p.locator("#spotlight")).to_have_attribute("data-ready", "true")
        expect(p.locator("#sl-arcs")).to_be_visible()
        line = p.evaluate("""(() => { const l = document.querySelector(".sl-line"), q = l.querySelector('[aria-pressed="true"]');
            const a = l.getBoundingClientRect(), b = q.getBoundingClientRect();
            return { wide: l.scrollWidth > l.clientWidth, tops: new Set([...l.querySelectorAll("#sl-queries .word")].map(w => w.offsetTop)).size,
                     inView: b.left >= a.left - 1 && b.right <= a.right + 1 }; })()""")
        assert not line["wide"] and line["tops"] >= 2 and line["inView"], line
        view = read_view(p)
        assert view["svgShown"] and view["drawn"] >= 3 and not view["misplaced"], view
    finally:
        ctx.close()


# Common English words with the part of speech they usually have, from general knowledge of
# English (not from our word list): what "Your sentence" guesses for each, untagged, must agree
# for almost all of them. Nouns, verbs in several forms, adjectives, adverbs, function words.
COMMON = {
    "NOUN": "dog cat house water time people day man woman child world school family friend city car "
            "book door table teacher street animal room idea money fox mother country music garden",
    "VERB": "went gave slept jumps walks said took made saw knew thought told found came got brought "
            "eats wants needs became wrote heard sat ran chases running played asked",
    "ADJ": "quick brown lazy big small happy tired hungry red old young new good bad cold hot long "
           "dangerous beautiful careful strong quiet dark heavy wide",
    "ADV": "quickly slowly very also never always often here now really",
    "DET": "the a an this every",
    "PRON": "she they it we him",
    "ADP": "of in on under with",
}


def test_your_sentence_guesses_common_words_as_english_usually_has_them(page, shipped):
    page.goto(shipped.url("http", "labs/attention/"))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    box = page.get_by_label("Your sentence", exact=True)
    box.fill("The quick brown fox jumps over the lazy dog")
    box.press("Enter")
    expect(page.locator("#sl-sentence")).to_have_value("own")
    got = page.evaluate("""common => {
        const M = Labs.code.ownModel, out = {};
        for (const [tag, words] of Object.entries(common))
          for (const w of words.split(" ")) { const x = M.parse(w, true).words[0]; out[w] = [tag, x.role, !!x.guessed]; }
        out.fox = [null, ...(x => [x.role, !!x.guessed])(M.parse("The quick brown fox", true).words[3])];
        return out;
    }""", COMMON)
    wrong = {w: v for w, v in got.items() if v[0] and v[0] != v[1]}
    total = sum(len(ws.split()) for ws in COMMON.values())
    assert len(wrong) <= total // 20, wrong  # at least 95% as English usually has them
    for w in ("quick", "brown", "lazy", "jumps", "walks", "gave", "slept"):  # the ones learners met as NOUN
        assert got[w][1] != "NOUN" and not got[w][2], (w, got[w])
    assert got["fox"] == [None, "NOUN", True]  # not in the list: guessed, and marked so


def test_a_new_sentence_leaves_a_head_that_looks_for_nothing_in_it(page, shipped):
    """Coreference on the translation sentence gave every word a flat 25%: the spotlight switches
    to the head that looks hardest for the telling word, and a flat row in the every-head strip
    says "all equal" instead of naming a winner."""
    from test_browser import head_select, sentence_select
    page.goto(shipped.url("http", "labs/attention/"))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    head_select(page).select_option("coreference")
    sentence_select(page).select_option("translate")
    expect(head_select(page)).not_to_have_value("coreference")
    pct = page.evaluate("[...document.querySelectorAll('#sl-readout tbody tr:not([hidden]) td.sl-pct')].map(t => parseInt(t.textContent))")
    assert max(pct) - min(pct) > 5, pct
    tops = page.evaluate("""[...document.querySelectorAll('#sl-multiples [data-head]')].map(b => b.textContent)""")
    coref = next(t for t in tops if "Coreference" in t)
    assert "all equal" in coref and "→" not in coref, tops


# What moved between frames while the page drew itself: each layout shift's value and the elements it moved.
SHIFTS = """window.__shifts = [];
new PerformanceObserver(list => { for (const e of list.getEntries()) window.__shifts.push([e.value,
  e.sources.map(s => s.node ? (s.node.id || s.node.className || s.node.nodeName) : "?")]); })
  .observe({ type: "layout-shift", buffered: true });"""


@pytest.mark.parametrize("lab", ["labs/attention/", "labs/tokens/", "labs/embeddings/", "labs/next-token/", "labs/sampling/",
                                 "", "topics/llm-engineering/"])
def test_nothing_on_a_lab_page_moves_while_its_scripts_draw_it_on_a_phone(browser, watch, shipped, lab):
    """Lighthouse's layout shift, measured as it measures it (a phone's screen): the header's search
    box and the progress buttons keep their places until their scripts show them, and a lab's drawn
    widget starts where the text shown without JavaScript started, so nothing above or below it
    moves. The home and topic pages too."""
    ctx = _watched_context(browser, watch, 412, 823, is_mobile=True, has_touch=True, device_scale_factor=1.75)
    try:
        p = ctx.new_page()
        p.add_init_script(SHIFTS)
        # Scripts that arrive after the first paint, as on a slow phone's network: what they show
        # then must not push anything that was drawn without them.
        p.route("**/assets/*.js", lambda route: (time.sleep(0.3), route.continue_()))
        p.goto(shipped.url("http", lab))
        if lab.startswith("labs/"):
            expect(p.locator("[data-ready]").first).to_have_attribute("data-ready", "true")
        else:
            expect(p.locator(".site-search")).not_to_have_attribute("data-off", "")
        p.wait_for_timeout(500)  # a shift is reported after the frame that made it
        shifts = p.evaluate("window.__shifts")
        assert not shifts, shifts
    finally:
        ctx.close()
    assert not watch.problems, watch.problems
