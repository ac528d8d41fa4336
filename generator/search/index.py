"""The search index: the site's text as lunr documents, indexed by lunr.py, written for the page.

A **document** is one part of a page with its own anchor: a lab's top (its title and subtitle,
tagline and summary), its gist, each prose section, each card (they share ``#key-ideas``), each
FAQ entry, each quiz question, and each topic page. Its ``t`` field (the part's title, boosted
×10 as MkDocs boosts titles) and ``b`` field (its text) are indexed.

The index is lunr.py's, built from the terms of lunr.js's own text pipeline — its tokenizer's
separators (``\\s`` and ``-`` as JavaScript reads them), its trimmer (``\\W`` in ASCII, as
JavaScript reads it), its stop words and its stemmer (:mod:`generator.search.stemmer`: lunr.py's
differs) — so that a word is cut the same way here and in the page.

The page gets the index in a compact form, :func:`encode`: the terms in the order lunr numbered
them, each term's postings (document, field, term frequency) delta-coded in base 36, and each
field's length per document. That is what lunr's builder knows before it scores; the page's
``searchIndex`` (theme/static/js/later/search.js) runs the builder's last step (BM25 scores,
rounded to 3 places, as ``lunr.Builder.createFieldVectors``) and hands lunr's serialised index to
``lunr.Index.load``. The field vectors, four fifths of a serialised index, never travel. The
build encodes it itself (:func:`compact_index`), as lunr.py's builder (:func:`build`, then
:func:`encode`) would, without the builder's dict per posting; the tests hold the two equal.
"""

from __future__ import annotations

import functools
import gzip
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lunr import get_default_builder
from lunr.stop_word_filter import WORDS as STOP_WORDS

from generator.model import Content, Lab
from generator.prose.markdown_render import plain_text
from generator.search.stemmer import stem
from generator.webfiles import fingerprint, json_for_script

LUNR_VERSION = "2.3.9"  # the lunr.js in vendor/, the version lunr.py 0.8 writes indexes for
VENDOR = Path(__file__).resolve().parent / "vendor"
INDEX_PATH = "assets/search-index.js"  # named by every page: a fixed name, so pages never change with the index
SHARD_FOLDER = "assets/search/"
FIELDS = (("t", 10), ("b", 1))  # (name, boost): a word in a part's title weighs as ten in its text
TITLE_CHARS = 100  # a result shows at most this much of a title (a quiz question is its prompt)
FORMAT = 1  # of the compact index; the page refuses another

# JavaScript's \s, which lunr.js's tokenizer splits on with "-": Python's str.isspace differs
# (it has U+001C–U+001F and U+0085, and lacks U+FEFF).
_JS_SPACE = frozenset("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                      "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")
_SPLIT = re.compile("[-" + re.escape("".join(sorted(_JS_SPACE))) + "]+")
_LEAD, _TRAIL = re.compile(r"^\W+", re.ASCII), re.compile(r"\W+$", re.ASCII)  # lunr.trimmer's, in ASCII as JS reads \W


@dataclass(frozen=True)
class SearchPage:
    """A page that has documents: a lab's or a topic's."""

    path: str  # from the site's root: "labs/attention/", "topics/llm-engineering/"
    label: str  # what a group of results is headed with: "07 · Attention — The Spotlight"
    shard: str  # its file of texts, under SHARD_FOLDER (fingerprinted)


@dataclass(frozen=True)
class SearchDoc:
    page: int  # index into the pages
    anchor: str  # the part's id on its page ("" for the page's top)
    part: str  # what kind of part, shown before its title: "", "FAQ", "Quiz", "Key idea"
    title: str
    text: str


@functools.lru_cache(maxsize=1 << 17)
def term_of(word: str) -> str | None:
    """What lunr.js's pipeline (trimmer, stop-word filter, stemmer) makes of one lower-cased
    token: its index term, or None when it is dropped (a stop word). A token of punctuation alone
    trims to "", which lunr.js keeps and indexes, and so does this. Kept per word: a site's words
    repeat."""
    word = _TRAIL.sub("", _LEAD.sub("", word))
    if word in STOP_WORDS:
        return None
    return stem(word)


def _lab_label(lab: Lab) -> str:
    return f"{lab.label} · {lab.title}" + (f" — {lab.subtitle}" if lab.subtitle else "")


def _short(text: str) -> str:
    return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1].rstrip() + "…"


