"""The sampling lab (lab 08) in a real Chromium: the dial, the cut-offs, the seeded sampler, its
quiz question, axe-core and both screen sizes — as lab 07 is tested in test_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import sampling_data
from test_browser import (  # noqa: F401 — fixtures shared with the attention lab's browser tests
    ARTIFACTS, WHERE, _watched_context, axe, axe_clean, context, everything_in, page, settle, shipped, sites, watch,
)

from generator.models import decoding

pytestmark = pytest.mark.browser
LAB = "labs/sampling/"

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _data(shipped) -> dict:
    html = (shipped.folder / LAB / "index.html").read_text(encoding="utf-8")
    return sampling_data(html, lambda name: (shipped.folder / LAB / name).read_text(encoding="utf-8"))


def _rows(context: dict, index: int) -> tuple[list[str], list[int]]:
    """The rows the dial shows for a context at grid point ``index``: its words and their parts; a
    context on the model lists its top tokens, then "all other N tokens" with the rest's parts."""
    words, parts = list(context["words"]), list(context["p"][index])
    if "ids" in context:
        words.append(f"all other {context['vocab'] - len(parts):,} tokens")
        parts.append(100_000 - sum(parts))
    return words, parts


def _cut(page) -> None:
    """Wait for what a cut loads (a model context's other tokens) to arrive."""
    page.evaluate("Labs.test.sampling.ready()")


def _open(page, shipped, where="http", hash=""):
    page.goto(shipped.url(where, LAB) + hash)
    expect(page.locator("#sampling")).to_have_attribute("data-ready", "true")


def _texts(page) -> dict[str, str]:
    """Word → the text beside its bar: "41%", "<1%", ">99%" or "cut", once what the dial loads
    (a context's parts, the other tokens') is in."""
    _cut(page)
    return dict(page.evaluate("""[...document.querySelectorAll("#sa-bars tbody tr")].map((tr) =>
        [tr.querySelector("th").innerText.trim(), tr.querySelector(".sa-pct").innerText.trim()])"""))


def _spec(context_id: str):
    """A context as the build reads it from content/ (its logits over the whole vocabulary)."""
    from generator.content import load_lab, load_site

    lab, problems = load_lab(load_site(Path(__file__).resolve().parents[1] / "content"), "sampling")
    assert lab is not None and not problems
    return lab.spec.context(context_id)


def _shown(page) -> dict[str, int]:
    """Word → the whole percentage its bar shows (cut words and "<1%" count as 0, ">99%" as 100)."""
    whole = {"cut": 0, "<1%": 0, ">99%": 100}
    return {word: whole[text] if text in whole else int(text.removesuffix("%")) for word, text in _texts(page).items()}


@pytest.mark.parametrize("where", WHERE)
def test_the_dial_shows_the_build_time_numbers_at_every_end(page, shipped, where):
    data = _data(shipped)
    context = next(c for c in data["contexts"] if c["id"] == data["default"]["context"])
    _open(page, shipped, where)
    dial = page.locator("#sa-temp")
    for key, index in (("Home", 0), ("End", len(data["temps"]) - 1)):
        dial.focus()
        page.keyboard.press(key)
        words, parts = _rows(context, index)
        expected = decoding.shares(parts)
        shown = _shown(page)
        assert sum(shown.values()) == 100
        assert [shown[w] for w in words] == [int(x) for x in expected], (key, data["temps"][index])
    # The coldest setting is near-greedy: the favourite takes (almost) everything.
    page.keyboard.press("Home")
    favourite = context["words"][max(range(len(context["words"])), key=lambda j: context["logits"][j])]
    assert _shown(page)[favourite] >= 90


def test_chances_that_round_to_0_or_100_but_are_not_read_less_than_1_or_more_than_99_percent(page, shipped):
    """"0%" beside a word that can still be drawn would say it cannot: such a word reads "<1%",
    and "0%" is left for a chance of 0 parts, which the sampler never draws; "100%" is left for a
    word no other word can be drawn beside, and reads ">99%" otherwise."""
    data = _data(shipped)
    _open(page, shipped)
    seen = {"<1%": 0, "0%": 0, ">99%": 0}
    for context in data["contexts"]:
        page.locator("#sa-context").select_option(context["id"])
        for index in range(len(data["temps"])):
            page.locator("#sa-temp").fill(str(index))
            expect(page.locator("#sa-temp-out")).to_have_text(f"T = {data['temps'][index]:g}")
            words, parts = _rows(context, index)
            whole = decoding.shares(parts)
            expected = {w: "<1%" if int(pct) == 0 and x > 0 else ">99%" if int(pct) == 100 and x < sum(parts)
                        else f"{int(pct)}%" for w, pct, x in zip(words, whole, parts, strict=True)}
            assert _texts(page) == expected, (context["id"], data["temps"][index])
            for text in expected.values():
                if text in seen:
                    seen[text] += 1
    assert all(seen.values()), f"the contexts should show each at some temperature: {seen}"


