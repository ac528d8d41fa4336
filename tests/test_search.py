"""The site search's index (generator/search): what it holds, that the page's expansion of it is
lunr.js's own index of the same documents, and what it weighs.

The expansion (``Labs.code.searchIndex`` in theme/static/js/later/search.js) runs in Node with the
vendored lunr.js; lunr.js's own builder indexes the same texts there, and the two serialised
indexes must be equal field for field — and equal to what lunr.py serialises."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from lunr import __TARGET_JS_VERSION__

from generator.content import load_content
from generator.search.index import (FIELDS, INDEX_PATH, LUNR_VERSION, VENDOR, SearchDoc, build, compact_index, documents,
                                    encode, lunr_script, search_files, term_of, terms)

ROOT = Path(__file__).resolve().parent.parent
SEARCH_JS = ROOT / "theme" / "static" / "js" / "later" / "search.js"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "content"

NODE_SCRIPT = r"""
const fs = require("fs");
global.lunr = require(process.argv[2]);
global.window = { Labs: { util: { h() {} }, code: {}, data: {} } };
global.document = { querySelector: () => null };
eval(fs.readFileSync(process.argv[3], "utf8"));
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const mine = window.Labs.code.searchIndex(input.compact);
const theirs = lunr(function () {
  this.ref("id");
  for (const [name, boost] of input.fields) this.field(name, { boost });
  input.docs.forEach((d, i) => this.add({ id: String(i), t: d[0], b: d[1] }));
}).toJSON();
const loaded = lunr.Index.load(mine);  // throws if the index is not one lunr.js can read
const found = {};
for (const q of input.queries) found[q] = loaded.search(q).map(r => [r.ref, Math.round(r.score * 1e6) / 1e6]);
process.stdout.write(JSON.stringify({ mine, theirs, found }));
"""


def _node() -> str:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail("these tests need Node.js (Debian: apt-get install nodejs; scripts/setup-tests installs it)")
    return node


def _in_node(docs, compact, queries=()) -> dict:
    script = Path(__file__).resolve().parent / ".search-node.js"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    try:
        out = subprocess.run([_node(), str(script), str(VENDOR / f"lunr-{LUNR_VERSION}.min.js"), str(SEARCH_JS)],
                             input=json.dumps({"compact": compact, "docs": docs, "fields": FIELDS, "queries": list(queries)}),
                             capture_output=True, text=True, timeout=120, check=False)
    finally:
        script.unlink(missing_ok=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def shipped():
    return load_content(ROOT / "content")


@pytest.mark.parametrize("where", ["shipped", "fixtures"])
def test_the_page_expands_the_index_into_lunr_js_own_index_of_the_same_texts(where, shipped):
    content = shipped if where == "shipped" else load_content(FIXTURES)
    _, docs = documents(content)
    builder = build(docs)
    compact = encode(builder, len(docs))
    got = _in_node([[d.title, d.text] for d in docs], compact, ["softmax", "tokenization", "temperature dial"])
    assert got["mine"] == got["theirs"]
    # lunr.py's own serialisation of the same builder: the same index
    assert json.loads(json.dumps(builder.build().serialize())) == got["mine"]
    if where == "shipped":  # and lunr.js finds in it what the labs say
        assert got["found"]["softmax"] and got["found"]["temperature dial"] and got["found"]["tokenization"]


def test_the_texts_the_index_cuts_as_lunr_js_does_in_every_corner():
    """Separators, trimming and stop words as JavaScript's lunr reads them: Unicode spaces and the
    hyphen split words; ASCII \\W is trimmed at the ends (so a leading “ or a trailing é goes);
    stop words drop; the stemmer merges tokenizer and tokenization."""
    texts = ["tokenizer\u2009tokenization\u00a0re-ranking “softmax” café naïve x²+y² ÷√d (n) the and l'attention",
             "tab\there\u200a—\u3000end C++ e.g. U.S. 3.14 50% α-β"]
    from generator.search.index import SearchDoc
    docs = [SearchDoc(0, "", "", t, t) for t in texts]
    got = _in_node([[d.title, d.text] for d in docs], encode(build(docs), len(docs)))
    assert got["mine"] == got["theirs"]
    assert term_of("tokenizer") == term_of("tokenization") == "token"
    assert terms("The tokenizer") == ["token"]


@pytest.mark.parametrize("where", ["shipped", "fixtures", "corners"])
def test_the_build_writes_the_index_lunr_py_s_builder_gives(where, shipped):
    """The build's own encoder (no lunr builder, whose dict per posting a large site cannot afford)
    gives the very index that lunr.py's builder, encoded, gives: terms numbered alike, every
    posting and frequency, every field length; a term met first in a title, then in texts, and
    one repeated within a field included."""
    if where == "corners":
        docs = [SearchDoc(0, "", "", "Softmax softmax", "the softmax of scores, scaled scores"),
                SearchDoc(0, "a", "", "", "Scores—and re-ranking: x²+y² “tokens” token"),
                SearchDoc(1, "", "", "Tokens", ""), SearchDoc(1, "b", "", "İstanbul ÉTÉ", "softmax")]
    else:
        _, docs = documents(shipped if where == "shipped" else load_content(FIXTURES))
    reference = encode(build(docs), len(docs))
    assert compact_index(docs) == reference
    assert len(reference["lens"]) == 2 * len(docs) and ":" in reference["post"]


def test_every_part_of_every_lab_and_topic_is_a_document_at_its_own_anchor(shipped):
    pages, docs = documents(shipped)
    for p, lab in enumerate(shipped.labs):
        assert pages[p][0] == f"labs/{lab.slug}/"
        anchors = [d.anchor for d in docs if d.page == p]
        expected = (["", lab.gist.id] + [s.id for s in lab.sections] + ["key-ideas"] * len(lab.cards)
                    + [f"quiz-{q.id}" for q in lab.quiz.questions] + [f.id for f in lab.faq])
        assert anchors == expected
    topics = [path for path, _ in pages if path.startswith("topics/")]
    assert topics == [f"topics/{t.slug}/" for t in shipped.site.topics if shipped.labs_in(t.slug)]


def test_every_anchor_is_an_id_on_its_built_page(tmp_path):
    from generator.build import build as build_site

    result = build_site(FIXTURES, None, tmp_path / "site")
    pages, docs = documents(result.content)
    for d in docs:
        if d.anchor:
            html = (tmp_path / "site" / pages[d.page][0] / "index.html").read_text(encoding="utf-8")
            assert f'id="{d.anchor}"' in html, (pages[d.page][0], d.anchor)


def test_the_site_files_name_each_other_and_lunr_carries_its_licence(shipped):
    files = search_files(shipped)
    index = files[INDEX_PATH].decode()
    assert index.startswith("((window.Labs||={}).data||={}).search=")
    data = json.loads(index[len("((window.Labs||={}).data||={}).search="):].rstrip().rstrip(";"))
    lunr_path = "assets/" + data["script"]
    assert lunr_path == lunr_script()[0] and lunr_path in files
    lunr_text = files[lunr_path].decode()
    assert "Permission is hereby granted, free of charge" in lunr_text and "lunr.js 2.3.9" in lunr_text
    assert data["lunr"] == LUNR_VERSION == __TARGET_JS_VERSION__
    for path, _, shard in data["pages"]:
        assert "assets/" + shard in files, path
    assert len(data["docs"]) * 2 == len(data["lens"])


def test_the_shipped_index_is_within_30_kb_gzip(shipped):
    data = search_files(shipped)[INDEX_PATH]
    assert len(gzip.compress(data, 9)) <= 30_000


def test_an_edit_to_one_lab_changes_the_index_and_its_shard_only(shipped, tmp_path):
    """Pages name the index under a fixed name; a lab's texts are in a file of its own."""
    shutil.copytree(ROOT / "content", tmp_path / "content")
    gist = tmp_path / "content" / "labs" / "sampling" / "gist.md"
    gist.write_text(gist.read_text(encoding="utf-8") + "\nA zebracorn appears.\n", encoding="utf-8")
    before, after = search_files(shipped), search_files(load_content(tmp_path / "content"))
    changed = sorted(set(before) ^ set(after)) + sorted(p for p in set(before) & set(after) if before[p] != after[p])
    assert INDEX_PATH in changed
    assert all(p == INDEX_PATH or re.fullmatch(r"assets/search/labs-sampling\.[0-9a-f]{8}\.js", p) for p in changed)


