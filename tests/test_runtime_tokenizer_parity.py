"""The page's WordPiece tokenizer (generator/runtime/static/wordpiece.js) against the Python one
(generator/models/wordpiece.py) and transformers' classic Python ``BertTokenizer``.

2,400 seeded strings (:func:`generated`) — accents composed and combining, CJK, emoji, control
characters, words over and at 100 characters, digits, runs of punctuation, mixed scripts, every
kind of whitespace, code points unassigned in the build's Unicode, lone surrogates, capital
sigmas in every context, and the literal special tokens — go through the script in Chromium
(a few ``page.evaluate`` calls) with the real MiniLM vocabulary and through the Python:

* tokens, ids, word ids, words, source words and word spans are identical;
* tokens and ids (with [CLS] and [SEP]) equal transformers' ``BertTokenizer``, except where the
  text holds a literal special token such as ``[CLS]``: transformers reads it as the token, we
  as text (wordpiece.py's docstring), and the test replaces it by its pieces as text;
* the step functions the tokens lab shows (``steps``, ``search``) give the Python pipeline's
  intermediate results, prefix by prefix.

A tiny vocabulary (ids with a gap, pieces outside ASCII) and the tokenizer's switches (cased,
accents kept or stripped, CJK not split, a short word limit) run 500 strings each.
"""

from __future__ import annotations

import json
import random
import re
import string
import unicodedata
from pathlib import Path

import pytest
import rjsmin
from conftest import minilm_dir, reference
from test_runtime_tokenizer import tokenizer_page

from generator.models.wordpiece import (
    WordPieceTokenizer,
    _normalise_token,
    _split_on_punctuation,
    basic_tokenize,
    clean_text,
    encode,
    is_chinese_char,
    load_tokenizer,
    load_vocab,
    wordpiece,
)
from generator.runtime.vocab import WORDPIECE_JS

pytestmark = pytest.mark.browser

N_MINILM = 2400
N_OTHER = 500
SPECIAL_LITERALS = ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]"]
_SPECIAL_RE = re.compile("(" + "|".join(map(re.escape, SPECIAL_LITERALS)) + ")")

# ---- the strings ------------------------------------------------------------------------------

ACCENTED = "àáâãäåæçèéêëìíîïñòóôõöøùúûüýÿÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝœŒłŁđĐşŞğĞıİǅǆǈǄﬁﬀẞßĳŉǰ"
COMBINING = [chr(c) for c in range(0x300, 0x370)] + ["\u0483", "\u0591", "\u093c", "\u0e31", "\u1ab0", "\u1dc0",
                                                      "\u20d7", "\u302a", "\ufe20", "\U0001d165", "\U0001171e"]
EMOJI = ["😀", "👍🏽", "🇫🇷", "❤️", "👩‍👩‍👧‍👦", "1️⃣", "🏳️‍🌈", "✨", "🤖", "©️", "🫠", "🧑🏿‍🚀", "☺", "♥"]
CONTROL = [chr(c) for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, 0x80, 0x85, 0x9F]] + [
    "\u00ad", "\u061c", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2060",
    "\u2066", "\u2069", "\ufeff", "\ufff9", "\U000e0001", "\U000e0041", "\ufffd", "\U0001d173"]
WHITESPACE = [c for c in map(chr, range(0x3100)) if c.isspace() or unicodedata.category(c) in ("Zs", "Zl", "Zp")]
DIGITS = list(string.digits) + list("٠١٢٣٤٥٦٧٨٩०१२३४५６７８９０¹²³½¼Ⅻⅻ①⑩⓿𝟘𝟙")
PUNCTUATION = list(string.punctuation) + list("¿¡«»—–…“”‘’•·†‡‰′″‹›§¶※〈〉【】、。・「」﹏＿！？") + list(
    "€£¥₹©®™°±×÷≠≤≥∞√∑∫←→♪★☆")