def test_top_k_cuts_the_rest_and_renormalises(page, shipped):
    _open(page, shipped)
    page.locator("#sa-topk").select_option("2")
    _cut(page)
    shown = _shown(page)
    kept = [w for w, pct in shown.items() if pct > 0]
    assert len(kept) == 2 and sum(shown.values()) == 100
    assert page.locator("#sa-bars tbody tr.is-cut").count() == len(shown) - 2


def test_sampling_draws_what_python_draws_with_the_same_seed(page, shipped):
    data = _data(shipped)
    context = next(c for c in data["contexts"] if c["id"] == data["default"]["context"])
    index = data["default"]["t"]  # the default temperature's index on the grid
    words, parts = _rows(context, index)  # a draw past the top tokens lands in the last row
    expected = decoding.draw(parts, data["seed"], 21).tolist()
    _open(page, shipped)
    page.get_by_role("button", name="Sample the next word").click()
    page.get_by_role("button", name="Sample 20 more").click()
    state = page.evaluate("Labs.test.sampling.state()")
    assert state["drawn"] == expected
    last = words[expected[-1]] if expected[-1] < len(context["words"]) else "(another token)"
    assert page.locator("#sa-history li").last.inner_text() == last
    # Start over replays the same words: the seed makes them reproducible.
    page.get_by_role("button", name="Start over").click()
    page.get_by_role("button", name="Sample the next word").click()
    assert page.evaluate("Labs.test.sampling.state()")["drawn"] == expected[:1]


def test_the_dial_question_grades_a_click_on_a_temperature(page, shipped):
    _open(page, shipped)
    page.locator("#quick-check-title").scroll_into_view_if_needed()  # the quiz comes in as it nears the screen
    question = page.locator('fieldset.quiz-q[data-type="dial"]').first
    wrong = question.locator(".quiz-choices [data-option]:not([data-correct])").first
    wrong.click()
    expect(question.locator(".quiz-feedback")).to_contain_text("Not quite")
    question.get_by_role("button", name="Try again").click()
    question.locator(".quiz-choices [data-option][data-correct]").first.click()
    expect(question.locator(".quiz-feedback")).to_have_text("Right on a later try — practice: the score counts first answers.")
    other = page.locator('fieldset.quiz-q[data-type="dial"]').nth(1)
    other.locator(".quiz-choices [data-option][data-correct]").first.click()
    expect(other.locator(".quiz-feedback")).to_have_text("Correct!")
    expect(page.locator("#quiz-score")).to_contain_text("1 / ")


def test_a_dial_questions_explanation_quotes_the_figure_the_dial_then_shows(page, shipped):
    """After a right answer, "T = 0.3 Mat gets 93%." is what the dial's bar for mat reads once
    "Set the dial to T = 0.3" is followed — one rounding rule in both places (not 93.30% beside 93%)."""
    _open(page, shipped)
    page.locator("#quick-check-title").scroll_into_view_if_needed()
    question = page.locator('fieldset.quiz-q[data-type="dial"]').first
    right = question.locator(".quiz-choices [data-option][data-correct]").first
    option = right.get_attribute("data-option")
    right.click()
    why = question.locator(f'[data-why-for="{option}"]')
    expect(why).to_be_visible()
    said = re.fullmatch(r"T = ([\d.]+) (?:Right\. )?(␣?\w+) gets ([<>]?[\d.]+%)\.", why.inner_text().strip())
    assert said, why.inner_text()
    question.get_by_role("link", name=f"Set the dial to T = {said[1]}").click()
    expect(page.locator("#sa-temp-out")).to_have_text(f"T = {said[1]}")
    texts = _texts(page)
    assert texts[next(w for w in texts if w.lower() == said[2].lower())] == said[3]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_on_the_sampling_lab(page, shipped, axe, scheme):
    page.emulate_media(color_scheme=scheme)
    _open(page, shipped)
    page.get_by_role("button", name="Sample 20 more").click()
    page.locator("#sa-topk").select_option("3")
    _cut(page)
    everything_in(page)
    axe_clean(page, axe)


@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
def test_sampling_screenshots_and_no_sideways_scrolling(browser, watch, shipped, width, height):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = _watched_context(browser, watch, width, height, device_scale_factor=1)
    try:
        page = ctx.new_page()
        _open(page, shipped)
        page.get_by_role("button", name="Sample 20 more").click()
        settle(page)
        name = f"sampling-{width}x{height}.png"
        page.locator("#try-it").screenshot(path=str(ARTIFACTS / name))
        assert (ARTIFACTS / name).stat().st_size > 5_000
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the sampling lab scrolls sideways by {overflow}px at {width}x{height}"
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


def test_top_p_cuts_the_whole_vocabulary_as_python_does(page, shipped):
    """On the model's distribution the nucleus runs far past the ten listed tokens: the page loads
    the other tokens' parts and keeps exactly as many tokens as the build's NumPy cut does."""
    data = _data(shipped)
    context = _spec(data["default"]["context"])
    _open(page, shipped)
    for index, p in ((data["default"]["t"], 90), (0, 50), (len(data["temps"]) - 1, 30)):
        page.locator("#sa-temp").fill(str(index))
        page.locator("#sa-topp").fill(str(p))
        _cut(page)
        parts = decoding.to_parts(decoding.softmax(context.logits, [data["temps"][index]])[0])
        kept = int(decoding.top_p_keep(parts, p).sum())
        expect(page.locator("#sa-summary")).to_contain_text(f"Top-p keeps {kept:,} of 49,152 tokens")