STEM_SCRIPT = r"""
const fs = require("fs");
const lunr = require(process.argv[2]);
const words = JSON.parse(fs.readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(words.map(w => lunr.stemmer(new lunr.Token(w)).toString())));
"""


def test_the_stemmer_is_lunr_js_word_for_word():
    """Every word of the course, the docs and the tests' content, and made-up words that walk
    every suffix rule of the algorithm, stemmed here and by lunr.js in Node."""
    from generator.search.stemmer import _STEP2, _STEP3, stem

    text = " ".join(p.read_text(encoding="utf-8", errors="replace") for folder in ("content", "docs", "tests/fixtures")
                    for p in (ROOT / folder).rglob("*") if p.suffix in (".md", ".yaml", ".txt"))
    words = set(re.findall(r"[a-z]+", text.lower()))
    suffixes = ["s", "es", "ies", "sses", "ed", "eed", "ing", "y", "ly", "ness", "ful", "al", "ance", "ence", "er",
                "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou", "ism", "ate",
                "iti", "ous", "ive", "ize", "e", "ll", *_STEP2, *_STEP3]
    stems = ["y", "ya", "yet", "cr", "sk", "hop", "fil", "plast", "generat", "condit", "b", "feed", "agre", "motor",
             "troubl", "siz", "fall", "control", "tr", "happ", "k", "sa", "ro"]
    words |= {s + x for s in stems for x in suffixes} | {s + x + y for s in stems[:8] for x in suffixes for y in ("s", "ly")}
    words = sorted(words)
    script = Path(__file__).resolve().parent / ".stem-node.js"
    script.write_text(STEM_SCRIPT, encoding="utf-8")
    try:
        out = subprocess.run([_node(), str(script), str(VENDOR / f"lunr-{LUNR_VERSION}.min.js")],
                             input=json.dumps(words), capture_output=True, text=True, timeout=120, check=False)
    finally:
        script.unlink(missing_ok=True)
    assert out.returncode == 0, out.stderr
    theirs = json.loads(out.stdout)
    differ = [(w, stem(w), t) for w, t in zip(words, theirs, strict=True) if stem(w) != t]
    assert len(words) > 5000 and not differ, differ[:20]
