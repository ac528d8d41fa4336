"""Every built page, read with BeautifulSoup: links, head, JSON blocks, and no inline code.

Two sites are built once per session with the real theme/: the shipped content/, and the
fixture content (tests/fixtures/content), which adds a second lab, an empty topic, and hostile
text (``</script><script>alert(1)</script>``) in a tagline, an FAQ and a widget sentence.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup
from conftest import spotlight_payload

from generator.build import build

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
HOSTILE = "</script><script>alert(1)</script>"
SITES = {"shipped": ROOT / "content", "fixture": FIXTURES / "content"}


class Site:
    def __init__(self, content: Path, folder: Path):
        self.content = content
        self.folder = folder
        self.config = yaml.safe_load((content / "site.yaml").read_text(encoding="utf-8"))
        self.base_url = self.config.get("base_url", "")
        self.files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
        self.pages = sorted(f for f in self.files if f.endswith(".html"))
        self._soups: dict[str, BeautifulSoup] = {}

    def html(self, page: str) -> str:
        return (self.folder / page).read_text(encoding="utf-8")

    def soup(self, page: str) -> BeautifulSoup:
        if page not in self._soups:
            self._soups[page] = BeautifulSoup(self.html(page), "html.parser")
        return self._soups[page]

    def labs(self, kind: str | None = None) -> list[str]:
        """The lab slugs, or those of one lab kind."""
        return sorted(p.name for p in (self.content / "labs").iterdir() if p.is_dir()
                      and (kind is None or yaml.safe_load((p / "lab.yaml").read_text(encoding="utf-8"))["kind"] == kind))

    def lab_yaml(self, slug: str, name: str):
        return yaml.safe_load((self.content / "labs" / slug / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module", params=sorted(SITES), ids=sorted(SITES))
def site(request, tmp_path_factory) -> Site:
    content = SITES[request.param]
    if request.param == "shipped":  # built once a session (conftest.py), and only read here
        return Site(content, request.getfixturevalue("shipped_site"))
    out = tmp_path_factory.mktemp(request.param) / "site"
    build(content, ROOT / "theme", out)
    return Site(content, out)


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory) -> Site:
    out = tmp_path_factory.mktemp("hostile") / "site"
    build(SITES["fixture"], ROOT / "theme", out)
    return Site(SITES["fixture"], out)


def urls(soup: BeautifulSoup) -> list[tuple[str, str]]:
    """(tag, url) for every href and src on the page."""
    return [(tag.name, tag[attr]) for attr in ("href", "src") for tag in soup.find_all(attrs={attr: True})]


def problems_on_every_page(site: Site, check) -> list[str]:
    found = []
    for page in site.pages:
        found.extend(f"{page}: {problem}" for problem in check(page, site.soup(page)))
    return found


# -- links ------------------------------------------------------------------------------------


def test_every_internal_link_and_anchor_resolves(site):
    root_path = urlsplit(site.base_url).path or "/"

    def check(page, soup):
        for tag, url in urls(soup):
            parts = urlsplit(url)
            if parts.scheme or parts.netloc:
                continue
            if page == "404.html" and parts.path.startswith("/"):
                assert parts.path.startswith(root_path), url
                target = parts.path[len(root_path):]
            else:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(parts.path))) \
                    if parts.path else page
                target = "" if target == "." else target
            if target == "" or parts.path.endswith("/"):
                target = posixpath.join(target, "index.html")
            if target not in site.files:
                yield f"<{tag}> {url} leads to {target}, which was not built"
            elif parts.fragment and "=" not in parts.fragment and target.endswith(".html"):
                if not site.soup(target).find(id=parts.fragment):
                    yield f"<{tag}> {url}: no id {parts.fragment!r} on {target}"

    assert problems_on_every_page(site, check) == []


def test_internal_urls_are_relative_except_on_the_404_page(site):
    def check(page, soup):
        for tag, url in urls(soup):
            if url.startswith("/") and page != "404.html":
                yield f"<{tag}> {url} is absolute"

    assert problems_on_every_page(site, check) == []


# -- head -------------------------------------------------------------------------------------------


def test_every_page_has_one_h1_a_title_a_language_and_a_description(site):
    def check(page, soup):
        if len(soup.find_all("h1")) != 1:
            yield f"{len(soup.find_all('h1'))} h1 elements"
        if not (soup.title and soup.title.get_text(strip=True)):
            yield "no title"
        if not (soup.html and soup.html.get("lang")):
            yield "no html[lang]"
        description = soup.find("meta", attrs={"name": "description"})
        if not (description and description.get("content", "").strip()):
            yield "no meta description"

    assert problems_on_every_page(site, check) == []


def test_canonical_and_open_graph(site):
    def check(page, soup):
        def meta(prop):
            tag = soup.find("meta", attrs={"property": prop})
            return tag.get("content") if tag else None

        for prop in ("og:title", "og:description", "og:type"):
            if not meta(prop):
                yield f"no {prop}"
        if page == "404.html":
            return
        # A lab's embed page (its widget alone, for other sites' frames) names the lab page.
        expected = site.base_url + page.removesuffix("index.html").removesuffix("embed.html")
        canonical = soup.find("link", rel="canonical")
        if (canonical["href"] if canonical else None) != expected:
            yield f"canonical is {canonical and canonical['href']!r}, expected {expected!r}"
        if meta("og:url") != expected:
            yield f"og:url is {meta('og:url')!r}, expected {expected!r}"

    assert site.base_url, "both sites are meant to declare a base_url"
    assert problems_on_every_page(site, check) == []


def test_every_page_has_valid_json_ld(site):
    def check(page, soup):
        blocks = soup.find_all("script", type="application/ld+json")
        if page.endswith("/embed.html"):  # the lab page it names as canonical carries the lab's
            if any(block.string for block in blocks):
                yield "JSON-LD on an embed page"
            return
        if not blocks:
            yield "no JSON-LD"
        for block in blocks:
            data = json.loads(block.string)
            if data.get("@context") != "https://schema.org" or not ("@type" in data or "@graph" in data):
                yield f"JSON-LD without @context/@type: {block.string[:80]}"
            for item in data.get("@graph", []):
                if "@type" not in item:
                    yield f"@graph item without @type: {item}"

    assert problems_on_every_page(site, check) == []


def graph(site: Site, slug: str) -> dict[str, dict]:
    block = site.soup(f"labs/{slug}/index.html").find("script", type="application/ld+json")
    return {item["@type"]: item for item in json.loads(block.string)["@graph"]}


def test_lab_json_ld_has_the_resource_and_the_quiz(site):
    for slug in site.labs():
        items = graph(site, slug)
        assert set(items) == {"LearningResource", "Quiz"}  # no FAQPage (render.lab_jsonld says why)
        assert items["LearningResource"]["url"] == f"{site.base_url}labs/{slug}/"
        quiz = site.lab_yaml(slug, "quiz.yaml")["questions"]
        parts = items["Quiz"]["hasPart"]
        assert [p["@type"] for p in parts] == ["Question"] * len(quiz)
        for part, question in zip(parts, quiz):
            options = question.get("options")
            n_options = len(options) if options else None
            if n_options:
                assert len(part["acceptedAnswer"]) + len(part["suggestedAnswer"]) == n_options
                assert len(part["acceptedAnswer"]) == sum(bool(o.get("correct")) for o in options)
            elif question["type"] == "word":  # the answer is one word
                assert [a["text"] for a in part["acceptedAnswer"]] == [question["answer"]]
            else:  # a lab kind's own type: some accepted answers, offered among the rest
                assert part["acceptedAnswer"] and all(a["text"] for a in part["acceptedAnswer"] + part["suggestedAnswer"])


def test_fixture_quiz_questions_are_the_quiz_yaml_prompts(fixture_site):
    parts = graph(fixture_site, "alpha")["Quiz"]["hasPart"]
    prompts = [q["prompt"] for q in fixture_site.lab_yaml("alpha", "quiz.yaml")["questions"]]
    assert [p["text"] for p in parts] == prompts
    assert [p["eduQuestionType"] for p in parts] == ["Multiple choice", "Checkbox", "Multiple choice"]


# -- data and scripts ----------------------------------------------------------------------------------


def test_spotlight_json_parses_and_every_row_of_percentages_sums_to_100(site):
    for slug in site.labs("attention"):
        block = site.soup(f"labs/{slug}/index.html").find("script", id="lab-data")
        assert block is not None and block.get("type") == "application/json"
        payload = spotlight_payload(site.folder, slug)
        rows = [(s["id"], head, key, row) for s in payload["sentences"] for head, data in s["heads"].items()
                for key in ("pct", "pct_unscaled") for row in data[key]]
        assert rows, "no percentages in the spotlight payload"
        bad = [(sid, head, key, row) for sid, head, key, row in rows
               if sum(row) != 100 or not all(isinstance(x, int) and x >= 0 for x in row)]
        assert bad == []


def test_no_inline_scripts_event_handlers_or_style_attributes(site):
    def check(page, soup):
        for script in soup.find_all("script"):
            kind = script.get("type", "")
            if script.get("src"):
                if script.string and script.string.strip():
                    yield "a script with both src and a body"
            elif kind not in ("application/json", "application/ld+json"):
                yield f"inline script of type {kind!r}"
        for tag in soup.find_all(True):
            for attr in tag.attrs:
                if attr.lower().startswith("on") or attr.lower() == "style":
                    yield f"<{tag.name} {attr}=…>"
        if soup.find("style"):
            yield "a <style> element"

    assert problems_on_every_page(site, check) == []


def test_assets_are_fingerprinted(site):
    css = [f for f in site.files if f.startswith("assets/site.") and f.endswith(".css")]
    js = [f for f in site.files if f.startswith("assets/site.") and f.endswith(".js")]
    assert len(css) == len(js) == 1
    assert re.fullmatch(r"assets/site\.[0-9a-f]{8}\.css", css[0]) and re.fullmatch(r"assets/site\.[0-9a-f]{8}\.js", js[0])
    index = site.soup("index.html")
    assert [link["href"] for link in index.find_all("link", rel="stylesheet") if not link.find_parent("noscript")] == [css[0]]
    assert [link["href"] for link in index.select("noscript link")] == ["assets/nojs.css"]  # only without JavaScript
    assert index.find("script", src=True)["src"] == js[0]


def test_lab_pages_keep_their_lower_parts_for_later_and_the_quiz_brings_its_script(site):
    """Below the gist a lab page's parts are <noscript data-later> (theme/static/js/15-later.js);
    the quiz's names its code, a file of its own that no other page loads."""
    quiz_js = [f for f in site.files if re.fullmatch(r"assets/later/quiz\.[0-9a-f]{8}\.js", f)]
    assert len(quiz_js) == 1
    shared = next(site.folder.glob("assets/site.*.js")).read_text(encoding="utf-8")
    assert "data-quiz-check" in (site.folder / quiz_js[0]).read_text(encoding="utf-8") and "data-quiz-check" not in shared
    for slug in site.labs():
        soup = site.soup(f"labs/{slug}/index.html")
        parts = soup.select("noscript[data-later]")
        assert {p.find_parent("section")["id"] for p in parts} >= {"quick-check", "faq"}, slug
        assert not soup.select("#gist noscript, #try-it > .wrap > noscript"), slug  # the first screen is all there
        quiz = soup.select_one("#quick-check noscript[data-later]")
        assert posixpath.normpath(posixpath.join(f"labs/{slug}", quiz["data-script"])) == quiz_js[0]
    for page in ("index.html", *[p for p in site.pages if p.startswith("topics/")]):
        assert not site.soup(page).select("noscript[data-later]"), page


