"""The built site in real Chromium, used the way a learner uses it: click, Tab, read the screen.

Three sites are built once per session with the real theme/ (``generator.build.build``):

* ``shipped``: content/, the real lab;
* ``hostile``: tests/fixtures/content, whose text holds ``</script><script>alert(1)</script>``;
* ``long``: tests/fixtures/browser/content, a lab whose spotlight has a 40-word sentence.

Each is served by a thread on 127.0.0.1 (a free port) that sends the strict CSP the pages are
written for, and is also opened from file://. Every test page is watched: a console error, an
uncaught exception or a request that leaves the site fails the test at teardown.

Needs Chromium. Without one these tests FAIL (they never skip): ``apt-get install -y chromium``
(or ``python -m playwright install chromium``; or point ``LABS_CHROMIUM`` at a Chrome binary).
Screenshots land in test-artifacts/ at the repository root (git-ignored).

Run: ``python -m pytest tests/test_browser.py -q``
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import spotlight_payload
import yaml

from generator.build import build
from generator.serve.statichost import StaticHostHandler, StaticHostServer

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # pragma: no cover - reported by the `browser` fixture as a failure
    sync_playwright = None

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.browser  # every test here drives Chromium

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ARTIFACTS = ROOT / "test-artifacts"
CSP = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; worker-src 'self' blob:"
HOSTILE = "</script><script>alert(1)</script>"
LAB = "labs/attention/"
WHERE = ["http", "file"]

if sync_playwright is not None:
    expect.set_options(timeout=5_000)


# -- the sites: built once, served with the CSP, and on disk for file:// ----------------------

class _Handler(StaticHostHandler):
    """Static files with the CSP the pages must run under; a missing path gets 404.html."""

    def end_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("Cache-Control", "no-store")
        super().end_headers()


@dataclass
class Site:
    content: Path
    folder: Path
    origin: str
    labs: list[str]
    server: StaticHostServer = field(repr=False)

    def url(self, where: str, path: str = "", hash: str = "") -> str:
        """The address of a built page (``""``, ``"labs/x/"``, ``"404.html"``) over http or file://."""
        if where == "http":
            return f"{self.origin}/{path}{hash}"
        file = self.folder / path
        if not path or path.endswith("/"):
            file = file / "index.html"
        return file.as_uri() + hash

    def prefixes(self) -> tuple[str, str]:
        return self.origin + "/", self.folder.as_uri() + "/"

    def spotlight(self, slug: str) -> dict:
        """The lab's spotlight data (docs/spotlight-data.md), other sentences' heads merged in."""
        return spotlight_payload(self.folder, slug)


def _serve(content: Path, out: Path) -> Site:
    result = build(content, ROOT / "theme", out)
    handler = functools.partial(_Handler, directory=str(out))
    server = StaticHostServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return Site(content, out, f"http://127.0.0.1:{server.server_address[1]}",
                [lab.slug for lab in result.content.labs], server)


@pytest.fixture(scope="session")
def sites(tmp_path_factory):
    built = {
        "shipped": _serve(ROOT / "content", tmp_path_factory.mktemp("shipped") / "site"),
        "hostile": _serve(FIXTURES / "content", tmp_path_factory.mktemp("hostile") / "site"),
        "long": _serve(FIXTURES / "browser" / "content", tmp_path_factory.mktemp("long") / "site"),
    }
    yield built
    for site in built.values():
        site.server.shutdown()
        site.server.server_close()


@pytest.fixture(scope="session")
def shipped(sites) -> Site:
    return sites["shipped"]


@pytest.fixture(scope="session")
def data(shipped) -> dict:
    return shipped.spotlight("attention")


# -- the browser: one per session, a fresh context per test, every page watched ----------------

class Watch:
    """What a page did that a learner should never meet: errors, and requests off the site."""

    def __init__(self, prefixes: tuple[str, ...]):
        self.prefixes = prefixes
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.allowed: list[re.Pattern] = []

    def allow(self, pattern: str) -> None:
        """Expect a console error matching ``pattern`` (a 404 page's own 404 status, say)."""
        self.allowed.append(re.compile(pattern))

    def console(self, msg) -> None:
        if msg.type == "error" and not any(p.search(msg.text) for p in self.allowed):
            where = msg.location.get("url", "") if isinstance(msg.location, dict) else ""
            self.problems.append(f"console error: {msg.text} ({where})")

    def page_error(self, error) -> None:
        self.problems.append(f"uncaught exception: {error.error}")

    def request(self, request) -> None:
        self.requests.append(request.url)
        # blob: a URL the page made of its own bytes (the in-page model's Worker), not a request out
        if not request.url.startswith(self.prefixes) and not request.url.startswith("blob:"):
            self.problems.append(f"request leaves the site: {request.url}")

    def dialog(self, dialog) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()


@pytest.fixture
def watch(sites) -> Watch:
    return Watch(tuple(p for site in sites.values() for p in site.prefixes()))


def _watched_context(browser, watch: Watch, width: int = 1280, height: int = 800, **options):
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    context.on("console", watch.console)
    context.on("weberror", watch.page_error)
    context.on("request", watch.request)
    context.on("dialog", watch.dialog)
    return context


@pytest.fixture
def context(browser, watch):
    ctx = _watched_context(browser, watch)
    yield ctx
    ctx.close()
    if watch.problems:
        pytest.fail("the page misbehaved:\n  " + "\n  ".join(watch.problems), pytrace=False)


@pytest.fixture
def page(context):
    return context.new_page()


# -- reading the spotlight the way a learner reads it -------------------------------------------

def open_lab(page, site: Site, where: str, hash: str = "", slug: str = "attention"):
    page.goto(site.url(where, f"labs/{slug}/", hash))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")


def sentence_select(page):
    return page.get_by_label("Sentence", exact=True)


def head_select(page):
    return page.get_by_label("Head", exact=True)


def words(page):
    return page.locator("#sl-queries button.word")


def pressed(page):
    return page.locator('#sl-queries button.word[aria-pressed="true"]')


def caption_for(word: str, head: str) -> re.Pattern:
    return re.compile("^Where “" + re.escape(word) + "” looks — " + re.escape(head))


READ_VIEW = """() => {
  const visible = (el) => !el.hidden && !el.closest("[hidden]");
  const rows = [...document.querySelectorAll("#sl-readout tbody tr")].filter(visible);
  const root = document.getElementById("spotlight"), cross = root.classList.contains("is-cross");
  const svg = cross ? "#sl-band" : "#sl-arcs";
  const paths = [...document.querySelectorAll(svg + " .sl-links path")];
  // Where each drawn link starts and ends on screen, against the boxes of the words it joins.
  const query = document.querySelector('#sl-queries .word[aria-pressed="true"]');
  const keyBox = (j) => document.querySelector((cross ? "#sl-keys" : "#sl-queries") + ` .word[data-index="${j}"]`);
  const within = (x, el) => { const r = el.getBoundingClientRect(); return x >= r.left - 1 && x <= r.right + 1; };
  const misplaced = [], wrapped = root.classList.contains("is-wrapped");
  paths.forEach((p, j) => {
    if (wrapped || !p.getAttribute("d")) return;  // a wrapped row hides its links
    const m = p.getScreenCTM(), len = p.getTotalLength();
    const [a, b] = [0, len].map((at) => { const q = p.getPointAtLength(at); return new DOMPoint(q.x, q.y).matrixTransform(m).x; });
    if (!within(a, query) || !within(b, keyBox(j))) {
      const r = keyBox(j).getBoundingClientRect();
      misplaced.push(`link ${j} runs x=${a.toFixed(0)}→${b.toFixed(0)}, word “${keyBox(j).textContent}” spans ${r.left.toFixed(0)}–${r.right.toFixed(0)}`);
    }
  });
  return {
    misplaced,
    pressed: [...document.querySelectorAll('#sl-queries .word[aria-pressed="true"]')].map((b) => +b.dataset.index),
    pct: rows.map((tr) => tr.querySelector("td.sl-pct").textContent),
    total: document.querySelector("#sl-readout tfoot tr.sl-total td.sl-pct").textContent,
    links: paths.length,
    drawn: paths.filter((p) => (p.getAttribute("d") || "") !== "").length,
    svgShown: getComputedStyle(document.querySelector(svg)).display !== "none",
    wrapped,
  };
}"""


