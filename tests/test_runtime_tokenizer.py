"""The page's tokenizer, character by character: the Unicode tables vocab.py writes, the script
that registers them with the vocabulary, and the tokenizer loading under the site's CSP.

* Every code point (all 1,114,112): what cleaning does to it and whether it is a mark, in
  Chromium against Python. Every code point cleaning keeps (about 145,000): the character
  classes, Python's ``str.lower`` alone and around a capital sigma, NFC and NFD alone and beside
  combining marks, and the whole normalisation of a word. The NFC/NFD cases are the browser's
  own ``normalize()``: they show that Chromium's normal forms agree with the build's Python on
  everything the tokenizer lets through.
* The vocabulary round-trips, id by id; the data script is one classic script, safe to embed.
* From file:// and over http, under the site's Content-Security-Policy, the script files tokenize.

The generated-string parity with the Python tokenizer and transformers is
test_runtime_tokenizer_parity.py.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import threading
import unicodedata
from pathlib import Path

import pytest
from conftest import minilm_dir

from generator.models.wordpiece import (
    WordPieceTokenizer,
    _normalise_token,
    clean_text,
    encode,
    is_chinese_char,
    is_punctuation,
    is_whitespace,
    load_tokenizer,
)
from generator.runtime.vocab import DATA_FORMAT, WORDPIECE_JS, tokenizer_data, vocab_script
from generator.serve.statichost import StaticHostHandler

CSP = "default-src 'self'; script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'self'"
SITE_CSP = CSP + "; frame-ancestors 'none'"  # frame-ancestors is for headers only: a <meta> ignores it with a warning
SCRIPT_PREFIX = "(function(L){(L.runtimeData=L.runtimeData||{})["


@pytest.fixture(scope="module")
def minilm() -> WordPieceTokenizer:
    return load_tokenizer(minilm_dir())


def tokenizer_page(browser, code: str, tokenizers: dict[str, WordPieceTokenizer]):
    """A blank page with the tokenizer ``code`` and each tokenizer's data under its key; fails
    at the end if the page logged an error or threw."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content("<!doctype html><title>tokenizer</title>")
    page.add_script_tag(content=code)
    for key, tokenizer in tokenizers.items():
        page.add_script_tag(content=vocab_script(tokenizer, key).decode())
    yield page
    page.close()
    assert not errors, errors


@pytest.fixture(scope="module")
def js_page(browser, minilm):
    yield from tokenizer_page(browser, WORDPIECE_JS.read_text(encoding="utf-8"), {"minilm": minilm})


# ---- the data script ---------------------------------------------------------------------------------


def _data(script: bytes) -> tuple[str, dict]:
    text = script.decode()
    assert text.startswith(SCRIPT_PREFIX) and text.endswith(";})(self.Labs=self.Labs||{});\n")
    key, _, rest = text[len(SCRIPT_PREFIX):].partition("]=")
    return json.loads(key), json.loads(rest[: -len(";})(self.Labs=self.Labs||{});\n")])


def test_the_script_holds_the_vocabulary_switches_and_tables(minilm):
    script = vocab_script(minilm, "minilm")
    key, data = _data(script)
    assert key == "minilm" and data == json.loads(json.dumps(tokenizer_data(minilm)))
    assert data["format"] == DATA_FORMAT and "ids" not in data  # MiniLM's ids are its line numbers
    assert data["separator"] == " " and data["pieces"].split(" ") == sorted(minilm.vocab, key=minilm.vocab.get)
    assert data["unicode"]["version"] == unicodedata.unidata_version
    assert b"<" not in script and b"\xe2\x80\xa8" not in script  # nothing can close a <script> or break a parser


