"""The embeddings lab (lab 04) in a real Chromium: matrix, neighbours, map, search and the nearest
question, at both widths and in both colour schemes, over http and file://; axe; first visit."""

from __future__ import annotations

import gzip
import json
import re
from urllib.parse import urlsplit

import numpy as np
import pytest
from conftest import lab_data
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    ARTIFACTS, WHERE, _watched_context, axe, axe_clean, context, everything_in, page, shipped, sites, watch,
)

pytestmark = pytest.mark.browser
LAB = "labs/embeddings/"
SIZES = [(1280, 800), (375, 812)]

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _data(shipped) -> dict:
    html = (shipped.folder / LAB / "index.html").read_text(encoding="utf-8")
    return lab_data(html)


def _open(page, shipped, where="http"):
    page.goto(shipped.url(where, LAB))
    expect(page.locator("#embeddings")).to_have_attribute("data-ready", "true")


def f3(x: float) -> str:
    return ("−" if x < 0 else "") + f"{abs(x):.3f}"


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width,height", SIZES, ids=["desktop", "phone"])
def test_matrix_neighbours_map_search_and_quiz(browser, watch, shipped, where, scheme, width, height):
    data = _data(shipped)
    items = data["items"]
    ctx = _watched_context(browser, watch, width, height, color_scheme=scheme)
    try:
        page = ctx.new_page()
        _open(page, shipped, where)
        # Neighbours: pick a sentence, its neighbours are listed in order with their cosine.
        i = next(k for k, it in enumerate(items) if it["id"] == "like")
        page.get_by_label("Sentence", exact=True).select_option(str(i))
        shown = page.locator("#em-nn li").all_inner_texts()
        assert shown == [f"{f3(c)} {items[j]['text']}" for j, c in items[i]["nn"]]
        # Map: the point for that sentence is marked; arrow keys move focus to another point.
        points = page.locator("#em-map .em-pt")
        expect(points).to_have_count(len(items))
        expect(points.nth(i)).to_have_class(re.compile("is-on"))
        points.nth(i).focus()
        page.keyboard.press("ArrowLeft" if items[i]["xy"][0] > min(it["xy"][0] for it in items) else "ArrowRight")
        moved = page.evaluate("document.activeElement.dataset.i")
        assert moved is not None and int(moved) != i
        expect(page.locator("#em-picked")).to_contain_text(items[int(moved)]["text"])
        # Labels never overlap each other or another point, and stay inside the map.
        boxes = page.evaluate("""() => {
            const m = document.getElementById('em-map').getBoundingClientRect();
            const r = e => { const b = e.getBoundingClientRect(); return [b.left - m.left, b.top - m.top, b.right - m.left, b.bottom - m.top]; };
            return {w: m.width, h: m.height,
                    labels: [...document.querySelectorAll('#em-map .em-label:not([hidden])')].map(r),
                    loose: [...document.querySelectorAll('#em-map .em-label:not([hidden])')].map(e => e.classList.contains('is-over')),
                    points: [...document.querySelectorAll('#em-map .em-pt')].map(r)}; }""")
        over = lambda a, b: a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5
        labels = boxes["labels"]
        assert len(labels) >= 4
        assert not any(over(a, b) for k, a in enumerate(labels) for b in labels[k + 1:])
        # A label crosses no point, but one of the picked sentence's own may cross a point it does not name.
        named = [int(moved)] + [j for j, _ in items[int(moved)]["nn"]]
        assert not any(over(a, p) for a, loose in zip(labels, boxes["loose"]) for k, p in enumerate(boxes["points"])
                       if not loose or k in named)
        assert all(a[0] >= -0.5 and a[2] <= boxes["w"] + 0.5 for a in labels)
        expect(page.locator("#em-explained")).to_contain_text(f"{100 * sum(data['explained']):.1f}% together")
        expect(page.locator("#em-warn")).to_contain_text(f"for {data['disagree']['count']} of {len(items)} sentences")
        hub, cls = data["hub"], data["cls"]  # the most-shared neighbour beside chance; [CLS]'s one coordinate
        expect(page.locator("#em-hub")).to_contain_text(f"{hub['chance']:.1f} on average ({hub['trials']} draws)")
        expect(page.locator("#em-hub")).to_contain_text("within what chance gives" if hub["count"] < hub["rare"] else "is a hub")
        expect(page.locator("#em-aniso")).to_contain_text(
            f"average {f3(cls['mean'])}: coordinate {cls['dim']} averages {f3(cls['value'])} in these [CLS] vectors "
            f"(of length 1) and alone adds {f3(cls['adds'])} to a pair's cosine. Subtract the [CLS] vectors' shared "
            f"mean and the average is {f3(cls['centred'])}.")
        # Matrix: focus and arrow keys read a cell's cosine.
        page.locator("#em-matrix").focus()
        page.keyboard.press("ArrowDown")
        r, c = 1, 1
        a, b = data["order"][r], data["order"][c]
        cell = lambda a, b: (f"“{items[a]['text']}” ({items[a]['group']}) × “{items[b]['text']}” ({items[b]['group']}): "
                             f"cosine {f3(data['S'][a][b])}")
        expect(page.locator("#em-cell")).to_have_text(cell(a, b))
        page.keyboard.press("End")  # the row's last column; Control+Home the first cell
        expect(page.locator("#em-cell")).to_have_text(cell(a, data["order"][-1]))
        page.keyboard.press("Control+Home")
        expect(page.locator("#em-cell")).to_have_text(cell(data["order"][0], data["order"][0]))
        # Search: a query of the author's, ranked as the build ranked it.
        q = next(m for m, x in enumerate(data["queries"]) if x["id"] == "q-login")
        page.get_by_label("A query of ours").select_option(str(q))
        results = page.get_by_role("list", name="Nearest").locator("li").all_inner_texts()
        assert results == [f"{f3(c)} {items[j]['text']}" for j, c in data["queries"][q]["ranked"][:5]]
        expect(page.locator("#em-rag")).to_contain_text("no answer is generated")
        rag = data["queries"][data["rag"]["query"]]["ranked"][:data["rag"]["k"]]
        weak = sum(c < data["unrelated"]["below"] for _, c in rag)  # the shipped example hands on weak ones
        assert weak >= 1
        expect(page.locator("#em-rag")).to_contain_text(f"{weak} of these {len(rag)} {'is' if weak == 1 else 'are'} in the "
                                                        f"unrelated band (below {f3(data['unrelated']['below'])})")
        # Quiz: the nearest question grades a click.
        page.locator("#quick-check-title").scroll_into_view_if_needed()
        question = page.locator('fieldset.quiz-q[data-type="nearest"]').first
        question.locator(".quiz-choices [data-option][data-correct]").click()
        expect(question.locator(".quiz-feedback")).to_have_text("Correct!")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the embeddings lab scrolls sideways by {overflow}px at {width}x{height}"
        if where == "http":
            ARTIFACTS.mkdir(exist_ok=True)
            page.locator("#try-it").screenshot(path=str(ARTIFACTS / f"embeddings-{width}-{scheme}.png"))
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_on_the_embeddings_lab(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    _open(page, shipped)
    page.locator("#em-matrix").focus()
    everything_in(page)
    axe_clean(page, axe)


def test_first_visit_of_the_embeddings_lab_is_at_most_35_kb_gzip(shipped):
    page = shipped.folder / LAB / "index.html"
    html = re.sub(r"<noscript>.*?</noscript>", "", page.read_text(encoding="utf-8"), flags=re.S)
    refs = re.findall(r'<(?:link\b[^>]*\brel="(?:stylesheet|icon|preload|modulepreload)"[^>]*\bhref|script\b[^>]*\bsrc)="([^"]+)"', html)
    files = [page.read_bytes()] + [(page.parent / r).read_bytes() for r in refs if not urlsplit(r).scheme]
    packed = sum(len(gzip.compress(b, 9)) for b in files)
    assert packed <= 35_000, packed


@pytest.fixture(scope="module")
def quantized():
    """NumPy's run of the committed quantized bundle: what the page must compute."""
    from generator.runtime.bundle import read_bundle, reference_model

    from test_embeddings import BUNDLE
    return reference_model(read_bundle(BUNDLE))


@pytest.mark.parametrize("where", WHERE)
def test_live_search_embeds_as_numpy_runs_the_quantized_model(page, shipped, quantized, where):
    from test_embeddings import embed_batch

    data = _data(shipped)
    _open(page, shipped, where)
    load = page.locator("#em-load")
    expect(load).to_contain_text(f"{data['live']['download_bytes'] / 1e6:.1f} MB")  # the size, stated first
    assert page.evaluate("typeof (window.Labs.runtime || {}).load") == "undefined"  # nothing loaded before
    load.click()
    expect(page.locator("#em-form")).to_be_visible(timeout=240_000)
    texts = ["where can I leave my bike", "Is it going to snow?", "a recipe with tomatoes and salt"]
    expected = embed_batch(quantized, texts)
    for text, ref in zip(texts, expected):
        got = np.array(page.evaluate("t => Labs.test.embeddings.embed(t)", text))
        assert 1 - float(got @ ref) <= 1e-4, text
    page.get_by_label("Search", exact=True).fill(texts[0])
    page.get_by_label("Search", exact=True).press("Enter")
    expect(page.locator("#em-status")).to_contain_text("Ranked by cosine")
    vectors = np.array([[float(x) for x in v] for v in _item_vectors(shipped)])
    cos = vectors @ expected[0]
    top = sorted(range(len(cos)), key=lambda j: (-cos[j], j))[:5]
    shown = page.get_by_role("list", name="Nearest").locator("li").all_inner_texts()
    assert [s.split(" ", 1)[1] for s in shown] == [data["items"][j]["text"] for j in top]
    assert page.evaluate("location.hash") == "#q=where+can+I+leave+my+bike"  # the search, kept for a reload
    # 300 punctuation marks are 300 word pieces: cut to 256 as sentence-transformers cuts them, and said.
    page.get_by_label("Search", exact=True).fill("!" * 300)
    page.get_by_label("Search", exact=True).press("Enter")
    expect(page.locator("#em-status")).to_contain_text("read as its first 256 word pieces")


def _item_vectors(shipped) -> list:
    folder = shipped.folder / LAB
    script = next(folder.glob("item-vectors.*.js")).read_text(encoding="utf-8")
    return json.loads(script.split("embeddingVectors=", 1)[1].rstrip().rstrip(";"))


def test_live_search_cancels_and_fails_plainly_while_the_queries_keep_working(browser, shipped):
    ctx = browser.new_context(viewport={"width": 375, "height": 812})
    try:
        page = ctx.new_page()
        held = []
        # A layer file that never arrives: the download can only end by Cancel.
        page.route(re.compile(r".*/model-layers-03\.[0-9a-f]+\.js$"), lambda route: held.append(route))
        _open(page, shipped)
        page.locator("#em-load").click()
        expect(page.locator("#em-cancel")).to_be_visible()
        expect(page.locator("#em-progress")).to_be_visible()
        page.wait_for_function("() => document.getElementById('em-progress').value > 0")
        page.locator("#em-cancel").click()
        expect(page.locator("#em-status")).to_have_text("Cancelled. Nothing more is downloaded.")
        expect(page.locator("#em-load")).to_be_visible()
        expect(page.locator("#em-form")).to_be_hidden()
        # A missing file: one plain sentence, and the author's queries still rank.
        page.unroute(re.compile(r".*/model-layers-03\.[0-9a-f]+\.js$"))
        page.route(re.compile(r".*/model-layers-05\.[0-9a-f]+\.js$"), lambda route: route.fulfill(status=404, body=""))
        page.locator("#em-load").click()
        expect(page.locator("#em-status")).to_have_text(re.compile(r"^The model file model-layers-05\.\w+\.js could not "
                                                                   r"be loaded: it is missing or unreadable\. The queries above still work\.$"))
        expect(page.locator("#em-form")).to_be_hidden()
        page.get_by_label("A query of ours").select_option("1")
        expect(page.get_by_role("list", name="Nearest").locator("li")).to_have_count(5)
    finally:
        for route in held:
            try:
                route.abort()
            except Exception:  # the page is gone
                pass
        ctx.close()


@pytest.mark.parametrize("width,height", SIZES, ids=["desktop", "phone"])
def test_the_map_names_every_pick_and_its_true_nearest_with_lines_and_group_colours(browser, watch, shipped, width, height):
    """For every sentence picked: it and its nearest in full dimension are labelled (a neighbour
    with no room by its number), a line runs from it to each of them, the point says it is the
    current one; points take their group's colour from the legend; the bars show each cosine and
    the band of unrelated pairs the build computed."""
    data = _data(shipped)
    items, band = data["items"], data["unrelated"]
    groups = list(dict.fromkeys(it["group"] for it in items))
    ctx = _watched_context(browser, watch, width, height)
    try:
        page = ctx.new_page()
        _open(page, shipped, "file")
        legend = page.get_by_role("list", name="Groups, by colour").locator("li")
        assert legend.all_inner_texts() == groups
        swatch = legend.locator(".em-swatch").evaluate_all("els => els.map(e => getComputedStyle(e).backgroundColor)")
        border = page.locator("#em-map .em-pt").evaluate_all("els => els.map(e => getComputedStyle(e).borderTopColor)")
        assert [border[i] for i in range(len(items))] == [swatch[groups.index(it["group"])] for it in items]
        assert len(set(swatch)) == len(groups)
        page.locator("#em-matrix").scroll_into_view_if_needed()  # its cells are drawn as it nears the screen
        expect(page.locator("#em-matrix .em-c")).to_have_count(len(items) ** 2)
        strips = page.locator("#em-matrix .em-top").evaluate_all("els => els.map(e => getComputedStyle(e).boxShadow)")
        assert [strips[c].startswith(swatch[groups.index(items[j]["group"])]) for c, j in enumerate(data["order"])] == \
            [True] * len(items)  # the matrix's top strip: each column's group colour
        expect(page.locator("#em-band")).to_contain_text(f"below {f3(band['below'])}, where 95% of the pairs")
        for i, it in enumerate(items):
            page.get_by_label("Sentence", exact=True).select_option(str(i))
            got = page.evaluate("""() => {
                const map = document.getElementById('em-map').getBoundingClientRect();
                const centre = e => { const b = e.getBoundingClientRect(); return [b.left + b.width / 2 - map.left, b.top + b.height / 2 - map.top]; };
                const pts = [...document.querySelectorAll('#em-map .em-pt')];
                const labels = [...document.querySelectorAll('#em-map .em-label')];
                return {current: pts.map(p => p.getAttribute('aria-current')),
                        shown: labels.map((l, k) => l.hidden || !l.offsetWidth ? null : l.textContent),
                        centres: pts.map(centre),
                        boxes: labels.filter(l => !l.hidden).map(l => { const b = l.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }),
                        lines: [...document.querySelectorAll('#em-map .em-lines line')].map(l => ['x1', 'y1', 'x2', 'y2'].map(a => +l.getAttribute(a))),
                        bars: [...document.querySelectorAll('#em-nn li .em-fill')].map(e => e.getBoundingClientRect().width / e.parentElement.clientWidth)}; }""")
            near = [j for j, _ in it["nn"]]
            assert got["current"] == [("true" if k == i else None) for k in range(len(items))]
            assert got["shown"][i] and it["text"].startswith(got["shown"][i].rstrip("…")), (i, got["shown"][i])
            for rank, j in enumerate(near, 1):
                assert got["shown"][j] in (str(rank), f"{rank}. {items[j]['text'][:27] + '…' if len(items[j]['text']) > 28 else items[j]['text']}"), (i, j, got["shown"][j])
            over = lambda a, b: a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5
            assert not any(over(a, b) for k, a in enumerate(got["boxes"]) for b in got["boxes"][k + 1:]), i
            assert len(got["lines"]) == len(near)
            for (x1, y1, x2, y2), j in zip(got["lines"], near):
                assert abs(x1 - got["centres"][i][0]) < 1.5 and abs(y1 - got["centres"][i][1]) < 1.5
                assert abs(x2 - got["centres"][j][0]) < 1.5 and abs(y2 - got["centres"][j][1]) < 1.5
            assert all(abs(w - max(0, c)) < 0.02 for w, (_, c) in zip(got["bars"], it["nn"])), got["bars"]
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


def test_the_pick_and_the_search_are_kept_in_the_address_without_history_entries(page, shipped):
    data = _data(shipped)
    items = data["items"]
    soup = next(i for i, it in enumerate(items) if it["id"] == "soup")
    page.goto(shipped.url("file", LAB) + "#s=soup&q=" + "where is the bus")
    expect(page.locator("#embeddings")).to_have_attribute("data-ready", "true")
    expect(page.locator("#em-picked")).to_contain_text(items[soup]["text"])
    expect(page.locator("#em-status")).to_have_text("Your search “where is the bus” is kept in this page's address: "
                                                    "load the model to run it.")
    assert page.locator("#em-query").input_value() == "where is the bus"
    assert page.locator("#em-query").get_attribute("dir") == "auto"
    before = page.evaluate("history.length")
    page.get_by_label("Sentence", exact=True).select_option(str(0))
    page.get_by_label("Sentence", exact=True).select_option(str(2))
    assert page.evaluate("location.hash") == f"#s={items[2]['id']}&q=where+is+the+bus"
    assert page.evaluate("history.length") == before
    page.reload()
    expect(page.locator("#em-picked")).to_contain_text(items[2]["text"])


def test_offline_the_load_blames_the_connection_and_says_english(browser, shipped):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = ctx.new_page()
        _open(page, shipped)
        expect(page.locator("#em-live-hint")).to_contain_text("It was trained on English text")
        expect(page.locator("#em-query-hint")).to_contain_text("At most 300 characters")
        ctx.set_offline(True)
        page.locator("#em-load").click()
        expect(page.locator("#em-status")).to_have_text("The model could not be loaded: this device is offline, so its "
                                                        "files could not be downloaded; try again when connected. The "
                                                        "queries above still work.")
        expect(page.locator("#em-load")).to_be_visible()
    finally:
        ctx.close()