def read_view(page) -> dict:
    """The readout's percentages (as shown), its Total row, and the links: how many, how many
    drawn, and any that do not run from the query word to its key word on screen."""
    view = page.evaluate(READ_VIEW)
    assert all(re.fullmatch(r"\d+%", p) for p in view["pct"]), view["pct"]
    view["pct"] = [int(p[:-1]) for p in view["pct"]]
    return view


def percentages(page) -> list[int]:
    return read_view(page)["pct"]


def mouse_click(page, target):
    """Click the middle of ``target`` with the mouse, where it is on screen now. A tenth of the
    time of ``locator.click()`` (no waiting for stability), for walks over many words; whatever
    covers the word would take the click instead, and the test would see the wrong word pressed."""
    box = target.bounding_box()
    assert box, f"{target} is not on the page"
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def click_word(page, index: int, word: str, head_name: str):
    words(page).nth(index).click()
    expect(words(page).nth(index)).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#sl-caption")).to_have_text(caption_for(word, head_name))


SETTLE = """async () => {
  // Finite CSS transitions and animations run out; wait for them (page.wait_for_function would
  // need eval, which the page's CSP forbids).
  const finite = document.getAnimations().filter((a) => a.effect?.getComputedTiming().endTime !== Infinity);
  await Promise.all(finite.map((a) => a.finished.catch(() => null)));
}"""


def settle(page):
    """Let transitions finish, so colours are judged (and photographed) as they end up."""
    page.evaluate(SETTLE)


def drawn(page):
    """The spotlight as drawn for good: the three files it fetches quietly after its first paint
    (the stage is dimmed, aria-busy, while any file beside the page loads) are in, and it is ready."""
    for _ in range(100):
        if page.evaluate("!!(Labs.code.spotlightMore && Labs.data.headDetails && Labs.data.sentenceHeads)"):
            break
        page.wait_for_timeout(50)
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")


def everything_in(page):
    """Every part the page keeps for later (theme/static/js/15-later.js) in the page, as after
    scrolling through it, and the quiz's script run."""
    page.evaluate("Labs.later.all()")
    expect(page.locator("noscript[data-later]")).to_have_count(0)
    if page.locator("#quiz").count():
        expect(page.locator("#quiz-score")).to_be_visible()


def tab_to(page, target, backwards: bool = False, limit: int = 60):
    """Press Tab (or Shift+Tab) until ``target`` has the focus, as a keyboard user would."""
    key = "Shift+Tab" if backwards else "Tab"
    for _ in range(limit):
        if target.evaluate("el => el === document.activeElement"):
            return
        page.keyboard.press(key)
    pytest.fail(f"{limit} presses of {key} never reached {target}")


def head_names(data: dict) -> dict[str, str]:
    return {h["id"]: h["name"] for h in data["heads"]}


# -- the page loads, served and from disk ------------------------------------------------------

def test_server_sends_the_strict_csp(page, shipped):
    response = page.goto(shipped.url("http", LAB))
    assert response.status == 200
    assert response.headers["content-security-policy"] == CSP


@pytest.mark.parametrize("where", WHERE)
def test_every_page_loads_without_errors_or_outside_requests(page, shipped, watch, where):
    for path, heading in (("", "Attention Labs"), ("topics/llm-engineering/", "LLM Engineering"),
                          (LAB, "Attention")):
        page.goto(shipped.url(where, path))
        expect(page.get_by_role("heading", level=1)).to_contain_text(heading)
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    expect(page.get_by_text("The spotlight needs JavaScript")).to_be_hidden()
    # Requests were made and every one stayed on the site (checked by `watch` at teardown).
    assert any(re.search(r"/assets/site\.[0-9a-f]+\.js$", url) for url in watch.requests)