def test_a_key_that_looks_like_markup_is_escaped():
    tokenizer = WordPieceTokenizer(vocab={"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "</script>": 3})
    script = vocab_script(tokenizer, "</script><script>alert(1)//")
    assert b"</script" not in script
    assert _data(script)[0] == "</script><script>alert(1)//"


def test_ids_that_are_not_line_numbers_travel_with_the_pieces():
    data = tokenizer_data(WordPieceTokenizer(vocab={"[UNK]": 0, "a": 2, "b": 5, "": 3}))
    assert data["pieces"].split(data["separator"]) == ["[UNK]", "a", "", "b"] and data["ids"] == [0, 2, 3, 5]


def test_pieces_with_spaces_are_joined_with_newlines():
    data = tokenizer_data(WordPieceTokenizer(vocab={"[UNK]": 0, "a b": 1, " ": 2}))
    assert data["separator"] == "\n" and data["pieces"].split("\n") == ["[UNK]", "a b", " "]


def test_a_piece_with_a_newline_is_refused():
    with pytest.raises(ValueError, match="newline"):
        tokenizer_data(WordPieceTokenizer(vocab={"a\nb": 0}))


# ---- every code point, in Chromium against Python ----------------------------------------------------

EVERY_CODE_POINT = """(key) => {
  const wp = Labs.runtime.WordPiece(Labs.runtimeData[key]);
  const cleaned = [], marks = [];
  for (let c = 0; c < 0x110000; c++) {
    const ch = String.fromCodePoint(c), out = wp.clean(ch);  // a surrogate becomes a lone one
    cleaned.push(out === "" ? "d" : out === ch ? "k" : out === " " ? "w" : "?");
    marks.push(wp.chars.isMark(c) ? "1" : "0");
  }
  return [cleaned.join(""), marks.join("")];
}"""

# Fields per kept code point, in this order (KEPT_FIELDS); "\\x01" and "\\x02" are dropped by
# cleaning, so they never occur in what is compared.
KEPT = """([key, codes]) => {
  const wp = Labs.runtime.WordPiece(Labs.runtimeData[key]), C = wp.chars, L = wp.lower;
  return codes.map(c => {
    const ch = String.fromCodePoint(c);
    const flags = [C.isWhitespace, C.isSpace, C.isChinese, C.isPunctuation, C.isNonspacing].map(f => (f(c) ? "1" : "0")).join("");
    return [flags, L(ch), L("A" + ch + "\\u03a3"), L("1" + ch + "\\u03a3"), L("A\\u03a3" + ch), L("A\\u03a3" + ch + "a"),
            ch.normalize("NFC"), ch.normalize("NFD"), (ch + "\\u0301").normalize("NFC"), (ch + "\\u0334").normalize("NFD"),
            ("\\u0301" + ch).normalize("NFD"), (ch + "\\u0345").normalize("NFD"), wp.normaliseToken(ch)].join("\\x01");
  }).join("\\x02");
}"""
KEPT_FIELDS = ["classes", "lower", "A?Σ", "1?Σ", "AΣ?", "AΣ?a", "NFC", "NFD", "NFC ?+acute", "NFD ?+U+0334",
               "NFD acute+?", "NFD ?+U+0345", "normalised"]


def _python_fields(char: str, tokenizer: WordPieceTokenizer) -> list[str]:
    nfc, nfd = (functools.partial(unicodedata.normalize, form) for form in ("NFC", "NFD"))
    flags = "".join("1" if f else "0" for f in (
        is_whitespace(char), char.isspace(), is_chinese_char(char), is_punctuation(char),
        unicodedata.category(char) == "Mn"))
    return [flags, char.lower(), ("A" + char + "Σ").lower(), ("1" + char + "Σ").lower(), ("AΣ" + char).lower(),
            ("AΣ" + char + "a").lower(), nfc(char), nfd(char), nfc(char + "\u0301"), nfd(char + "\u0334"),
            nfd("\u0301" + char), nfd(char + "\u0345"), _normalise_token(char, tokenizer)]


@pytest.mark.browser
def test_cleaning_and_marks_agree_on_every_code_point(js_page):
    cleaned, marks = js_page.evaluate(EVERY_CODE_POINT, "minilm")
    wrong_clean, wrong_mark = [], []
    for code in range(0x110000):
        char = chr(code)
        out = clean_text(char)
        expected = "d" if out == "" else "k" if out == char else "w" if out == " " else "?"
        if cleaned[code] != expected:
            wrong_clean.append(f"U+{code:04X}: {cleaned[code]} (Python {expected})")
        if (marks[code] == "1") != unicodedata.category(char).startswith("M"):
            wrong_mark.append(f"U+{code:04X}")
    assert not wrong_clean, wrong_clean[:20]
    assert not wrong_mark, wrong_mark[:20]
    assert cleaned.count("k") + cleaned.count("w") > 140_000


@pytest.mark.browser
def test_every_kept_code_point_is_classed_lowered_and_normalised_as_in_python(js_page, minilm):
    kept = [code for code in range(0x110000) if clean_text(chr(code)) == chr(code)]
    got = js_page.evaluate(KEPT, ["minilm", kept]).split("\x02")
    assert len(got) == len(kept)
    wrong: dict[str, list[str]] = {}
    for code, row in zip(kept, got):
        for field, js, py in zip(KEPT_FIELDS, row.split("\x01"), _python_fields(chr(code), minilm), strict=True):
            if js != py:
                wrong.setdefault(field, []).append(f"U+{code:04X} {unicodedata.name(chr(code), '?')}: {js!r} != {py!r}")
    assert not wrong, {field: (len(cases), cases[:5]) for field, cases in wrong.items()}


@pytest.mark.browser
def test_the_browsers_own_lower_case_is_not_what_python_writes_around_a_sigma(js_page):
    """Why lower-casing ships as tables: Chromium's own toLowerCase reads ʕ (U+0295) as uncased and
    U+1171E as not case-ignorable, so its final-sigma rule answers differently from the build's
    Python; ours gives Python's answer. (Were Chromium to agree one day, the first half still holds.)"""
    texts = ["Αʕ\u03a3", "Α\U0001171e\u03a3", "Α\u03a3\U0001171e", "ΑΣ\u0301", "Σ", "ΟΔΥΣΣΕΥΣ.", "ΑΣ'Α"]
    ours, browser = js_page.evaluate(
        "ts => [ts.map(t => Labs.runtime.WordPiece(Labs.runtimeData.minilm).lower(t)), ts.map(t => t.toLowerCase())]",
        texts)
    assert ours == [t.lower() for t in texts]
    print("Chromium's toLowerCase differs from Python on", [t for t, b in zip(texts, browser) if b != t.lower()])


# ---- the vocabulary and the tokenizer object ---------------------------------------------------------


@pytest.mark.browser
def test_every_piece_keeps_its_id(js_page, minilm):
    pieces = sorted(minilm.vocab, key=minilm.vocab.get)
    size, by_id, ids = js_page.evaluate("""n => {
      const wp = Labs.runtime.WordPiece(Labs.runtimeData.minilm);
      const byId = Array.from({ length: n }, (_, i) => wp.piece(i));
      return [wp.size, byId, byId.map(p => wp.id(p))];
    }""", len(pieces))
    assert size == len(pieces) == 30522
    assert by_id == pieces and ids == list(range(len(pieces)))


@pytest.mark.browser
def test_one_tokenizer_per_data_and_a_clear_error_for_other_data(js_page):
    same, error = js_page.evaluate("""() => {
      const data = Labs.runtimeData.minilm, same = Labs.runtime.WordPiece(data) === Labs.runtime.WordPiece(data);
      try { Labs.runtime.WordPiece({ ...data, format: 99 }); return [same, ""]; } catch (e) { return [same, e.message]; }
    }""")
    assert same is True
    assert error == f"tokenizer data of format 99, this tokenizer reads format {DATA_FORMAT}"


@pytest.mark.browser
@pytest.mark.parametrize(
    "text",
    ["Αʕ\u03a3 ὈΔΥΣΣΕΎΣ", "İstanbul KELVIN Å ǅ", "𝐚" * 100 + " " + "𝐚" * 101, "e\u0301" * 80, "x😀y 中文 ok",
     "  \u2028cafe\u0301\u0301 \x07a\u200bb "],
    ids=["sigma", "special-lower-case", "astral-100-limit", "marks-over-the-limit", "emoji-cjk", "spans"],
)
def test_spans_in_utf16_units_slice_the_words_out_of_the_text(js_page, minilm, text):
    js = js_page.evaluate("t => Labs.runtime.WordPiece(Labs.runtimeData.minilm).encode(t)", text)
    ours = encode(text, minilm)
    assert js["tokens"] == list(ours.tokens) and js["wordSpans"] == [list(s) if s else None for s in ours.word_spans]
    sliced = js_page.evaluate("([t, ranges]) => ranges.map(r => r && t.slice(r[0], r[1]))", [text, js["wordRanges"]])
    assert sliced == [text[s[0]:s[1]] if s else None for s in ours.word_spans]


# ---- the script files under the site's CSP -------------------------------------------------------------

PROBE_JS = """document.addEventListener("securitypolicyviolation", e => {
  document.body.dataset.violations = (document.body.dataset.violations || "") + e.violatedDirective + " ";
});
const wp = Labs.runtime.WordPiece(Labs.runtimeData.minilm);
document.getElementById("out").textContent = JSON.stringify(wp.encode(document.getElementById("text").value));
"""


def _page(folder: Path, text: str, minilm: WordPieceTokenizer, meta: bool) -> None:
    """The scripts as files beside a page that tokenizes ``text`` with them; the policy in a
    <meta> (from file://, where no header can carry it) or not (over http, in the header)."""
    (folder / "wordpiece.js").write_bytes(WORDPIECE_JS.read_bytes())
    (folder / "vocab.js").write_bytes(vocab_script(minilm, "minilm"))
    (folder / "probe.js").write_text(PROBE_JS, encoding="utf-8")
    (folder / "favicon.ico").write_bytes(b"")  # what Chromium asks a server for unbidden
    (folder / "index.html").write_text(f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
{f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' if meta else ""}
<title>tokenizer under the CSP</title></head>
<body><label>Text <input id="text" value="{html.escape(text)}"></label><output id="out"></output>
<script src="wordpiece.js"></script><script src="vocab.js"></script><script src="probe.js"></script>
<script>document.body.dataset.inline = "ran";</script>
</body></html>
""", encoding="utf-8")


class _Handler(StaticHostHandler):
    def end_headers(self):
        self.send_header("Content-Security-Policy", SITE_CSP)
        super().end_headers()


@pytest.mark.browser
@pytest.mark.parametrize("where", ["file", "http"])
def test_the_scripts_tokenize_under_the_sites_csp(browser, minilm, tmp_path, where):
    text = "Café naïve: I didn't see 北京 😀 — ΟΔΥΣΣΕΥΣ!"
    _page(tmp_path, text, minilm, meta=where == "file")
    server = None
    if where == "http":
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(tmp_path)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    else:
        url = (tmp_path / "index.html").as_uri()
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: m.type == "error" and not re.search(r"inline script", m.text) and problems.append(m.text))
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto(url)
        page.wait_for_function("document.getElementById('out').textContent !== ''")
        got = json.loads(page.locator("#out").text_content())
        # the policy was in force: the inline script was refused, and nothing else was
        assert page.evaluate("document.body.dataset.inline") is None
        assert page.evaluate("document.body.dataset.violations").split() == ["script-src-elem"]
    finally:
        page.close()
        if server is not None:
            server.shutdown()
            server.server_close()
    assert not problems, problems
    ours = encode(text, minilm)
    assert got["tokens"] == list(ours.tokens) and got["ids"] == list(ours.ids)
    assert got["sourceWords"] == list(ours.source_words)
