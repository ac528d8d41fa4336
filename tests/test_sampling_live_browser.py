"""Lab 08's "Your prompt" in a real Chromium, on the shipped site: SmolLM2 run in the page on a
prompt the test types, from file:// and over http under the CSP. The model (130 MB of scripts) is
loaded once per address scheme for the whole module: a module-scoped page that every test reuses.

* the first visit loads none of it (only the offer is in the page), nor the dial's acts;
* "Next token" lists the model's top tokens within 0.5 points of transformers' GGUF-loaded model
  (marked ``reference``);
* "Generate" with a fixed seed gives the same text twice, and the tokens
  generator/models/sampling.py draws on NumPy's logits with the same settings;
* axe-core finds nothing with the live view open, light and dark; screenshots at both sizes.
"""

from __future__ import annotations

import re

import pytest
from conftest import gzip_sizes, lab_data, reference
from llama_fixtures import smollm2_gguf
from test_browser import (  # noqa: F401 — fixtures shared with the other browser tests
    ARTIFACTS, Watch, _watched_context, axe, axe_clean, context, everything_in, page, settle, shipped, sites, watch,
)

pytestmark = pytest.mark.browser
LAB = "labs/sampling/"
FIRST_VISIT_GZIP = 28_241  # bytes: lab 08's first visit before it sampled the real model; the model must not add to it
PROMPT = "Bees turn the nectar of flowers into"  # no numeral: transformers' GGUF tokenizer splits those otherwise

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _open(page, shipped, where="http"):
    page.goto(shipped.url(where, LAB))
    expect(page.locator("#sampling")).to_have_attribute("data-ready", "true")


@pytest.fixture(scope="module", params=["http", "file"])
def live(request, browser, shipped):
    """A page of lab 08 with the model loaded and PROMPT typed into "Your prompt", for the module."""
    where = request.param
    watch = Watch(shipped.prefixes())
    ctx = _watched_context(browser, watch)
    page = ctx.new_page()
    page.set_default_timeout(5_000)
    _open(page, shipped, where)
    page.get_by_role("button", name=re.compile(r"^Load the model \(\d+ MB\)$")).click()
    expect(page.get_by_label("Your prompt")).to_be_visible(timeout=600_000)
    page.get_by_label("Your prompt").press_sequentially(PROMPT)  # each keystroke runs the prompt so far
    expect(page.locator("#sa-own-next")).to_have_attribute("data-ready", "true", timeout=120_000)
    page.where = where
    yield page
    ctx.close()
    assert not watch.problems, watch.problems


def _listed(page) -> list[tuple[int, float, str]]:
    return page.locator("#sa-own-next li").evaluate_all(
        "items => items.map(li => [+li.dataset.tokenId, +li.dataset.prob, li.querySelector('.sa-own-pct').textContent])")


def test_the_first_visit_loads_nothing_of_the_live_part(page, shipped):
    """Only the offer: no runtime, no weights, not even the live part's own code, nor the dial's
    acts (static/later/dial.js and .css, loaded when the learner reaches for the dial), and the page
    weighs no more than before it sampled the real model (every response gzipped alone, added up)."""
    sizes = gzip_sizes(page)
    _open(page, shipped)
    page.wait_for_load_state("networkidle")
    assert not [u for u in sizes if re.search(r"sampling-(live|dial)|/assets/runtime/", u)], sorted(sizes)
    assert not page.evaluate("!!(window.Labs.runtime || window.Labs.code.samplingLive)")
    expect(page.get_by_role("button", name=re.compile(r"^Load the model \((\d+) MB\)$"))).to_be_visible()
    html = (shipped.folder / LAB / "index.html").read_text(encoding="utf-8")
    mb = round(lab_data(html)["live"]["download_bytes"] / 1e6)
    expect(page.locator("#sa-own-load")).to_have_text(f"Load the model ({mb} MB)")
    expect(page.locator("#sa-own-license")).to_have_attribute("href", re.compile(r"model-license\.\w+\.txt$"))
    assert (shipped.folder / LAB / page.locator("#sa-own-license").get_attribute("href")).is_file()
    total = sum(sizes.values())
    print(f"lab 08 first visit: {len(sizes)} responses, {total:,} bytes gzipped")
    assert total <= FIRST_VISIT_GZIP, sorted(sizes.items(), key=lambda kv: -kv[1])


@pytest.fixture(scope="module")
def transformers_next():
    """PROMPT's token ids by transformers' tokenizer, and its next-token probabilities by
    transformers' GGUF-loaded SmolLM2 in float32: computed once for both address schemes."""
    torch = reference("torch")
    transformers = reference("transformers")
    reference("accelerate")
    path = smollm2_gguf()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    model = transformers.AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
    with torch.no_grad():
        return ids, torch.softmax(model(torch.tensor([ids])).logits[0, -1].double(), -1).numpy()


@pytest.mark.reference
def test_your_prompt_lists_the_models_top_tokens_within_half_a_point_of_transformers(live, transformers_next):
    ids, probs = transformers_next
    assert live.evaluate("Labs.test.samplingLive.ids()") == ids
    listed = _listed(live)
    want = probs.argsort()[::-1][:10].tolist()
    assert [j for j, _, _ in listed] == want
    gap = max(abs(p - probs[j]) for j, p, _ in listed)
    shown = max(abs(float(text.rstrip("%")) - 100 * probs[j]) for j, _, text in listed)
    print(f"{live.where}: top token {listed[0]}, largest gap to transformers {100 * gap:.4f} points "
          f"(data-prob), {shown:.3f} points (as shown)")
    assert gap < 0.005 and shown < 0.5