def test_missing_page_shows_the_404_page(page, shipped, watch):
    watch.allow(r"status of 404")  # Chromium logs the 404 status of the page itself
    response = page.goto(shipped.url("http", "labs/no-such-lab/"))
    assert response.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("This page isn't here")
    page.get_by_role("link", name="Go to all labs").click()
    expect(page).to_have_url(shipped.origin + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Attention Labs")


# -- clicking every word ---------------------------------------------------------------------

@pytest.mark.parametrize("where", WHERE)
def test_clicking_every_word_of_every_sentence_and_head_adds_up_to_100(page, shipped, data, where):
    open_lab(page, shipped, where)
    names = head_names(data)
    sentence_menu, head_menu = sentence_select(page), head_select(page)
    clicks = 0
    for sentence in data["sentences"]:
        sentence_menu.select_option(label=sentence["label"])
        expect(words(page)).to_have_text(sentence["queries"])
        for head in data["heads"]:
            if head["id"] not in sentence["heads"]:
                continue
            head_menu.select_option(label=head["name"])
            expect(head_menu).to_have_value(head["id"])
            words(page).first.scroll_into_view_if_needed()
            for i, word in enumerate(sentence["queries"]):
                mouse_click(page, words(page).nth(i))
                expect(page.locator("#sl-caption")).to_have_text(caption_for(word, names[head["id"]]))
                view = read_view(page)
                where_ = f"{sentence['id']}/{head['id']}/{word}#{i}"
                assert view["pressed"] == [i], f"{where_}: pressed words {view['pressed']}"
                assert sum(view["pct"]) == 100, where_
                assert view["total"] == "100%", where_
                assert view["pct"] == sentence["heads"][head["id"]]["pct"][i], f"{where_}: the readout shows another row"
                # One link per key word, drawn when the sentence fits on one line (it does at 1280 px).
                assert not view["wrapped"] and view["svgShown"], f"{where_}: the row wrapped at 1280 px"
                assert view["links"] == len(sentence["keys"]), where_
                visible = sum(w > 0.004 for w in sentence["heads"][head["id"]]["weights"][i])
                assert view["drawn"] == visible, f"{where_}: {view['drawn']} links drawn for {visible} non-zero weights"
                assert not view["misplaced"], f"{where_}: links miss their words: {view['misplaced']}"
                clicks += 1
    assert clicks == sum(len(s["queries"]) * len(s["heads"]) for s in data["sentences"])


def test_a_40_word_sentence_wraps_with_its_links_and_every_weight_under_its_word(page, sites):
    long = sites["long"]
    data = long.spotlight("long")
    sentence = next(s for s in data["sentences"] if s["id"] == "long")
    assert len(sentence["queries"]) == 40
    open_lab(page, long, "http", slug="long")
    expect(words(page)).to_have_count(40)
    expect(page.locator("#sl-arcs")).to_be_visible()
    # Wider than the stage, it wraps: several rows of words, none off to the side.
    assert page.evaluate("new Set([...document.querySelectorAll('#sl-queries .word')].map(b => b.offsetTop)).size") > 1
    assert page.evaluate("(l => l.scrollWidth <= l.clientWidth + 1)(document.querySelector('.sl-line'))")
    for i in (0, 17, 39):
        click_word(page, i, sentence["queries"][i], "Syntax")
        view = read_view(page)
        assert sum(view["pct"]) == 100 and view["total"] == "100%"
        assert view["pct"] == sentence["heads"]["syntax"]["pct"][i]
        # Each key's weight is written under it, as the readout says it.
        assert page.locator("#sl-arcs .sl-links text").all_text_contents() == [f"{p}%" for p in view["pct"]]
    # A short sentence in the same widget fits again: the links come back.
    sentence_select(page).select_option("cat-mat")
    expect(words(page)).to_have_count(6)
    expect(page.locator("#sl-arcs")).to_be_visible()
    view = read_view(page)
    assert view["links"] == 6
    assert not view["misplaced"], f"links miss their words: {view['misplaced']}"


# -- keyboard only ---------------------------------------------------------------------------

def test_keyboard_only_walk_through(page, shipped, data):
    open_lab(page, shipped, "http")
    row = words(page)
    # The word row is one Tab stop: the query word.
    tab_to(page, pressed(page))
    expect(row.nth(2)).to_be_focused()
    expect(row.nth(2)).to_have_text("sat")

    for key, index, word in (("ArrowRight", 3, "on"), ("ArrowLeft", 2, "sat"), ("Home", 0, "The"),
                             ("End", 5, "mat"), ("ArrowRight", 5, "mat"), ("ArrowLeft", 4, "the")):
        page.keyboard.press(key)
        expect(row.nth(index), f"{key} moves the focus").to_be_focused()
        expect(row.nth(index), f"{key} moves the query").to_have_attribute("aria-pressed", "true")
        expect(pressed(page)).to_have_count(1)
        expect(page.locator("#sl-caption")).to_have_text(caption_for(word, "Syntax"))
        expect(page.locator("#sl-live")).to_have_text(re.compile("^" + re.escape(word) + ": "))
    for key in ("Enter", " "):
        page.keyboard.press(key)
        expect(row.nth(4)).to_have_attribute("aria-pressed", "true")
        expect(row.nth(4)).to_be_focused()

    # Enter and Space pick a head from the strip of every head.
    coref = page.locator('#sl-multiples button[data-head="coreference"]')
    tab_to(page, coref)
    page.keyboard.press("Enter")
    expect(coref).to_have_attribute("aria-pressed", "true")
    expect(head_select(page)).to_have_value("coreference")
    expect(page.locator("#sl-caption")).to_have_text(caption_for("the", "Coreference"))
    previous = page.locator('#sl-multiples button[data-head="previous"]')
    tab_to(page, previous, backwards=True)
    page.keyboard.press(" ")
    expect(previous).to_have_attribute("aria-pressed", "true")
    expect(coref).to_have_attribute("aria-pressed", "false")
    expect(head_select(page)).to_have_value("previous")

    # Space flips the ÷√d switch, both ways.
    switch = page.get_by_role("switch", name="÷√d scaling")
    tab_to(page, switch, backwards=True)
    page.keyboard.press(" ")
    expect(switch).not_to_be_checked()
    expect(page.locator("#sl-caption")).to_contain_text("(no ÷√d)")
    page.keyboard.press(" ")
    expect(switch).to_be_checked()
    expect(page.locator("#sl-caption")).not_to_contain_text("÷√d")

    # Arrow keys on the focused selects change the head, then the sentence.
    head = head_select(page)
    tab_to(page, head, backwards=True)
    order = [h["id"] for h in data["heads"]]
    page.keyboard.press("ArrowDown")
    expect(head).to_have_value(order[order.index("previous") + 1])
    sentence = sentence_select(page)
    tab_to(page, sentence, backwards=True)
    page.keyboard.press("ArrowDown")
    expect(sentence).to_have_value(data["sentences"][1]["id"])
    second = data["sentences"][1]["queries"]
    expect(row).to_have_text(second)
    # Back to the word row: the new sentence's query has the Tab stop, and End still works.
    tab_to(page, pressed(page))
    page.keyboard.press("End")
    expect(row.nth(len(second) - 1)).to_be_focused()
    expect(row.nth(len(second) - 1)).to_have_attribute("aria-pressed", "true")


# -- ÷√d ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", WHERE)
def test_scaling_off_makes_sat_peakier(page, shipped, data, where):
    open_lab(page, shipped, where)
    expect(pressed(page)).to_have_text("sat")
    scaled = percentages(page)
    page.get_by_role("switch", name="÷√d scaling").click()
    expect(page.get_by_role("switch", name="÷√d scaling")).not_to_be_checked()
    expect(page.locator("#sl-caption")).to_have_text("Where “sat” looks — Syntax head (no ÷√d)")
    raw = percentages(page)
    assert raw != scaled
    assert sum(raw) == 100
    assert max(raw) > max(scaled), f"without ÷√d the top weight should grow: {scaled} → {raw}"
    assert raw == data["sentences"][0]["heads"]["syntax"]["pct_unscaled"][2]
    expect(page).to_have_url(re.compile(r"[#&]scale=0(&|$)"))


# -- the quick check -------------------------------------------------------------------------

@pytest.fixture(scope="session")
def quiz_total() -> int:
    quiz = yaml.safe_load((ROOT / "content/labs/attention/quiz.yaml").read_text(encoding="utf-8"))
    return len(quiz["questions"])


def check(q):
    q.get_by_role("button", name="Check").click()


def open_quiz(page, site: Site, where: str = "http"):
    """Open the lab and scroll to its quiz, as a learner does: the quiz comes into the page as it
    nears the screen (theme/static/js/15-later.js), answerable once its script has run."""
    open_lab(page, site, where)
    page.locator("#quick-check-title").scroll_into_view_if_needed()
    expect(page.locator("#quiz-score")).to_be_visible()


def test_quiz_wrong_answer_explains_then_retry_is_practice(page, shipped, quiz_total):
    open_quiz(page, shipped)
    score = page.locator("#quiz-score")
    expect(score).to_have_text(f"0 / {quiz_total} right first time")
    q = page.locator("#quiz-sum-to-one")

    q.get_by_label("The number of words in the sentence").click()
    feedback = q.locator(".quiz-feedback[role=status]")
    expect(feedback).to_have_text("")  # picking is not answering
    check(q)
    expect(feedback).to_have_text("Not quite. The answer: Exactly 1.")
    wrong_why = q.locator('.quiz-option:has(input:not([data-correct])) .quiz-why:visible')
    expect(wrong_why).to_have_count(1)
    expect(wrong_why).to_contain_text("Not this one.")
    right_why = q.locator('.quiz-option:has(input[data-correct]) .quiz-why')
    expect(right_why).to_be_visible()
    expect(right_why).to_contain_text("The answer.")
    for radio in q.get_by_role("radio").all():
        expect(radio).to_be_disabled()
    expect(score).to_have_text(f"0 / {quiz_total} right first time")

    retry = q.get_by_role("button", name="Try again")
    expect(retry).to_be_focused()
    retry.click()
    expect(feedback).to_have_text("")
    expect(q.locator(".quiz-why:visible")).to_have_count(0)
    expect(q.get_by_role("radio").first).to_be_focused()
    for radio in q.get_by_role("radio").all():
        expect(radio).to_be_enabled()
        expect(radio).not_to_be_checked()

    q.get_by_label("Exactly 1").click()
    check(q)
    expect(feedback).to_have_text("Right on a later try — practice: the score counts first answers.")
    expect(q.get_by_role("button", name="Try again")).to_be_hidden()  # no retry after a right answer
    expect(score).to_have_text(f"0 / {quiz_total} right first time")


def test_quiz_arrow_keys_move_between_options_and_never_grade(page, shipped, quiz_total):
    open_quiz(page, shipped)
    q = page.locator("#quiz-sum-to-one")
    radios = q.get_by_role("radio")
    radios.first.focus()
    for key in ("ArrowDown", "ArrowDown", "ArrowUp", "ArrowDown"):
        page.keyboard.press(key)
        expect(q.locator(".quiz-feedback[role=status]")).to_have_text("")
        expect(radios.first).to_be_enabled()
    chosen = q.locator("input:checked")
    expect(chosen).to_have_count(1)
    right = chosen.get_attribute("data-correct") is not None
    page.keyboard.press("Enter")  # Enter on an option is Check
    expect(q.locator(".quiz-feedback[role=status]")).to_have_text(
        "Correct!" if right else re.compile(r"^Not quite\. The answer: "))
    expect(page.locator("#quiz-score")).to_have_text(f"{int(right)} / {quiz_total} right first time")


def test_quiz_tick_all_that_apply(page, shipped, quiz_total):
    open_quiz(page, shipped)
    q = page.locator("#quiz-multi-head")
    feedback = q.locator(".quiz-feedback[role=status]")
    check(q)
    expect(feedback).to_have_text("Tick at least one option, then Check.")
    q.get_by_label("In the original Transformer, each head has its own query, key and value projections").click()
    check(q)
    expect(feedback).to_contain_text("Not quite. The answer: ")  # the right options in the order shown (shuffled at build)
    expect(feedback).to_contain_text("In the original Transformer, each head has its own query, key and value projections")
    expect(feedback).to_contain_text("outputs are combined by concatenating them")
    expect(q.locator(".quiz-why:visible", has_text="Missed — this one is true.")).to_have_count(1)
    q.get_by_role("button", name="Try again").click()
    q.get_by_label("In the original Transformer, each head has its own query, key and value projections").click()
    q.get_by_label("combined by concatenating them").click()
    check(q)
    expect(feedback).to_have_text("Right on a later try — practice: the score counts first answers.")
    expect(page.locator("#quiz-score")).to_have_text(f"0 / {quiz_total} right first time")


def test_quiz_click_the_word_and_see_it_in_the_spotlight(page, shipped, quiz_total):
    open_quiz(page, shipped)
    q = page.locator("#quiz-click-sat")
    feedback = q.locator(".quiz-feedback[role=status]")
    # The prompt's own word is not an answer button, and says so when clicked.
    query = q.locator("[data-not-an-answer]")
    expect(query).to_contain_text("sat")
    expect(q.get_by_role("button", name="sat", exact=True)).to_have_count(0)
    query.click()
    expect(feedback).to_have_text("“sat” is the query — the word doing the looking. Click the word it attends to most.")
    expect(page.locator("#quiz-score")).to_have_text(f"0 / {quiz_total} right first time")
    # Keyboard: Tab onto "cat" and press Enter — the first answer, so it counts.
    cat = q.get_by_role("button", name="cat", exact=True)
    tab_to(page, cat)
    page.keyboard.press("Enter")
    expect(feedback).to_have_text("Correct!")
    expect(page.locator("#quiz-score")).to_have_text(f"1 / {quiz_total} right first time")
    expect(q.get_by_role("button", name="Try again")).to_be_hidden()

    # The explanation links to the view it talks about, wherever the spotlight is now.
    sentence_select(page).select_option("animal")
    q.get_by_role("link", name="See it in the spotlight").click()
    expect(sentence_select(page)).to_have_value("cat-mat")
    expect(head_select(page)).to_have_value("syntax")
    expect(pressed(page)).to_have_text("sat")
    expect(page.locator("#sl-caption")).to_have_text(caption_for("sat", "Syntax"))


def test_quiz_a_wrong_word_then_the_right_one_is_practice(page, shipped, quiz_total):
    open_quiz(page, shipped)
    q = page.locator("#quiz-click-sat")
    feedback = q.locator(".quiz-feedback[role=status]")
    q.get_by_role("button", name="mat", exact=True).click()
    expect(feedback).to_have_text("Not quite. The answer: cat.")
    expect(q.get_by_role("button", name="mat", exact=True)).to_have_attribute("aria-pressed", "true")
    q.get_by_role("button", name="Try again").click()
    q.get_by_role("button", name="cat", exact=True).click()
    expect(feedback).to_have_text("Right on a later try — practice: the score counts first answers.")
    expect(page.locator("#quiz-score")).to_have_text(f"0 / {quiz_total} right first time")


def test_quiz_no_empty_explanation(page, shipped, quiz_total):
    """After an answer the explanation shows only when there is something to explain."""
    open_quiz(page, shipped)
    questions = page.locator("fieldset.quiz-q").all()
    assert len(questions) == quiz_total
    for q in questions:
        details = q.locator("details.quiz-answer")
        if q.locator(".quiz-choices").count():
            q.locator(".quiz-choices [data-option]").first.click()
        else:
            q.locator("input").first.check()
            check(q)
        if details.is_visible():
            expect(details.locator(".quiz-explanation, .quiz-extra")).not_to_have_count(0)
            assert details.inner_text().strip() != "Explanation"


@pytest.mark.parametrize("where", WHERE)
def test_quiz_answers_survive_a_reload_until_reset(page, shipped, quiz_total, where):
    open_quiz(page, shipped, where)
    page.locator("#quiz-sum-to-one").get_by_label("Exactly 1").click()
    check(page.locator("#quiz-sum-to-one"))
    page.locator("#quiz-scaling").get_by_label("To make attention faster to compute").click()
    check(page.locator("#quiz-scaling"))
    page.locator("#quiz-click-sat").get_by_role("button", name="cat", exact=True).click()
    expect(page.locator("#quiz-score")).to_have_text(f"2 / {quiz_total} right first time")

    page.reload()
    expect(page.locator("#quiz-score")).to_have_text(f"2 / {quiz_total} right first time")
    expect(page.locator("#quiz-sum-to-one").locator(".quiz-feedback[role=status]")).to_have_text("Correct!")
    expect(page.locator("#quiz-sum-to-one").get_by_label("Exactly 1")).to_be_checked()
    expect(page.locator("#quiz-scaling").locator(".quiz-feedback[role=status]")).to_contain_text("Not quite.")
    expect(page.locator("#quiz-click-sat").locator(".quiz-feedback[role=status]")).to_have_text("Correct!")
    expect(page.locator("#quiz-qkv").locator(".quiz-feedback[role=status]")).to_have_text("")

    page.get_by_role("button", name="Reset the quiz").click()
    expect(page.locator("#quiz-score")).to_have_text(f"0 / {quiz_total} right first time")
    expect(page.locator("#quiz .quiz-feedback:not(:empty)")).to_have_count(0)
    expect(page.locator("#quiz input:checked")).to_have_count(0)
    page.reload()
    expect(page.locator("#quiz-score")).to_have_text(f"0 / {quiz_total} right first time")
    expect(page.locator("#quiz .quiz-feedback:not(:empty)")).to_have_count(0)
    expect(page.locator("#quiz-sum-to-one").get_by_label("Exactly 1")).to_be_enabled()
    # After a reset, a first answer counts again.
    page.locator("#quiz-sum-to-one").get_by_label("Exactly 1").click()
    check(page.locator("#quiz-sum-to-one"))
    expect(page.locator("#quiz-score")).to_have_text(f"1 / {quiz_total} right first time")


@pytest.mark.parametrize("where", WHERE)
def test_mark_done_survives_a_reload_and_shows_on_the_index(page, shipped, where):
    total = len(shipped.labs)
    open_lab(page, shipped, where)
    done = page.get_by_role("button", name="Mark this lab done")
    count = page.locator("[data-progress-count]")
    expect(done).to_have_attribute("aria-pressed", "false")
    expect(count).to_have_text(f"0 / {total} labs done")
    done.click()
    expect(done).to_have_attribute("aria-pressed", "true")
    expect(count).to_have_text(f"1 / {total} labs done")

    page.reload()
    expect(done).to_have_attribute("aria-pressed", "true")
    expect(count).to_have_text(f"1 / {total} labs done")

    page.get_by_role("navigation", name="Site").get_by_role("link", name="All labs").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Attention Labs")
    expect(page.locator("[data-progress-count]")).to_have_text(f"1 / {total} labs done")
    card = page.locator('[data-lab="attention"]')
    expect(card.locator("[data-done-mark]")).to_be_visible()
    expect(card.locator("[data-done-mark]")).to_have_text("✓ Done")

    card.get_by_role("link").first.click()
    expect(done).to_have_attribute("aria-pressed", "true")
    done.click()
    expect(done).to_have_attribute("aria-pressed", "false")
    expect(count).to_have_text(f"0 / {total} labs done")
    page.go_back()
    page.reload()
    expect(page.locator('[data-lab="attention"] [data-done-mark]')).to_be_hidden()
    expect(page.locator("[data-progress-count]")).to_have_text(f"0 / {total} labs done")


# -- deep links and history ------------------------------------------------------------------

@pytest.mark.parametrize("where", WHERE)
def test_deep_link_restores_the_view_and_back_forward_move_between_states(page, shipped, data, where):
    open_lab(page, shipped, where, "#s=animal&h=coreference&q=7&scale=1")
    expect(sentence_select(page)).to_have_value("animal")
    expect(head_select(page)).to_have_value("coreference")
    expect(page.get_by_role("switch", name="÷√d scaling")).to_be_checked()
    expect(words(page).nth(7)).to_have_attribute("aria-pressed", "true")
    expect(pressed(page)).to_have_text("it")
    expect(page.locator("#sl-caption")).to_have_text("Where “it” looks — Coreference head")
    animal = next(s for s in data["sentences"] if s["id"] == "animal")
    shown = percentages(page)
    assert animal["keys"][shown.index(max(shown))] == "animal", "“it” should look at “animal” most"

    click_word(page, 10, "tired", "Coreference")
    expect(page).to_have_url(re.compile(r"#s=animal&h=coreference&q=10&scale=1$"))
    head_select(page).select_option(label="Syntax")
    expect(page).to_have_url(re.compile(r"#s=animal&h=syntax&q=10&scale=1$"))

    # A word or a head replaces the history entry; a new sentence is one of its own: Back returns
    # to the sentence before as it was left, without walking through every click.
    sentence_select(page).select_option("decoder")
    expect(page).to_have_url(re.compile(r"#s=decoder&"))
    page.go_back()
    expect(sentence_select(page)).to_have_value("animal")
    expect(head_select(page)).to_have_value("syntax")
    expect(words(page).nth(10)).to_have_attribute("aria-pressed", "true")
    page.go_forward()
    expect(sentence_select(page)).to_have_value("decoder")

    # A link pasted into the same tab (a hash change) switches the view too, scaling off included.
    page.goto(shipped.url(where, LAB, "#s=decoder&h=previous&q=4&scale=0"))
    expect(sentence_select(page)).to_have_value("decoder")
    expect(head_select(page)).to_have_value("previous")
    expect(page.get_by_role("switch", name="÷√d scaling")).not_to_be_checked()
    expect(page.locator("#sl-caption")).to_have_text("Where “red” looks — Previous word head (no ÷√d)")


# -- the screen reader's view ----------------------------------------------------------------

def test_live_region_announces_the_query_and_its_top_three(page, shipped, data):
    open_lab(page, shipped, "http")
    live = page.locator("#sl-live")
    expect(live).to_have_attribute("aria-live", "polite")

    def check(word: str, keys: list[str]):
        expect(live).to_have_text(re.compile("^" + re.escape(word) + ": "))
        said = live.text_content()[len(word) + 2:].split(", ")
        assert len(said) == 3, said
        shown = {(keys[j], p) for j, p in enumerate(percentages(page))}
        heard = [(m.group(1), int(m.group(2))) for m in (re.fullmatch(r"(.+) (\d+)%", s) for s in said)]
        assert all(pair in shown for pair in heard), f"announced {heard}, the table shows {sorted(shown)}"
        assert [p for _, p in heard] == sorted((p for _, p in shown), reverse=True)[:3]

    cat_mat = data["sentences"][0]
    click_word(page, 1, "cat", "Syntax")
    check("cat", cat_mat["keys"])
    click_word(page, 2, "sat", "Syntax")
    check("sat", cat_mat["keys"])
    page.keyboard.press("ArrowRight")
    check("on", cat_mat["keys"])
    sentence_select(page).select_option("animal")
    animal = next(s for s in data["sentences"] if s["id"] == "animal")
    click_word(page, 7, "it", "Syntax")
    check("it", animal["keys"])


# -- real model heads --------------------------------------------------------------------------

@pytest.mark.parametrize("where", WHERE)
def test_real_heads_load_on_demand_and_add_up_to_100(page, shipped, data, watch, where):
    open_lab(page, shipped, where)
    assert not [u for u in watch.requests if "real-heads" in u], "the model's heads load only when asked for"
    head = head_select(page)
    expect(page.locator('#sl-head option[value="L0H0"]'),
           "the Head select should offer the model's heads (options L<layer>H<head>, theme/README.md)").to_have_count(1)
    head.select_option("L0H0")
    expect(page.locator("#sl-caption")).to_have_text(re.compile(r"^Where “.+” looks — layer 0, head 0$"))
    expect(page.locator("#sl-readout tbody th", has_text="[CLS]")).to_have_count(1)
    view = read_view(page)
    assert sum(view["pct"]) == 100 and view["total"] == "100%"
    assert [u for u in watch.requests if re.search(r"/labs/attention/real-heads-[a-z0-9_-]+\.[0-9a-f]+\.js$", u)]

    # The model grid: one button per head; picking one switches the spotlight to it.
    model = page.locator("#sl-model")
    expect(model).to_be_visible()
    expect(page.locator("#sl-grid button.sl-cell")).to_have_count(data["real"]["layers"] * data["real"]["heads"])
    cell = page.locator("#sl-grid").get_by_role("button", name="layer 1, head 3", exact=True)
    cell.click()
    expect(cell).to_have_attribute("aria-pressed", "true")
    expect(head).to_have_value("L1H3")
    expect(page.locator("#sl-caption")).to_have_text(re.compile(r"layer 1, head 3$"))
    view = read_view(page)
    assert sum(view["pct"]) == 100 and view["total"] == "100%"
    assert not view["misplaced"], f"links miss their words: {view['misplaced']}"
    expect(page).to_have_url(re.compile(r"h=L1H3&q=\d+&scale=1&special=1$"))

    # Hiding [CLS] and [SEP] leaves the weights as they are and says how much they held.
    page.get_by_role("switch", name="Hide special tokens").click()
    expect(page.locator("#sl-readout tbody tr:visible th", has_text="[CLS]")).to_have_count(0)
    expect(page.locator("#sl-readout tfoot tr.sl-total td.sl-pct")).to_have_text("100%")
    shown = int(page.locator("#sl-readout tfoot tr", has_text="Shown").locator("td.sl-pct").text_content()[:-1])
    assert sum(percentages(page)) == shown


@pytest.mark.parametrize("where", WHERE)
def test_deep_link_to_a_real_head_loads_it(page, shipped, where):
    open_lab(page, shipped, where, "#s=cat-mat&h=L2H5&q=3&scale=1&special=1")
    expect(head_select(page)).to_have_value("L2H5")
    expect(pressed(page)).to_have_text("sat")  # [CLS] the cat sat: token 3
    expect(page.locator("#sl-caption")).to_have_text("Where “sat” looks — layer 2, head 5")
    expect(page.locator('#sl-grid button.sl-cell[data-head="L2H5"]')).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#sl-readout tfoot tr.sl-total td.sl-pct")).to_have_text("100%")
    assert sum(percentages(page)) == 100


def test_real_heads_that_fail_to_load_leave_the_spotlight_working(page, shipped, watch):
    watch.allow(r"real-heads|ERR_FAILED")  # the failed request is logged; that is the point here
    page.route(re.compile(r"/real-heads-[a-z0-9_-]+\.[0-9a-f]+\.js$"), lambda route: route.abort())
    open_lab(page, shipped, "http")
    head_select(page).select_option("L0H0")
    # The learner is told, in the spotlight's status line, and the view stays on a teaching head.
    status = page.locator("#spotlight").get_by_role("status")
    expect(status).to_be_visible()
    expect(status).to_have_text(re.compile(r"(could not|couldn.t|cannot|failed).*load|load.*fail", re.IGNORECASE))
    expect(head_select(page)).to_have_value("syntax")
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    expect(page.locator("#sl-caption")).to_have_text(caption_for("sat", "Syntax"))
    click_word(page, 1, "cat", "Syntax")
    assert sum(percentages(page)) == 100


# -- accessibility ---------------------------------------------------------------------------

@pytest.fixture(scope="session")
def axe():
    from axe_playwright_python.sync_playwright import Axe
    return Axe()


def axe_clean(page, axe, **options) -> None:
    """axe finds no violation on ``page`` as it ends up: transitions finished first, so colour
    contrast is judged on the final colours. The failure's message is axe's report."""
    settle(page)
    results = axe.run(page, **options)
    assert results.violations_count == 0, results.generate_report()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("path", ["", LAB, "topics/llm-engineering/", "404.html"],
                         ids=["index", "lab", "topic", "404"])
def test_axe_finds_no_violations(page, shipped, axe, path, scheme):
    page.emulate_media(color_scheme=scheme)
    page.goto(shipped.url("http", path))
    if path == LAB:
        everything_in(page)
        drawn(page)
    axe_clean(page, axe)


# -- screenshots: looked at by a person ------------------------------------------------------

@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_screenshots_and_no_sideways_scrolling(browser, watch, shipped, width, height, scheme):
    ARTIFACTS.mkdir(exist_ok=True)
    size = f"{width}x{height}" + ("-dark" if scheme == "dark" else "")
    ctx = _watched_context(browser, watch, width, height, device_scale_factor=1, color_scheme=scheme)
    try:
        page = ctx.new_page()
        shots = []
        open_lab(page, shipped, "http")
        settle(page)
        page.screenshot(path=str(ARTIFACTS / f"lab-{size}-top.png"))
        everything_in(page)  # the whole page, as a learner who has scrolled through it sees it
        page.evaluate("scrollTo(0, 0)")
        settle(page)
        page.screenshot(path=str(ARTIFACTS / f"lab-{size}-full.png"), full_page=True)
        shots += [f"lab-{size}-top.png", f"lab-{size}-full.png"]
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the lab page scrolls sideways by {overflow}px at {size}"
        page.goto(shipped.url("http"))
        page.screenshot(path=str(ARTIFACTS / f"index-{size}.png"), full_page=True)
        shots.append(f"index-{size}.png")
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the index scrolls sideways by {overflow}px at {size}"
        for name in shots:
            assert (ARTIFACTS / name).stat().st_size > 5_000, name
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


# -- hostile text ----------------------------------------------------------------------------

@pytest.mark.parametrize("where", WHERE)
def test_script_in_content_is_shown_as_text_and_never_runs(page, sites, watch, where):
    hostile = sites["hostile"]
    open_lab(page, hostile, where, slug="alpha")
    expect(page.locator(".hero-tagline")).to_have_text(
        f"A tagline with {HOSTILE} & an ampersand, shown as text.")
    expect(page.locator("#sl-sentence option").first).to_have_text(f"The cat sat {HOSTILE}")
    expect(page.locator("#sl-note")).to_have_text(f"A note with {HOSTILE} in it.")
    page.locator("#faq-title").scroll_into_view_if_needed()  # the FAQ comes in as it nears the screen
    page.get_by_text(f"Is {HOSTILE} shown as text?").click()
    expect(page.locator(".faq-a code", has_text=HOSTILE)).to_be_visible()
    click_word(page, 1, "cat", "Syntax")
    assert sum(percentages(page)) == 100
    assert watch.dialogs == [], f"a script in the content ran: {watch.dialogs}"


# -- progress: save to a file, load it back ----------------------------------------------------

def _storage(page) -> dict:
    return page.evaluate("Object.fromEntries(Object.keys(localStorage).sort().map(k => [k, JSON.parse(localStorage[k])]))")


@pytest.mark.parametrize("where", WHERE)
def test_progress_saved_to_a_file_comes_back_after_storage_is_wiped(page, shipped, quiz_total, tmp_path, where):
    open_lab(page, shipped, where)
    page.get_by_role("button", name="Mark this lab done").click()
    page.locator("#quiz-click-sat").get_by_role("button", name="cat", exact=True).click()
    page.locator("#quiz-sum-to-one").get_by_label("The number of words in the sentence").click()
    check(page.locator("#quiz-sum-to-one"))
    before = _storage(page)
    assert len(before) == 2  # the done marks and this quiz's answers
    with page.expect_download() as info:
        page.get_by_role("button", name="Save my progress").click()
    saved = tmp_path / "progress.json"
    info.value.save_as(saved)
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert data["format"] == "attention-labs/progress" and data["items"] == before

    page.evaluate("localStorage.clear()")
    page.reload()
    expect(page.get_by_role("button", name="Mark this lab done")).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#quiz-score")).to_have_text(f"0 / {quiz_total} right first time")

    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Load progress…").first.click()
    chooser.value.set_files(str(saved))
    expect(page.get_by_role("button", name="Mark this lab done")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#quiz-score")).to_have_text(f"1 / {quiz_total} right first time")
    expect(page.locator("#quiz-sum-to-one .quiz-feedback")).to_contain_text("Not quite.")
    assert _storage(page) == before


@pytest.mark.parametrize("content,reason", [
    ("not json", "is not valid JSON"),
    ('{"format": "something-else", "version": 1, "items": {}}', 'is not a progress file'),
    ('{"format": "attention-labs/progress", "version": 2, "items": {}}', "is version 2; this site reads version 1"),
    ('{"format": "attention-labs/progress", "version": 1, "items": {"other-site:x": {}}}', "does not belong to this site"),
    ('{"format": "attention-labs/progress", "version": 1, "items": {"attention-labs:v1": {"done": [1]}}}',
     "is not in the expected shape"),
], ids=["not-json", "other-format", "other-version", "foreign-key", "bad-shape"])
def test_a_bad_progress_file_is_refused_with_the_reason_and_changes_nothing(page, shipped, tmp_path, content, reason):
    open_lab(page, shipped, "http")
    page.get_by_role("button", name="Mark this lab done").click()
    before = _storage(page)
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Load progress…").first.click()
    chooser.value.set_files(str(bad))
    message = page.locator("[data-progress-message]").first
    expect(message).to_contain_text(f"Not loaded: bad.json")
    expect(message).to_contain_text(reason)
    expect(message).to_contain_text("Nothing changed.")
    assert _storage(page) == before


def test_the_index_forgets_done_marks_of_labs_that_are_gone(page, shipped):
    page.goto(shipped.url("http"))
    page.evaluate('localStorage.setItem("attention-labs:v1", JSON.stringify({done: ["attention", "no-such-lab"]}))')
    page.reload()
    expect(page.locator("[data-progress-count]")).to_have_text(f"1 / {len(shipped.labs)} labs done")
    assert _storage(page)["attention-labs:v1"] == {"done": ["attention"]}


# -- the first screen, the first paint, the page's weight, the figure ------------------------

@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_first_clickable_word_is_on_the_first_screen(browser, watch, shipped, width, height):
    ctx = _watched_context(browser, watch, width, height)
    try:
        page = ctx.new_page()
        open_lab(page, shipped, "http")
        box = page.evaluate("() => { const r = document.querySelector('#sl-queries button.word').getBoundingClientRect();"
                            " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, scrollY} }")
        assert box["scrollY"] == 0
        assert 0 <= box["top"] and box["bottom"] <= height, f"the first word is at {box} on a {width}×{height} screen"
        assert 0 <= box["left"] and box["right"] <= width, box
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


COUNT_AT_FIRST_PAINT = """
document.addEventListener("DOMContentLoaded", () => {  // deferred scripts have run; nothing is painted yet
  const spot = document.getElementById("spotlight");
  window.__firstPaint = { all: document.getElementsByTagName("*").length, spotlight: spot ? spot.getElementsByTagName("*").length : 0 };
});
"""


def test_the_spotlight_builds_little_before_the_first_paint(page, shipped):
    """The model view's 72 thumbnails, the Head select's 72 real heads, the strip of small
    multiples and the four moves' tables are built later (opened, idle, scrolled near)."""
    page.add_init_script(COUNT_AT_FIRST_PAINT)
    open_lab(page, shipped, "http")
    first = page.evaluate("window.__firstPaint")
    assert first["spotlight"] <= 180, first  # #spotlight: the controls, the words and their links, the readout
    expect(page.locator("#sl-grid button.sl-cell")).to_have_count(0)  # the model view is closed
    expect(page.locator('#sl-head option[value="L0H0"]')).to_have_count(1)  # once idle
    page.locator("#sl-model summary").click()
    expect(page.locator("#sl-grid button.sl-cell")).to_have_count(72)
    page.locator("#sl-hood").scroll_into_view_if_needed()
    expect(page.locator("#sl-step table").first).to_be_visible()
    expect(page.locator("#sl-multiples .sl-mini")).to_have_count(4)


def test_the_lab_page_has_at_most_400_elements_at_first_paint(page, shipped):
    """The first screen, and little else (a phone pays for every element). Below the gist the parts' bodies are kept out
    of the DOM (15-later.js) and the spotlight builds its hidden parts later."""
    page.add_init_script(COUNT_AT_FIRST_PAINT)
    open_lab(page, shipped, "http")
    assert page.evaluate("window.__firstPaint.all") <= 400


# -- parts kept for later (theme/static/js/15-later.js) ------------------------------------------

LATER = "noscript[data-later]"


def test_a_part_below_the_first_screen_comes_in_before_it_reaches_the_screen(page, shipped):
    page.add_init_script(COUNT_AT_FIRST_PAINT)
    open_lab(page, shipped, "http")
    assert page.locator("#code .codehilite").count() == 0  # not at first paint, nor while far away
    assert page.locator(f"#code {LATER}").count() == 1
    # Scroll until the section's top is half a screen below the bottom of the view.
    title = "Math.round(document.getElementById('code-title').getBoundingClientRect().top)"
    at = page.evaluate(f"scrollTo(0, document.getElementById('code').getBoundingClientRect().top + scrollY - 1.5 * innerHeight), {title}")
    code = page.locator("#code .codehilite")
    expect(code).to_have_count(1)
    assert page.evaluate("document.getElementById('code').getBoundingClientRect().top") > page.viewport_size["height"]
    expect(code).to_contain_text("def head(X, W_Q, W_K, W_V):")
    expect(code.locator("span.k", has_text="def").first).to_be_attached()  # highlighted as Pygments wrote it
    # What is on and near the screen did not move while the parts around it came in (those that
    # begin above the view grow upwards).
    assert abs(page.evaluate(title) - at) <= 1, (page.evaluate(title), at)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("target", ["three-vectors", "quiz", "quiz-qkv", "four-moves", "faq"],
                         ids=["faq-item", "quiz", "quiz-question", "heading-in-prose", "section"])
def test_a_deep_link_into_a_later_part_lands_on_it_and_stays(page, shipped, where, target):
    page.goto(shipped.url(where, LAB, "#" + target))
    expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
    el = page.locator("#" + target)
    expect(el).to_be_in_viewport()
    assert page.evaluate("document.querySelector(':target')?.id") == target
    top = lambda: round(el.bounding_box()["y"])  # noqa: E731

    def landed() -> int:
        """Where the target is once the view has settled: at the top of the view (the quiz's
        script, when it comes with the part, moves what is above it; the view then goes back)."""
        for _ in range(30):
            if 0 <= top() <= 60:
                return top()
            page.wait_for_timeout(100)
        pytest.fail(f"#{target} is {top()} px from the top of the view")

    first = landed()
    page.wait_for_timeout(500)  # the parts around it come in (and the quiz's script runs) meanwhile
    if page.locator("#quiz").count():
        expect(page.locator("#quiz-score")).to_be_visible()
    assert abs(landed() - first) <= 2, (first, top())


@pytest.mark.parametrize("how", ["link", "address"])
def test_a_link_or_a_new_address_into_a_later_part_lands_on_it(page, shipped, how):
    open_lab(page, shipped, "http")
    assert page.locator(f"#faq {LATER}").count() == 1  # far below: not in the page yet
    if how == "link":  # a link written anywhere on the page (an author's `#head-roles`)
        page.evaluate("""document.querySelector("nav.toc ul").append(Object.assign(document.createElement("li"),
          {innerHTML: '<a href="#head-roles">Which roles do heads learn?</a>'}))""")
        page.get_by_role("link", name="Which roles do heads learn?").click()
    else:  # typed into the address bar, or Back and Forward
        page.evaluate("location.hash = '#head-roles'")
    expect(page.locator("#head-roles")).to_be_in_viewport()
    assert page.evaluate("document.querySelector(':target')?.id") == "head-roles"
    expect(page).to_have_url(re.compile(r"#head-roles$"))


def test_from_disk_a_link_in_a_later_part_opens_the_other_page(page, sites):
    hostile = sites["hostile"]
    open_lab(page, hostile, "file", slug="alpha")
    page.locator("#details-title").scroll_into_view_if_needed()
    page.get_by_role("link", name="Beta's gist").click()
    expect(page).to_have_url(hostile.url("file", "labs/beta/", "#gist"))  # …/labs/beta/index.html#gist


def test_tab_and_shift_tab_walk_through_later_parts_in_order(page, shipped):
    open_lab(page, shipped, "http")
    # The last stop before the parts kept for later: the ÷√d demo's (it follows the gist), once
    # the demo, which comes in as it nears the screen, is drawn.
    page.locator("#sqrt-demo summary").focus()
    expect(page.locator("#sqrt-demo")).to_have_attribute("data-ready", "true")
    page.locator("#sqrt-demo summary").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('section')?.id") == "under-the-hood"
    first = page.evaluate("document.querySelector('#under-the-hood a[href]').getAttribute('href')")  # its first link
    assert page.evaluate("document.activeElement.getAttribute('href')") == first
    page.get_by_role("button", name="Save my progress").focus()  # the first stop after them
    page.keyboard.press("Shift+Tab")
    expect(page.locator("#faq details").last.locator("summary")).to_be_focused()


def test_find_in_page_brings_every_part_in(page, shipped):
    open_lab(page, shipped, "http")
    assert page.locator(LATER).count() > 0
    page.keyboard.press("Control+f")
    expect(page.locator(LATER)).to_have_count(0)
    expect(page.locator("#faq details")).to_have_count(5)


def test_a_script_that_comes_after_its_part_leaves_the_view_where_it_was(page, shipped):
    """Find in page, print, Tab or a link bring the quiz in at once, before its script has come;
    the script, arriving while the reader reads the FAQ below, makes the quiz taller (its buttons,
    its score): the FAQ stays where it is on screen. The browser's scroll anchoring would not hold
    it: it holds the quiz's section, at the top of the view, whose top does not move."""
    held = []
    page.route("**/assets/later/quiz.*.js", lambda route: held.append(route))
    page.set_viewport_size({"width": 1280, "height": 800})
    open_lab(page, shipped, "http")
    page.evaluate("Labs.later.all()")
    expect(page.locator(LATER)).to_have_count(0)
    for _ in range(100):  # the quiz's script asked for, and held
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the quiz's script was never asked for"
    title = "Math.round(document.getElementById('faq-title').getBoundingClientRect().top)"
    page.evaluate(f"scrollBy(0, {title} - 200)")
    assert page.evaluate(title) == 200
    assert page.evaluate("document.getElementById('quick-check').getBoundingClientRect().bottom") > 0  # at the top of the view
    expect(page.locator("#quiz-score")).to_be_hidden()  # the script has not run
    grown = "document.getElementById('quiz').offsetHeight"
    before = page.evaluate(grown)
    held[0].continue_()
    expect(page.locator("#quiz-score")).to_be_visible()
    assert page.evaluate(grown) - before > 50  # the script did make the quiz taller above the view
    assert page.evaluate(title) == 200


def test_printing_brings_every_part_in_with_the_answers_open(page, shipped):
    open_lab(page, shipped, "http")
    page.evaluate("""addEventListener("beforeprint", () => {  // runs after the page's own listener
      window.__printed = [document.querySelectorAll("noscript[data-later]").length, document.querySelectorAll("#faq details[open]").length];
    });""")
    page.pdf()
    assert page.evaluate("window.__printed") == [0, 5]  # what went to the printer: every part, the FAQ open
    expect(page.locator(LATER)).to_have_count(0)
    expect(page.locator("#faq details[open]")).to_have_count(0)  # closed again after printing


def test_without_javascript_every_part_reads_in_place(browser, shipped):
    """The parts kept for later are ordinary HTML without scripts: the same text, where it belongs."""
    sections = ["under-the-hood", "what-youre-seeing", "code", "key-ideas", "faq"]
    read = "ids => ids.map(id => document.getElementById(id).innerText)"
    with_js = browser.new_context(viewport={"width": 1280, "height": 800})
    without = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    try:
        page = with_js.new_page()
        open_lab(page, shipped, "http")
        everything_in(page)
        expected = page.evaluate(read, sections)
        page = without.new_page()
        page.goto(shipped.url("http", LAB))
        assert page.evaluate(read, sections) == expected
        expect(page.locator("#code .codehilite")).to_be_visible()
        expect(page.locator("#faq details summary")).to_have_count(5)
        expect(page.locator("#quiz fieldset.quiz-q").first).to_be_visible()
        expect(page.locator("#quiz details.quiz-answer summary").first).to_have_text("Show answer")
        assert "<div" not in page.locator("main").inner_text()  # no markup shown as text
    finally:
        with_js.close()
        without.close()


def test_first_visit_weighs_at_most_35_kb_gzip_and_115_kb_raw(shipped):
    """The lab page's HTML and every file it asks for on load (stylesheets, scripts, icon),
    from the built files; what it loads on demand is not counted. KB = 1000 bytes. The gzip
    budget is what travels; the raw one bounds what a phone parses (theme/README.md)."""
    import gzip
    from urllib.parse import urlsplit

    page = shipped.folder / LAB / "index.html"
    html = re.sub(r"<noscript>.*?</noscript>", "", page.read_text(encoding="utf-8"), flags=re.S)  # not fetched with JS
    refs = re.findall(r'<(?:link\b[^>]*\brel="(?:stylesheet|icon|preload|modulepreload)"[^>]*\bhref|script\b[^>]*\bsrc)="([^"]+)"', html)
    files = [("index.html", page.read_bytes())] + [(r, (page.parent / r).read_bytes()) for r in refs if not urlsplit(r).scheme]
    raw = sum(len(b) for _, b in files)
    packed = sum(len(gzip.compress(b, 9)) for _, b in files)
    table = "\n".join(f"  {name}: {len(b)} raw, {len(gzip.compress(b, 9))} gzip" for name, b in files)
    assert raw <= 115_000 and packed <= 35_000, f"first visit {raw} B raw / {packed} B gzip:\n{table}"


@pytest.mark.parametrize("sentence,word", [("animal", "it"), ("decoder", "chased"), ("translate", "black")])
def test_each_sentence_opens_on_its_telling_word(page, shipped, sentence, word):
    open_lab(page, shipped, "http")
    sentence_select(page).select_option(sentence)
    expect(pressed(page)).to_have_text(word)
    expect(page).to_have_url(re.compile(rf"#s={sentence}&h=syntax&q=\d+&scale=1$"))


@pytest.mark.parametrize("where", WHERE)
def test_download_the_view_as_svg_and_png(page, shipped, data, where):
    open_lab(page, shipped, where, "#s=cat-mat&h=syntax&q=2&scale=1")
    with page.expect_download() as got:
        page.get_by_role("button", name="Download SVG").click()
    svg = Path(got.value.path()).read_text(encoding="utf-8")
    assert got.value.suggested_filename == "attention-cat-mat-syntax-sat.svg"
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    import xml.etree.ElementTree as ET
    texts = [t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    cat_mat = next(s for s in data["sentences"] if s["id"] == "cat-mat")
    assert "Where “sat” looks — Syntax head" in texts
    for word, pct in zip(cat_mat["keys"], cat_mat["heads"]["syntax"]["pct"][2]):
        assert word in texts, word
        assert f"{pct}%" in texts, (word, pct)
    assert svg.count("<path ") >= 3  # the links
    assert "Total 100%" in texts
    assert "Attention Labs — every weight computed when the site was built" in texts

    with page.expect_download() as got:
        page.get_by_role("button", name="Download PNG").click()
    png = Path(got.value.path()).read_bytes()
    assert got.value.suggested_filename.endswith(".png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert 1200 <= width <= 2400 and 600 <= height <= 2400 and 20_000 < len(png) < 1_500_000, (width, height, len(png))


def test_without_javascript_the_spotlight_reserves_no_screen(browser, shipped):
    """With scripts the spotlight holds a screen's height until drawn (no layout shift); without
    them nojs.css lifts that, so the no-script message is followed straight by the lesson."""
    ctx = browser.new_context(java_script_enabled=False, viewport={"width": 375, "height": 812})
    try:
        page = ctx.new_page()
        page.goto(shipped.url("http", LAB))
        expect(page.get_by_text("The spotlight needs JavaScript")).to_be_visible()
        height = page.evaluate("document.getElementById('spotlight').getBoundingClientRect().height")
        assert height < 300, f"the spotlight keeps {height}px of empty space without JavaScript"
    finally:
        ctx.close()


def test_quiz_ids_named_like_object_prototype_keys_are_stored_and_scored(context, watch, tmp_path):
    """A question whose id is `constructor` is answered for the first time like any other: with
    plain objects for the answers, `id in first` found the prototype's method, so the page said
    "Right on a later try" and scored 0. (Question ids are lower-case, so `constructor` is the
    one Object.prototype name an author can write.)"""
    content = tmp_path / "content"
    shutil.copytree(FIXTURES / "browser" / "content", content)
    quiz = content / "labs" / "long" / "quiz.yaml"
    questions = yaml.safe_load(quiz.read_text(encoding="utf-8"))["questions"]
    written = [json.loads(json.dumps({**questions[0], "id": qid}))  # copies: no YAML aliases
               for qid in ("constructor", "sum", "other")]
    quiz.write_text(yaml.safe_dump({"questions": written}, allow_unicode=True), encoding="utf-8")
    site = _serve(content, tmp_path / "site")
    watch.prefixes += tuple(site.prefixes())
    page = context.new_page()
    try:
        open_lab(page, site, "http", slug="long")
        page.locator("#quick-check-title").scroll_into_view_if_needed()
        score = page.locator("#quiz-score")
        expect(score).to_have_text("0 / 3 right first time")
        for n, qid in enumerate(("constructor", "sum"), start=1):
            q = page.locator(f"#quiz-{qid}")
            q.get_by_label("Exactly 1").click()
            check(q)
            expect(q.locator(".quiz-feedback[role=status]")).to_have_text("Correct!")
            expect(score).to_have_text(f"{n} / 3 right first time")
        page.wait_for_load_state("networkidle")  # nothing in flight when the page goes
        page.reload()  # a second visit: the stored answers come back as first answers
        expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
        page.locator("#quick-check-title").scroll_into_view_if_needed()
        expect(score).to_have_text("2 / 3 right first time")
        expect(page.locator("#quiz-constructor .quiz-feedback[role=status]")).to_have_text("Correct!")
    finally:
        page.close()  # before the server goes: the page may still be fetching what it loads later
        site.server.shutdown()
        site.server.server_close()


def test_the_head_description_is_whole_on_a_laptop_and_a_line_with_more_on_a_phone(browser, watch, shipped):
    """At 1280 px every head's description (designed and learned) reads in full with no "more" to
    press; at 375 px it is one line with "more" (whole, the syntax head's takes ten lines there and
    pushes the sentence off the first screen), and "more" shows all of it."""
    for width, height in ((1280, 800), (375, 812)):
        ctx = _watched_context(browser, watch, width, height)
        page = ctx.new_page()
        open_lab(page, shipped, "http")
        expect(page.locator('#sl-head option[value="L0H0"]')).to_have_count(1)  # the learned heads come once idle
        heads = head_select(page).locator("option").evaluate_all("os => os.map(o => o.value)")
        designed = [h for h in heads if not re.fullmatch(r"L\d+H\d+", h)]
        learned = [h for h in heads if re.fullmatch(r"L\d+H\d+", h)][:3]
        assert designed and learned, heads
        for head in designed + learned:
            head_select(page).select_option(head)
            expect(page.locator("#spotlight")).to_have_attribute("data-ready", "true")
            desc, more = page.locator("#sl-head-desc"), page.locator("#sl-more")
            expect(desc).not_to_be_empty()
            measure = """d => { const s = getComputedStyle(d);
                return { clip: s.webkitLineClamp, shown: d.clientHeight, whole: d.scrollHeight,
                         lines: Math.round(d.getBoundingClientRect().height / parseFloat(s.lineHeight)) }; }"""
            box = desc.evaluate(measure)
            if width > 600:
                assert box["clip"] == "none" and box["whole"] <= box["shown"] + 1, (head, box)
                assert 1 <= box["lines"] <= 5, (head, box)
                expect(more).to_be_hidden()
            else:
                assert box["lines"] == 1, (head, box)
                if box["whole"] > box["shown"] + 1:
                    expect(more).to_be_visible()
                    more.click()
                    opened = desc.evaluate(measure)
                    assert opened["clip"] == "none" and opened["lines"] > 1, (head, opened)
                    more.click()
        ctx.close()
    assert not watch.problems, watch.problems