def documents(content: Content) -> tuple[list[tuple[str, str]], list[SearchDoc]]:
    """Every page with its documents, in the site's order: ((path, label) per page, documents)."""
    pages: list[tuple[str, str]] = []
    docs: list[SearchDoc] = []
    for lab in content.labs:
        p = len(pages)
        pages.append((f"labs/{lab.slug}/", _lab_label(lab)))
        docs.append(SearchDoc(p, "", "", f"{lab.title}" + (f" — {lab.subtitle}" if lab.subtitle else ""),
                              f"{lab.tagline} {lab.summary}"))
        legend = " ".join(f"{item.term}: {item.meaning}." for item in lab.legend)
        docs.append(SearchDoc(p, lab.gist.id, "", lab.gist.title or lab.gist.kicker or "In short",
                              f"{plain_text(lab.gist.html)} {legend}".strip()))
        for s in lab.sections:
            docs.append(SearchDoc(p, s.id, s.kicker if s.title else "", s.title or s.kicker, plain_text(s.html)))
        for card in lab.cards:
            docs.append(SearchDoc(p, "key-ideas", "Key idea", card.title, plain_text(card.body_html)))
        for q in lab.quiz.questions:
            docs.append(SearchDoc(p, f"quiz-{q.id}", "Quiz", q.prompt_text, " · ".join(o.text for o in q.options)))
        for item in lab.faq:
            docs.append(SearchDoc(p, item.id, "FAQ", item.question, item.answer_text))
    for topic in content.site.topics:
        if not content.labs_in(topic.slug):
            continue
        p = len(pages)
        pages.append((f"topics/{topic.slug}/", f"Topic · {topic.title}"))
        docs.append(SearchDoc(p, "", "Topic", topic.title, topic.blurb))
    return pages, docs


def build(docs: list[SearchDoc]):
    """lunr.py's builder with every document added, the reference :func:`compact_index` is held to (``build()`` not yet called): refs are the
    documents' positions. Each field is handed over as its terms, made by :func:`terms`, with
    the builder's own pipeline emptied: the same index as lunr.py's pipeline would make from the
    text, at a third of the cost (each word is trimmed and stemmed once per build, not once per
    time it occurs)."""
    builder = get_default_builder()
    builder.pipeline.reset()
    builder.ref("id")
    for name, boost in FIELDS:
        builder.field(name, boost)
    for i, doc in enumerate(docs):
        builder.add({"id": str(i), "t": terms(doc.title), "b": terms(doc.text)})
    return builder


def terms(text: str) -> list[str]:
    """The index terms of a text, in order, as lunr.js makes them: its tokenizer (lower case,
    split on JavaScript's ``\\s`` and ``-``), then :func:`term_of` on each token."""
    out = []
    for word in _SPLIT.split(text.lower()):
        term = term_of(word) if word else None
        if term is not None:
            out.append(term)
    return out


def _b36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def encode(builder, n_docs: int) -> dict[str, Any]:
    """The compact index (see the module's docstring): ``terms`` (space-separated, in lunr's
    numbering), ``post`` (per term, ``;``-separated: per field, ``|``-separated: its documents,
    ``,``-separated, each the gap from the previous one in base 36, ``:tf`` when a term occurs
    more than once), ``lens`` (each document's field lengths, field by field)."""
    fields = [name for name, _ in FIELDS]
    numbered = builder.inverted_index
    terms = sorted(numbered, key=lambda t: numbered[t]["_index"])
    # Walked document by document (refs are 0, 1, …), each term's postings come out in order.
    items: list[list[list[str]]] = [[[] for _ in fields] for _ in terms]
    last = [[0] * len(fields) for _ in terms]
    for doc in range(n_docs):
        for f, field in enumerate(fields):
            for term, tf in builder.field_term_frequencies[f"{field}/{doc}"].items():
                k = numbered[term]["_index"]
                items[k][f].append(_b36(doc - last[k][f]) + (f":{_b36(tf)}" if tf > 1 else ""))
                last[k][f] = doc
    post = ["|".join(",".join(field_items) for field_items in term_items) for term_items in items]
    lens = [builder.field_lengths[f"{field}/{i}"] for i in range(n_docs) for field in fields]
    return {"format": FORMAT, "lunr": LUNR_VERSION, "fields": fields, "boosts": [b for _, b in FIELDS],
            "terms": " ".join(terms), "post": ";".join(post), "lens": lens}


