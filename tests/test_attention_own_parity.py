"""The page's JavaScript port of the designed model (static/later/own-model.js) against NumPy (teaching.py).

600 generated sentences — 1 to 40 words, random tags and aliases, lexicon words, repeated words,
punctuation, numbers; self, causal and cross — run through ``teaching.compute`` and, in one
``page.evaluate``, through the very script a lab page loads for "Your sentence"
(:func:`generator.kinds.attention.own.own_script`) in Chromium. Every weight (with and without
÷√d), every blend and every residual vector agrees within 1e-9, and the rounded percentages are
identical. Runs in a few seconds; needs Chromium like the other browser tests (tests/conftest.py).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from generator.kinds.attention import teaching
from generator.kinds.attention.realheads import largest_remainder_array
from generator.kinds.attention.own import own_script

pytestmark = pytest.mark.browser

N_SENTENCES = 600
LEXICON = sorted(teaching.LEXICON)
TAGS = list(teaching.ROLES) + list(teaching.TAG_ALIASES)

RUN = """([cases, heads]) => {
  const M = window.Labs.code.ownModel;
  return JSON.stringify(cases.map(c => {
    const q = M.parse(c.text, false), k = c.source === null ? null : M.parse(c.source, false);
    if (q.problems.length || k?.problems.length) return { problems: [...q.problems, ...(k?.problems || [])].map(p => p.message) };
    const rq = q.words.map(w => w.role), rk = k && k.words.map(w => w.role);
    const r = M.compute(rq, rk, c.kind, heads), [before, after] = M.residual(rq, r);
    const pct = id => r[id].weights.map((row, i) => M.percentages(row.map((w, j) => r[id].mask[i][j] ? w : 0), 100));
    return { tokens: q.words.map(w => w.text), roles: rq, keyRoles: rk, after, before,
      heads: Object.fromEntries(heads.map(id => [id, { w: r[id].weights, u: r[id].weights_unscaled, out: r[id].out, pct: pct(id) }])) };
  }));  // one string: Playwright serialises nested arrays slowly
}"""


def _word(rng: random.Random, seen: list[str]) -> str:
    pick = rng.random()
    if seen and pick < 0.15:
        return rng.choice(seen)  # a repeated word, tag and all
    if pick < 0.45:
        word = rng.choice(LEXICON)
        word = word.capitalize() if rng.random() < 0.2 else word
    elif pick < 0.55:
        word = rng.choice(["42", "3.14", "1,000", "7"])
    elif pick < 0.62:
        word = rng.choice([".", ",", "—", "!", "?", "…"])
    else:
        word = f"w{rng.randrange(30)}/{rng.choice(TAGS)}"
        if rng.random() < 0.1:
            word = rng.choice(["the", "that", "it"]) + "/" + rng.choice(TAGS)  # a tag overrides the lexicon
    if rng.random() < 0.12 and not word.startswith(tuple(".,—!?…")):
        word += rng.choice([".", ",", "!", "?", ")"])  # trailing punctuation is a word of its own
    if rng.random() < 0.05:
        word = "(" + word
    seen.append(word)
    return word


def _text(rng: random.Random, n: int) -> str:
    seen: list[str] = []
    return " ".join(_word(rng, seen) for _ in range(n))


def _cases() -> list[dict]:
    rng = random.Random(10)
    cases = []
    while len(cases) < N_SENTENCES:
        kind = ("self", "causal", "cross")[len(cases) % 3]
        text = _text(rng, rng.randint(1, 40))
        source = _text(rng, rng.randint(1, 40)) if kind == "cross" else None
        try:
            words = teaching.parse_sentence(text)
            keys = teaching.parse_sentence(source) if source is not None else None
        except teaching.TaggingError:
            continue  # over MAX_WORDS after splitting punctuation off: not a parity case
        cases.append({"text": text, "source": source, "kind": kind, "words": words, "keys": keys})
    return cases


@pytest.fixture(scope="module")
def js_page(browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content("<!doctype html><title>parity</title>")
    page.add_script_tag(content=own_script()[1].decode())
    yield page
    page.close()
    assert not errors, errors


def test_the_javascript_model_computes_what_numpy_computes(js_page):
    cases = _cases()
    heads = list(teaching.HEAD_IDS)
    results = json.loads(js_page.evaluate(RUN, [[{k: c[k] for k in ("text", "source", "kind")} for c in cases], heads]))
    lengths = {len(c["words"]) for c in cases}
    assert min(lengths) == 1 and max(lengths) >= 40 and len(cases) >= 500
    worst = 0.0
    for case, js in zip(cases, results):
        where = f"{case['kind']}: {case['text']!r}" + (f" <- {case['source']!r}" if case["source"] else "")
        assert "problems" not in js, (where, js.get("problems"))
        assert js["tokens"] == [w.text for w in case["words"]], where
        assert js["roles"] == [w.role for w in case["words"]], where
        if case["keys"] is not None:
            assert js["keyRoles"] == [w.role for w in case["keys"]], where
        numpy = teaching.compute(case["words"], case["keys"], kind=case["kind"], heads=heads)
        before, after = teaching.residual(case["words"], numpy)
        for hid in heads:
            r, got = numpy[hid], js["heads"][hid]
            for name, expected in (("w", r.weights), ("u", r.weights_unscaled), ("out", r.out)):
                diff = float(np.max(np.abs(np.asarray(got[name]) - expected)))
                worst = max(worst, diff)
                assert diff <= 1e-9, (where, hid, name, diff)
            pct = largest_remainder_array(np.where(r.mask, r.weights, 0.0), 100)
            assert got["pct"] == pct.tolist(), (where, hid)
        assert np.max(np.abs(np.asarray(js["after"]) - after)) <= 1e-9, where
        assert np.array_equal(np.asarray(js["before"]), before), where
    print(f"{len(cases)} sentences, worst difference {worst:.2e}")


def test_the_javascript_parser_reports_what_python_reports(js_page):
    texts = ["", "   ", "The dog sat", "the cat/noun", "the /NOUN", "cat/", "x/NOUNS", " ".join(["the"] * 61)]
    found = js_page.evaluate("ts => ts.map(t => window.Labs.code.ownModel.parse(t, false).problems.map(p => p.start))", texts)
    for text, starts in zip(texts, found):
        try:
            teaching.parse_sentence(text)
            expected = []
        except teaching.TaggingError as exc:
            expected = [p.offset for p in exc.problems]
        assert starts == expected, text
