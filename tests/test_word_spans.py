"""Where each word stands in the text (``wordpiece._word_spans`` and ``wordSpans`` in the runtime's
wordpiece.js): linear in the text, counted in the algorithm's own unit of work — code points
normalised — never timed.

A run of 20,000 letters once cost the build 56 s (every run from the cursor normalised again), in
a tokens claim or a ``pieces`` question as in the page. The hostile texts below are those and their
cousins (marks, emoji, CJK, dropped characters, final sigmas, many short words) at two lengths:
the step count stays under a small constant times the length, and doubling the text at most
doubles it. Python and JavaScript give the same spans on them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from generator.models.wordpiece import (EXACT_SEARCH_MAX_CHARS, WordPieceTokenizer, _word_spans, basic_tokenize,
                                        encode, load_tokenizer)
from generator.runtime.vocab import WORDPIECE_JS, tokenizer_data

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "content" / "models" / "all-minilm-l6-v2"
STEPS_PER_CODE_POINT = 4  # measured: 1 to 3 on these texts; the quadratic search was ~10,000 at 20,000

HOSTILE = {
    "one-long-word": lambda n: "a" * n,
    "two-letters": lambda n: "ab" * (n // 2),
    "marks": lambda n: "e" + "\u0301" * (n - 1),
    "emoji": lambda n: "😀" * n,
    "cjk": lambda n: "東" * n,
    "final-sigmas": lambda n: "ΑΣ " * (n // 3),
    "long-sigma-word": lambda n: "Σ" * n,
    "dropped-inside": lambda n: "a\u200b" * (n // 2),
    "short-words": lambda n: "x " * (n // 2),
    "decomposed-accents": lambda n: "cafe\u0301" * (n // 5),
    "mixed": lambda n: ("unhappiness😀東é! " * n)[:n],
}


@pytest.fixture(scope="module")
def tokenizers() -> dict[str, WordPieceTokenizer]:
    uncased = load_tokenizer(BUNDLE)
    return {"uncased": uncased, "cased": WordPieceTokenizer(vocab=uncased.vocab, lower_case=False)}


def _steps(text: str, tokenizer: WordPieceTokenizer) -> int:
    count = [0]
    _word_spans(text, basic_tokenize(text, tokenizer), tokenizer, count)
    return count[0]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("case", ["uncased", "cased"])
def test_the_alignment_is_linear_in_the_text(tokenizers, name, case):
    tokenizer = tokenizers[case]
    short, long = HOSTILE[name](10_000), HOSTILE[name](20_000)
    steps_short, steps_long = _steps(short, tokenizer), _steps(long, tokenizer)
    assert steps_long <= STEPS_PER_CODE_POINT * len(long), (name, steps_long)
    assert steps_long <= 2.2 * steps_short + 100, (name, steps_short, steps_long)


def test_the_step_count_would_catch_the_quadratic_search(tokenizers):
    """The counter measures what it claims: the exact run-by-run search, which the walk replaced
    for all but short words, costs ~len² / 2 on a long word."""
    from generator.models.wordpiece import _normalise_token, _spans_exact, clean_text
    import unicodedata

    count = [0]

    def norm(s: str) -> str:
        count[0] += len(s)
        return _normalise_token(unicodedata.normalize("NFC", clean_text(s)), tokenizers["uncased"])

    assert _spans_exact("a" * 400, "a" * 400, 0, norm) == 400
    assert count[0] > 400 * 399 / 2 > STEPS_PER_CODE_POINT * 400


@pytest.mark.parametrize("text, words", [
    ("Café didn't!", ["Café", "didn", "'", "t", "!"]),
    ("cafe\u0301 ok", ["cafe\u0301", "ok"]),
    ("ΟΔΟΣ ΟΔΟΣ", ["ΟΔΟΣ", "ΟΔΟΣ"]),  # the final sigma: the exact search places short words
    ("a\u200bb c", ["a\u200bb", "c"]),
], ids=["punctuation", "marks", "final-sigma", "dropped"])
def test_the_walk_places_words_as_the_exact_search_does(tokenizers, text, words):
    encoding = encode(text, tokenizers["uncased"])
    assert [text[s[0]:s[1]] for s in encoding.word_spans] == words


def test_a_long_word_the_walk_cannot_place_stays_unaligned(tokenizers):
    """Shown as the tokenizer's word; and the words after it too, since where it ends is unknown."""
    for word in ("Σ" * (EXACT_SEARCH_MAX_CHARS + 1), "ΟΔΟΣ"):  # lower-cased, the last sigma is final (ς)
        encoding = encode(f"{word} ok", tokenizers["uncased"])
        if len(word) > EXACT_SEARCH_MAX_CHARS:
            assert encoding.word_spans == (None, None)
            assert encoding.source_words == encoding.words
        else:
            assert encoding.word_spans == ((0, len(word)), (len(word) + 1, len(word) + 3))


NODE_SCRIPT = """
globalThis.self = globalThis;
%s
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const wp = Labs.runtime.WordPiece(input.data);
console.log(JSON.stringify(input.texts.map(text => {
  const count = { steps: 0 };
  const e = wp.encode(text, count);
  return { steps: count.steps, spans: e.wordSpans };
})));
"""


@pytest.mark.parametrize("case", ["uncased", "cased"])
def test_the_page_tokenizer_aligns_in_the_same_steps_and_spans(tokenizers, case):
    if shutil.which("node") is None:  # scripts/setup-tests installs it; CI must not skip this
        if os.environ.get("LABS_REQUIRE_REFERENCE") == "1":
            pytest.fail("LABS_REQUIRE_REFERENCE=1 but Node.js is not installed (scripts/setup-tests installs it)")
        pytest.skip("needs Node.js to run the page's tokenizer (scripts/setup-tests installs it)")
    tokenizer = tokenizers[case]
    texts = [make(n) for make in HOSTILE.values() for n in (10_000, 20_000)]
    texts += ["Café didn't!", "cafe\u0301 ok", "ΟΔΟΣ ΟΔΟΣ", "a\u200bb c", "  The   CAT ", "mixed中文"]
    script = NODE_SCRIPT % WORDPIECE_JS.read_text(encoding="utf-8")
    done = subprocess.run(["node", "-e", script], input=json.dumps({"data": tokenizer_data(tokenizer), "texts": texts}),
                          capture_output=True, text=True, check=True, timeout=300)
    for text, js in zip(texts, json.loads(done.stdout)):
        ours = encode(text, tokenizer)
        assert js["spans"] == [list(s) if s else None for s in ours.word_spans], text[:40]
        assert js["steps"] <= STEPS_PER_CODE_POINT * len(text) + 10, (text[:40], js["steps"])