def compact_index(docs: list[SearchDoc]) -> dict[str, Any]:
    """``encode(build(docs), len(docs))``, made without lunr.py's builder, which keeps a dict for
    every posting (some 250 MB for a site of 1,000 labs). The compact index needs only what the
    builder knows of each field as it adds it: its terms with their frequencies, in the order it
    meets them, lunr's number for each term (the order in which the builder first met it) and the
    field's length. Walked document by document (refs are 0, 1, …), each term's postings come out
    in order."""
    fields = [name for name, _ in FIELDS]
    numbers: dict[str, int] = {}
    items: list[list[list[str]]] = []  # per term, per field: its postings
    last: list[list[int]] = []
    lens: list[int] = []
    for doc, d in enumerate(docs):
        for f, text in enumerate((d.title, d.text)):
            found = [t.lower() for t in terms(text)]  # lunr's tokenizer lower-cases a list's items too
            lens.append(len(found))
            tf: dict[str, int] = {}
            for term in found:
                tf[term] = tf.get(term, 0) + 1
                if term not in numbers:
                    numbers[term] = len(numbers)
                    items.append([[] for _ in fields])
                    last.append([0] * len(fields))
            for term, n in tf.items():
                k = numbers[term]
                items[k][f].append(_b36(doc - last[k][f]) + (f":{_b36(n)}" if n > 1 else ""))
                last[k][f] = doc
    post = ["|".join(",".join(field_items) for field_items in term_items) for term_items in items]
    return {"format": FORMAT, "lunr": LUNR_VERSION, "fields": fields, "boosts": [b for _, b in FIELDS],
            "terms": " ".join(numbers), "post": ";".join(post), "lens": lens}


@functools.cache
def lunr_script() -> tuple[str, bytes]:
    """lunr.js as the site serves it: npm's minified file with its MIT licence in full above it
    (the minified file's own header names the licence but does not carry it), fingerprinted."""
    licence = (VENDOR / "LICENSE-lunr.txt").read_text(encoding="utf-8").strip()
    code = (VENDOR / f"lunr-{LUNR_VERSION}.min.js").read_bytes()
    data = f"/*! lunr.js {LUNR_VERSION} (npm: lunr), https://lunrjs.com\n{licence}\n*/\n".encode() + code
    return "assets/" + fingerprint("lunr.js", data), data


def _script(variable: str, key: str | None, data: Any) -> bytes:
    target = f"((window.Labs||={{}}).data||={{}}).{variable}"
    if key is not None:
        target = f"({target}||={{}})[{json_for_script(key)}]"
    return f"{target}={json_for_script(data)};\n".encode()


def search_files(content: Content) -> dict[str, bytes]:
    """Every file of the site's search, by path: the index, one text file per page and lunr.js."""
    pages, docs = documents(content)
    lunr_path, lunr_data = lunr_script()
    shards: list[str] = []
    files: dict[str, bytes] = {lunr_path: lunr_data}
    for p, (path, _) in enumerate(pages):
        texts = [doc.text for doc in docs if doc.page == p]
        data = _script("searchText", path, texts)
        name = SHARD_FOLDER + fingerprint(path.strip("/").replace("/", "-") + ".js", data)
        files[name] = data
        shards.append(name[len("assets/"):])
    index = compact_index(docs)
    index["script"] = lunr_path[len("assets/"):]  # the page adds lunr.js from here
    index["pages"] = [[path, label, shard] for (path, label), shard in zip(pages, shards, strict=True)]
    index["docs"] = [[d.page, d.anchor, d.part, _short(d.title)] for d in docs]
    files[INDEX_PATH] = _script("search", None, index)
    return files


def gzip_size(data: bytes) -> int:
    """Bytes after gzip -9 (how the budgets are counted; mtime 0 for the same bytes every time)."""
    return len(gzip.compress(data, 9, mtime=0))