SCRIPTS = ["ΣΟΦΟΣ", "σοφός", "ὈΔΥΣΣΕΎΣ", "Привет", "МИР", "مرحبا", "שָׁלוֹם", "नमस्ते", "สวัสดี", "ႠႡႢ", "ᲐᲑᲒ",
           "Բարեւ", "ᏣᎳᎩ", "ꭰꭱ", "İstanbul", "IŞIK", "STRASSE", "Straße", "KELVIN", "Å", "ǅemal", "ﬁnance",
           "Ωmega", "ʕaʕa", "ꞵꞴ", "Ⓐⓑ", "ΑΣ.", "ΑΣ'Α", "ΑΣ\u0301", "ΣΑ", "Σ", "ΑΣΑ", "aʕΣ", "1Σ", "ΑΣ\U0001171e",
           "ΑΣ\u00adΑ", "𐐀𐐨", "𞤀𞤢", "ⰀⰰⰯ", "ꟀꟁꟐ", "Ⴧ", "ǈ", "ᾈᾀ", "ﬃ", "Ǆǅǆ"]
CJK = "中文北京我爱天安门日本語漢字𠀀𠀁𪜀𫝀𫠝𬺰豈更丽"
OTHER_EAST_ASIAN = "한국어ひらがなカタカナｶﾀｶﾅＡＢＣａｂｃ"
UNASSIGNED = [0x0378, 0x0530, 0x1E5D0, 0x11F00, 0x2B739, 0x31350, 0x2EBF0, 0x1FAE9, 0x1F6DC, 0xE000, 0xF8FF,
              0xFFFE, 0xFFFF, 0x10FFFF, 0xEFFFF, 0x9FFFF]
SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d"]


def _vocab_word(rng: random.Random, pieces: list[str]) -> str:
    """A word made of real pieces, so that the pieces and ## continuations are exercised."""
    parts = [rng.choice(pieces).removeprefix("##") for _ in range(rng.randint(1, 3))]
    word = "".join(parts)
    return word.upper() if rng.random() < 0.15 else word.capitalize() if rng.random() < 0.2 else word