# -- hostile text --------------------------------------------------------------------------------------------


def test_hostile_text_is_text_everywhere(fixture_site):
    for page in fixture_site.pages:
        assert "<script>alert(1)" not in fixture_site.html(page), page


def test_hostile_tagline_and_faq_are_shown_as_text(fixture_site):
    soup = fixture_site.soup("labs/alpha/index.html")
    text = soup.get_text(" ")
    assert f"A tagline with {HOSTILE} & an ampersand" in text
    assert f"Is {HOSTILE} shown as text?" in text
    assert soup.find("code", string=HOSTILE) is not None  # the FAQ answer's inline code
    ld = soup.find("script", type="application/ld+json").string
    assert "</script" not in ld
    # The JSON-LD (no FAQ in it now) is written as the lab data is, so hostile text in it stays inside
    from generator.webfiles import json_for_script

    assert "\\u003c/script" in json_for_script({"text": HOSTILE}) and "</script" not in json_for_script({"text": HOSTILE})


def test_hostile_widget_label_and_note_stay_inside_the_json(fixture_site):
    block = fixture_site.soup("labs/alpha/index.html").find("script", id="lab-data")
    raw = block.string
    assert "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)" in raw and "</script" not in raw
    sentence = json.loads(raw)["sentences"][0]
    assert sentence["label"] == f"The cat sat {HOSTILE}"
    assert sentence["note"] == f"A note with {HOSTILE} in it."


def test_only_the_first_sentence_s_numbers_are_in_the_page(site):
    for slug in site.labs("attention"):
        block = site.soup(f"labs/{slug}/index.html").find("script", id="lab-data")
        embedded = json.loads(block.string)
        default = embedded["default"]["sentence"]
        with_heads = [s["id"] for s in embedded["sentences"] if s["heads"] is not None]
        assert with_heads == [default]
        if len(embedded["sentences"]) > 1:
            assert re.fullmatch(r"sentences\.[0-9a-f]{8}\.js", embedded["lazy"]["src"])
            assert f"labs/{slug}/{embedded['lazy']['src']}" in site.files
            full = spotlight_payload(site.folder, slug)
            assert all(s["heads"] for s in full["sentences"])