def test_the_dial_applies_to_your_prompt(live):
    """T, top-k and top-p act on the typed prompt's list as they do on the authored prompts; a
    screen reader hears the top three once the typing stops."""
    at_one = _listed(live)
    token = live.locator("#sa-own-next li .sa-own-tok").first.inner_text()
    expect(live.locator("#sa-live")).to_have_text(re.compile(rf"^Next token: {re.escape(token)} {at_one[0][2]}, .+, .+\.$"))
    live.locator("#sa-topk").select_option("3")
    expect(live.locator("#sa-own-next li")).to_have_count(3)
    kept = _listed(live)
    assert abs(sum(p for _, p, _ in kept) - 1) < 1e-9
    assert [j for j, _, _ in kept] == [j for j, _, _ in at_one[:3]]
    live.locator("#sa-topk").select_option("0")
    live.locator("#sa-temp").fill("0")  # the grid's lowest temperature: sharper
    expect(live.locator("#sa-own-cut")).to_contain_text("T = 0.1")
    assert _listed(live)[0][1] > at_one[0][1]
    live.locator("#sa-temp").fill("9")  # T = 1 again
    expect(live.locator("#sa-own-cut")).to_contain_text("T = 1:")


def test_generate_with_a_seed_gives_the_same_text_twice_and_pythons_draw(live):
    from generator.models import llama, sampling

    live.locator("#sa-temp").fill("6")  # T = 0.7
    live.locator("#sa-topk").select_option("50")
    live.locator("#sa-seed").fill("7")
    live.locator("#sa-seed").dispatch_event("change")
    live.locator("#sa-own-n").fill("12")
    state = live.evaluate("Labs.code.samplingDial.state()")
    assert (state["seed"], state["k"], state["T"]) == (7, 50, pytest.approx(0.7))
    runs = []
    for _ in range(2):
        live.get_by_role("button", name="Generate").click()
        expect(live.locator("#sa-own-steps")).to_have_attribute("data-done", "true", timeout=120_000)
        ids = [int(x) for x in live.locator("#sa-own-steps li").evaluate_all("ls => ls.map(li => li.dataset.tokenId)")]
        runs.append((ids, live.locator("#sa-own-steps").get_attribute("data-text")))
    assert runs[0] == runs[1] and len(runs[0][0]) >= 1
    expect(live.locator("#sa-own-text")).to_contain_text("seed 7: the same settings and seed give the same text")
    prompt = live.evaluate("Labs.test.samplingLive.ids()")
    model = llama.cached_model(smollm2_gguf())
    want = sampling.generate(model, prompt, 12, sampling.Settings(temperature=state["T"], top_k=50, top_p=100, seed=7))
    print(f"{live.where}: generated {runs[0][1]!r}")
    assert runs[0][0] == list(want.ids)
    shares = [float(x) for x in live.locator("#sa-own-steps li").evaluate_all("ls => ls.map(li => li.dataset.prob)")]
    assert max(abs(a - s.share) for a, s in zip(shares, want.steps)) < 1e-4


@pytest.mark.parametrize("live", ["http"], indirect=True)  # the page is the same from file://
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_violations_with_your_prompt_open(live, axe, scheme):
    live.emulate_media(color_scheme=scheme)
    everything_in(live)
    axe_clean(live, axe)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width,height", [(1280, 800), (375, 812)], ids=["desktop", "phone"])
@pytest.mark.parametrize("live", ["http"], indirect=True)
def test_your_prompt_screenshots_with_the_dial_in_view(live, width, height, scheme):
    live.set_viewport_size({"width": width, "height": height})
    live.emulate_media(color_scheme=scheme)
    live.locator("#sa-own-next").scroll_into_view_if_needed()
    settle(live)
    ARTIFACTS.mkdir(exist_ok=True)
    live.screenshot(path=str(ARTIFACTS / f"sampling-live-{width}x{height}-{scheme}.png"))
    overflow = live.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"scrolls sideways by {overflow}px"
    # With the model open the dial's controls stay at the top of the screen (sticky), so the
    # temperature dial and the list it acts on are on the screen together, and the list is not under them.
    for target in ("#sa-temp", "#sa-own-next li:first-child"):
        box = live.locator(target).bounding_box()
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= height, (target, box)
    controls = live.locator("#sa-controls").bounding_box()
    assert live.locator("#sa-own-next li:first-child").bounding_box()["y"] >= controls["y"] + controls["height"] - 1
    live.set_viewport_size({"width": 1280, "height": 800})


def test_cancel_stops_the_download_and_a_missing_file_is_said_plainly(page, shipped, watch):
    """Cancel during the download: the offer comes back and says nothing more is downloaded. A
    weight file the host does not serve: one plain sentence naming it, and the dial still works."""
    _open(page, shipped)
    load = page.get_by_role("button", name=re.compile(r"^Load the model"))
    load.click()
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#sa-own-status")).to_have_text("Cancelled. Nothing more is downloaded.", timeout=30_000)
    expect(load).to_be_visible()
    expect(page.locator("#sa-own-bar")).to_be_hidden()
    watch.allow("404|Failed to load resource")  # the browser logs the file it could not fetch
    page.route(re.compile(r"model-weights-03\.\w+\.js$"), lambda route: route.fulfill(status=404, body="gone"))
    load.click()
    expect(page.locator("#sa-own-status")).to_have_text(re.compile(
        r"^The model file model-weights-03\.\w+\.js could not be loaded: it is missing or unreadable\. "
        r"The prompts above still work\.$"), timeout=300_000)
    expect(load).to_be_visible()
    expect(page.get_by_label("Your prompt")).to_have_count(0)
    page.get_by_role("button", name="Sample the next word").click()
    expect(page.locator("#sa-history li")).to_have_count(1)