@pytest.mark.parametrize("where", WHERE)
def test_an_address_naming_another_context_and_temperature_opens_on_its_numbers(page, shipped, where):
    """The page embeds the parts of the row it opens on only; an address that names another row
    draws it once its parts (sampling-rows.js) are in, with the build's numbers."""
    data = _data(shipped)
    context = next(c for c in data["contexts"] if c["id"] != data["default"]["context"])
    index = next(i for i in range(len(data["temps"])) if i != data["default"]["t"])
    _open(page, shipped, where, f"#c={context['id']}&t={data['temps'][index]:g}")
    expect(page.locator("#sa-temp-out")).to_have_text(f"T = {data['temps'][index]:g}")
    words, parts = _rows(context, index)
    assert _shown(page) == dict(zip(words, [int(x) for x in decoding.shares(parts)], strict=True))
    expect(page.locator("#sa-summary")).to_have_text(f"All {context['vocab']:,} tokens stay in. The chances add up to 100%.")


def test_when_the_dials_acts_cannot_load_the_page_says_so_and_tries_again(browser, watch, shipped):
    """The dial's acts (sampling-dial.<hash>.js and .css) load when the learner first reaches for
    the dial: if they cannot, the dial says it cannot change, and the next act tries again."""
    watch.allow(r"Failed to load resource|net::ERR")
    ctx = _watched_context(browser, watch)
    try:
        page = ctx.new_page()
        blocked = re.compile(r".*/sampling-dial\.[0-9a-f]+\.(js|css)$")
        page.route(blocked, lambda route: route.abort())
        _open(page, shipped)
        page.get_by_role("button", name="Sample the next word").click()
        expect(page.locator("#sa-summary")).to_have_text("The dial's code did not load, so the dial cannot change.")
        assert page.locator("#sa-history li").count() == 0
        page.unroute(blocked)
        page.get_by_role("button", name="Sample the next word").click()
        expect(page.locator("#sa-history li")).to_have_count(1)
        assert page.evaluate("Labs.test.sampling.state()")["drawn"] == decoding.draw(
            _rows(*_default(shipped))[1], _data(shipped)["seed"], 1).tolist()
    finally:
        ctx.close()
    assert not watch.problems, watch.problems


def _default(shipped) -> tuple[dict, int]:
    data = _data(shipped)
    return next(c for c in data["contexts"] if c["id"] == data["default"]["context"]), data["default"]["t"]


@pytest.mark.parametrize("how", ["keyboard", "value"])
def test_settings_made_while_the_dials_code_is_on_its_way_all_hold_once_it_arrives(page, shipped, how):
    """The dial's acts (sampling-dial.<hash>.js) load when the learner first reaches for the dial,
    and what the learner does meanwhile waits for them. Held back until a context is chosen and the
    temperature and top-p are set (by the keyboard, or as a value set on the slider with its input
    event), the code must replay every setting as it was made: the context's act redraws the
    controls from the settings it knows, which must not undo the temperature set after it."""
    data = _data(shipped)
    chosen = next(c for c in data["contexts"] if c["id"] != data["default"]["context"])
    held = []
    page.route(re.compile(r".*/sampling-dial\.[0-9a-f]+\.js$"), lambda route: held.append(route))
    _open(page, shipped)
    page.locator("#sa-context").select_option(chosen["id"])
    if how == "keyboard":
        page.locator("#sa-temp").focus()
        page.keyboard.press("Home")
        page.locator("#sa-topp").focus()
        for _ in range(10):
            page.keyboard.press("ArrowLeft")
    else:
        page.locator("#sa-temp").fill("0")
        page.locator("#sa-topp").fill("90")
    for _ in range(200):  # the request is in flight as soon as the context's act asked for the code
        if held:
            break
        page.wait_for_timeout(25)
    assert held and not page.evaluate("!!Labs.code.samplingAct"), "the dial's code should still be on its way"
    held[0].continue_()
    T = data["temps"][0]
    expect(page.locator("#sa-temp-out")).to_have_text(f"T = {T:g}")
    expect(page.locator("#sa-topp-out")).to_have_text("p = 0.90")
    _cut(page)
    state = page.evaluate("Labs.test.sampling.state()")
    assert (state["context"], state["t"], state["p"]) == (chosen["id"], 0, 90)
    context = _spec(chosen["id"])
    parts = decoding.to_parts(decoding.softmax(context.logits, [T])[0])
    kept, n = int(decoding.top_p_keep(parts, 90).sum()), len(parts)
    unit = "tokens" if "ids" in chosen else "words"
    expect(page.locator("#sa-caption")).to_have_text(f"Next {unit[:-1]} after “{chosen['text']} …” at T = {T:g}, top-p 0.90")
    expect(page.locator("#sa-summary")).to_contain_text(f"Top-p keeps {kept:,} of {n:,} {unit}")
