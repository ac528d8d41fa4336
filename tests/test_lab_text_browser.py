"""The head finder's verdicts as a learner reads them in Chromium: each relation's sentence says what
the finder computed, and where the sign test could not decide, how weak it is at this size (the
fewest wins it would accept, from the finder's file). Shares the sites, the watched pages (a console
error fails a test) and the helpers of test_browser.py."""

from __future__ import annotations

import re

import pytest
from conftest import labs_data
from test_browser import LAB, context, head_select, open_lab, page, shipped, sites, watch  # noqa: F401 — shared fixtures

pytestmark = pytest.mark.browser

try:
    from playwright.sync_api import expect
except ImportError:  # pragma: no cover - the browser fixture reports it
    expect = None


def _finder(shipped) -> list[dict]:
    (script,) = (shipped.folder / LAB).glob("finder.*.js")
    return labs_data(script.read_text(encoding="utf-8"), "headFinder")


def _pairs(n: int) -> str:
    return "1 pair differs" if n == 1 else f"{n} pairs differ"


def test_the_finder_says_what_it_computed_and_how_weak_its_test_is(page, shipped):
    open_lab(page, shipped, "http")
    head_select(page).select_option("L0H0")  # a real head: the model view and its finder load
    reports = [f for f in _finder(shipped) if f["head"]]
    items = page.locator("#sl-finder > li")
    expect(items).to_have_count(len(reports))
    # Why the pattern view can name another head for the word before: it measures something else.
    intro = page.locator("#sl-model p.sl-hint", has_text="The pattern view can name another head for the same job")
    expect(intro).to_contain_text("whole rows agree best with a designed head’s")
    expect(intro).to_contain_text("strongest weight most often lands on the labelled word")
    weak_seen = 0
    for report, item in zip(reports, items.all()):
        text = " ".join(item.text_content().split())
        assert text.startswith(report["relation"] + " — "), text
        weak = [v for v in report["versus"] if v["p"] >= 0.05 and v["wins"] + v["losses"]]
        if report["beats_baseline"]:
            assert "Beats both rules on the held-out pairs." in text and "is weak" not in text
        elif weak:
            weak_seen += 1
            said = [f"against the {v['baseline']} rule " + (
                f"only {_pairs(v['wins'] + v['losses'])}, too few for any result to pass" if v["needed"] is None
                else f"it would need {v['needed']} wins of those {v['wins'] + v['losses']}") for v in weak]
            assert ("The sign test counts only the held-out pairs where the head and a rule disagree, so at this "
                    f"size it is weak: {'; '.join(said)}.") in text, text
        else:
            assert "is weak" not in text, text
    assert weak_seen, "no relation here leaves its sign test undecided; the weak-test sentence is untested"
    assert re.search(r"\d+% there", items.first.text_content())