def _long_word(rng: random.Random) -> str:
    """Around the 100-character limit, counted in code points after accents are stripped."""
    n = rng.choice([98, 99, 100, 100, 101, 102, 150])
    kind = rng.randrange(4)
    if kind == 0:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))
    if kind == 1:  # combining accents: over 100 as written, not once stripped
        return "".join("e\u0301" for _ in range(n // 2 + rng.randint(0, 30)))
    if kind == 2:  # astral letters: one code point, two UTF-16 units each
        return "".join(rng.choice("𝐚𝐛𝐜𐐨😀") for _ in range(n))
    return ("supercalifragilisticexpialidocious" * 5)[:n]


SEGMENTS = {
    "vocab": lambda rng, pieces: _vocab_word(rng, pieces),
    "accents": lambda rng, pieces: "".join(rng.choice(ACCENTED + string.ascii_letters) for _ in range(rng.randint(1, 9))),
    "combining": lambda rng, pieces: "".join(
        (rng.choice(string.ascii_letters + "ΑΣαω") if rng.random() < 0.6 else "") + rng.choice(COMBINING)
        for _ in range(rng.randint(1, 5))),
    "cjk": lambda rng, pieces: "".join(rng.choice(CJK + OTHER_EAST_ASIAN) for _ in range(rng.randint(1, 6))),
    "emoji": lambda rng, pieces: "".join(rng.choice(EMOJI) for _ in range(rng.randint(1, 3))) + rng.choice(["", "ok"]),
    "control": lambda rng, pieces: rng.choice(string.ascii_lowercase) + rng.choice(CONTROL) + rng.choice(["", "x"]),
    "whitespace": lambda rng, pieces: "".join(rng.choice(WHITESPACE) for _ in range(rng.randint(1, 4))),
    "long": lambda rng, pieces: _long_word(rng),
    "digits": lambda rng, pieces: "".join(rng.choice(DIGITS) for _ in range(rng.randint(1, 8))),
    "punctuation": lambda rng, pieces: "".join(rng.choice(PUNCTUATION) for _ in range(rng.randint(1, 7))),
    "scripts": lambda rng, pieces: rng.choice(SCRIPTS),
    "unassigned": lambda rng, pieces: chr(rng.choice(UNASSIGNED)) + rng.choice(["", "a", "\u0301"]),
    "surrogate": lambda rng, pieces: rng.choice(SURROGATES) + rng.choice(["", "a", " "]),
    "any": lambda rng, pieces: "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(1, 4))),
    "special": lambda rng, pieces: rng.choice(SPECIAL_LITERALS) + rng.choice(["", "x", "."]),
}
WEIGHTS = {"vocab": 30, "accents": 6, "combining": 5, "cjk": 5, "emoji": 4, "control": 4, "whitespace": 5, "long": 2,
           "digits": 5, "punctuation": 6, "scripts": 5, "unassigned": 2, "surrogate": 2, "any": 3, "special": 0.4}
SEPARATORS = [" "] * 12 + ["", "", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2028"]


def as_javascript_sees_it(text: str) -> str:
    """The string a page holds for ``text``: a high surrogate followed by a low one is one
    character there, so two such halves become that character here too."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def generated(n: int, seed: int, pieces: list[str]) -> list[tuple[str, frozenset[str]]]:
    """``n`` strings and the kinds of segment each holds; the same for the same seed."""
    rng = random.Random(seed)
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    out = []
    for _ in range(n):
        chosen = rng.choices(kinds, weights, k=rng.randint(1, 16))
        text = "".join(SEGMENTS[kind](rng, pieces) + rng.choice(SEPARATORS) for kind in chosen)
        out.append((as_javascript_sees_it(text.strip(" ") if rng.random() < 0.5 else text), frozenset(chosen)))
    return out


# ---- the page ---------------------------------------------------------------------------------

ENCODE = """([key, texts]) => {
  const wp = Labs.runtime.WordPiece(Labs.runtimeData[key]);
  return JSON.stringify(JSON.parse(texts).map(t => wp.encode(t)));  // JSON both ways: lone surrogates survive
}"""

STEPS = """([key, texts]) => {
  const wp = Labs.runtime.WordPiece(Labs.runtimeData[key]);
  return JSON.stringify(JSON.parse(texts).map(t => {
    const s = wp.steps(t);
    return { ...s, searches: s.words.map(w => wp.search(w)) };
  }));
}"""


def _tiny_vocab_file(folder: Path) -> Path:
    """Specials, ASCII and a few other letters with ## forms, some words, a repeated piece
    (so the ids have a gap), pieces outside ASCII and one with a space (which no word matches,
    but which changes how the page's data joins the pieces)."""
    singles = list(string.punctuation) + list(string.digits) + list(string.ascii_lowercase) + list("σςαωé中文")
    lines = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "the"] + singles + ["##" + c for c in singles]
             + ["un", "##aff", "##able", "play", "##ing", "cafe", "naive", "σοφος", "##ς", "istanbul", "strasse", "new york"])
    path = folder / "vocab.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def setups(tmp_path_factory) -> dict[str, tuple[WordPieceTokenizer, Path]]:
    """Each tokenizer the page gets, by its key, with the vocabulary file it was read from."""
    minilm_file = minilm_dir() / "vocab.txt"
    tiny_file = _tiny_vocab_file(tmp_path_factory.mktemp("tiny"))
    minilm, tiny = load_tokenizer(minilm_dir()).vocab, load_vocab(tiny_file)
    return {
        "minilm": (load_tokenizer(minilm_dir()), minilm_file),
        "tiny": (WordPieceTokenizer(vocab=tiny), tiny_file),
        "cased": (WordPieceTokenizer(vocab=minilm, lower_case=False), minilm_file),
        "cased-stripped": (WordPieceTokenizer(vocab=minilm, lower_case=False, strip_accents=True), minilm_file),
        "lower-unstripped": (WordPieceTokenizer(vocab=minilm, strip_accents=False), minilm_file),
        "no-cjk-short": (WordPieceTokenizer(vocab=tiny, tokenize_chinese_chars=False, max_input_chars_per_word=6),
                         tiny_file),
    }


@pytest.fixture(scope="module")
def tokenizers(setups) -> dict[str, WordPieceTokenizer]:
    return {key: tokenizer for key, (tokenizer, _) in setups.items()}


@pytest.fixture(scope="module")
def js_page(browser, tokenizers):
    code = rjsmin.jsmin(WORDPIECE_JS.read_text(encoding="utf-8"))  # minified, as a bundle may ship it
    yield from tokenizer_page(browser, code, tokenizers)


def run(page, script: str, key: str, texts: list[str]) -> list[dict]:
    return json.loads(page.evaluate(script, [key, json.dumps(texts)]))


def utf16_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-16-le", "surrogatepass")) // 2


def assert_same_encoding(js: dict, text: str, tokenizer: WordPieceTokenizer) -> None:
    ours = encode(text, tokenizer)
    where = f"{text!r}"
    assert js["tokens"] == list(ours.tokens), where
    assert js["ids"] == list(ours.ids), where
    assert js["wordIds"] == list(ours.word_ids), where
    assert js["words"] == list(ours.words), where
    assert js["sourceWords"] == list(ours.source_words), where
    assert [tuple(s) if s else None for s in js["wordSpans"]] == list(ours.word_spans), where
    assert js["wordRanges"] == [[utf16_offset(text, s[0]), utf16_offset(text, s[1])] if s else None
                                for s in ours.word_spans], where


# ---- against the Python tokenizer and transformers -------------------------------------------------


@pytest.fixture(scope="module")
def minilm_cases(tokenizers) -> list[tuple[str, frozenset[str]]]:
    pieces = sorted(p for p in tokenizers["minilm"].vocab if not p.startswith("["))
    return generated(N_MINILM, seed=22, pieces=pieces)


def test_the_generated_strings_cover_every_kind(minilm_cases):
    texts = [t for t, _ in minilm_cases]
    counts = {kind: sum(kind in kinds for _, kinds in minilm_cases) for kind in SEGMENTS}
    assert min(counts.values()) >= 30, counts
    long_words = sum(any(len(w) > 100 for w in basic_tokenize(t, WordPieceTokenizer(vocab={}))) for t in texts)
    assert long_words >= 30 and sum(any(len(w) == 100 for w in t.split()) for t in texts) >= 5
    assert sum(any(0xD800 <= ord(c) <= 0xDFFF for c in t) for t in texts) >= 30  # lone surrogates reach the page
    assert sum(any(unicodedata.category(c) == "Cn" for c in t) for t in texts) >= 100
    assert len(set(texts)) >= 0.99 * len(texts)


def test_javascript_encodes_as_python_and_transformers_on_minilm(js_page, setups, minilm_cases):
    tokenizer, vocab_file = setups["minilm"]
    texts = [t for t, _ in minilm_cases]
    results = [r for i in range(0, len(texts), 800) for r in run(js_page, ENCODE, "minilm", texts[i:i + 800])]
    for text, js in zip(texts, results, strict=True):
        assert_same_encoding(js, text, tokenizer)
    compared, accounted = _against_transformers(texts, results, vocab_file, tokenizer)
    assert compared + accounted == len(texts) and compared >= 2000 and accounted >= 10
    print(f"MiniLM: {len(texts)} strings equal in JS and Python; {compared} equal transformers' BertTokenizer "
          f"as they are, {accounted} once their literal special tokens are read as text")


OTHER_SEEDS = {"tiny": 1, "cased": 2, "cased-stripped": 3, "lower-unstripped": 4, "no-cjk-short": 5}


@pytest.mark.parametrize("key", list(OTHER_SEEDS))
def test_javascript_encodes_as_python_and_transformers_with_other_vocabularies_and_switches(js_page, setups, key):
    tokenizer, vocab_file = setups[key]
    pieces = sorted(p for p in tokenizer.vocab if not p.startswith("["))
    texts = [t for t, _ in generated(N_OTHER, seed=OTHER_SEEDS[key], pieces=pieces)]
    results = run(js_page, ENCODE, key, texts)
    for text, js in zip(texts, results, strict=True):
        assert_same_encoding(js, text, tokenizer)
    compared, accounted = _against_transformers(texts, results, vocab_file, tokenizer)
    assert compared >= 0.9 * len(texts)
    print(f"{key}: {len(texts)} strings equal in JS and Python; {compared} + {accounted} equal BertTokenizer")


def _against_transformers(texts: list[str], results: list[dict], vocab_file: Path,
                          tokenizer: WordPieceTokenizer) -> tuple[int, int]:
    """Compare each JS encoding with the classic Python BertTokenizer set up with the same
    switches; return how many matched as they are, and how many once each literal special token
    in transformers' output is replaced by the pieces our tokenizer gives that text."""
    reference("transformers")
    try:
        from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy as Slow
    except ImportError:  # transformers 4: BertTokenizer is the Python one
        from transformers import BertTokenizer as Slow
    slow = Slow(str(vocab_file), do_lower_case=tokenizer.lower_case, strip_accents=tokenizer.strip_accents,
                tokenize_chinese_chars=tokenizer.tokenize_chinese_chars)
    slow.wordpiece_tokenizer.max_input_chars_per_word = tokenizer.max_input_chars_per_word
    slow.model_max_length = 10**9  # no warning for long strings: nothing is truncated unless asked
    as_text = {s: list(encode(s, tokenizer).tokens[1:-1]) for s in SPECIAL_LITERALS}
    compared = accounted = 0
    for text, js in zip(texts, results, strict=True):
        ids = slow(text)["input_ids"]
        tokens = slow.convert_ids_to_tokens(ids)
        if not any(s in text for s in SPECIAL_LITERALS):
            assert js["tokens"] == tokens, text
            assert js["ids"] == ids, text
            compared += 1
            continue
        # transformers cuts the text at each literal special token and tokenizes the parts
        # between on their own; "[" and "]" are punctuation, so for us too a literal is words
        # of its own, and only its pieces differ
        parts = _SPECIAL_RE.split(text)
        assert tokens[1:-1] == [t for p in parts for t in ([p] if p in as_text else slow.tokenize(p))], text
        assert js["tokens"][1:-1] == [t for p in parts for t in (as_text[p] if p in as_text else slow.tokenize(p))], text
        assert js["ids"] == [tokenizer.vocab[t] for t in js["tokens"]], text
        accounted += 1
    return compared, accounted


# ---- the steps the tokens lab shows -----------------------------------------------------------


def _tries(word: str, tokenizer: WordPieceTokenizer) -> list[dict]:
    """wordpiece.py's greedy loop, writing down each prefix it looks up."""
    tries: list[dict] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            tries.append({"start": start, "end": end, "piece": piece, "found": piece in tokenizer.vocab})
            if tries[-1]["found"]:
                start = end
                break
        else:
            break
    return tries


@pytest.mark.parametrize("key", ["minilm", "cased-stripped", "no-cjk-short"])
def test_the_steps_are_the_python_pipelines(js_page, tokenizers, minilm_cases, key):
    tokenizer = tokenizers[key]
    texts = [t for t, _ in minilm_cases[:800]]
    for text, js in zip(texts, run(js_page, STEPS, key, texts), strict=True):
        cleaned = clean_text(text)
        spaced = "".join(f" {c} " if tokenizer.tokenize_chinese_chars and is_chinese_char(c) else c for c in cleaned)
        nfc = unicodedata.normalize("NFC", spaced)
        chunks = nfc.split()
        normalised = [_normalise_token(c, tokenizer) for c in chunks]
        split = [_split_on_punctuation(n) for n in normalised]
        words = basic_tokenize(text, tokenizer)
        assert " ".join(w for s in split for w in s).split() == words  # the steps make the words
        expected = {"text": text, "cleaned": cleaned, "spaced": spaced, "nfc": nfc, "chunks": chunks,
                    "lowered": [c.lower() if tokenizer.lower_case else c for c in chunks],
                    "normalised": normalised, "split": split, "words": words}
        assert {k: js[k] for k in expected} == expected, text
        for word, search in zip(words, js["searches"], strict=True):
            pieces = wordpiece(word, tokenizer)
            assert search["pieces"] == pieces, word
            too_long = len(word) > tokenizer.max_input_chars_per_word
            assert search["tooLong"] == too_long, word
            tries = [] if too_long else _tries(word, tokenizer)
            assert search["tries"] == tries, word
            assert search["unknown"] == (not too_long and not tries[-1]["found"]), word
            if not (too_long or search["unknown"]):
                assert [t["piece"] for t in tries if t["found"]] == pieces, word
