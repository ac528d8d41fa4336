"""The search box's ranking (``Labs.code.searchRank`` in theme/static/js/later/search.js) is
lunr.js's own query: for every prefix of many typed texts, the documents it returns, their scores
to the last bit and their order — ties included — are those of ``index.query`` with the box's
clauses, less the documents that miss a typed word (as the box filtered lunr's hits by their match
data). It runs in Node with the vendored lunr.js, over the page's index of the shipped course and
over lunr.js's own builder's index of the shipped documents three times over (every score tied
three ways)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from generator.search.index import FIELDS, LUNR_VERSION, VENDOR, build, documents, encode
from test_search import SEARCH_JS, _node, shipped  # noqa: F401 — the shipped content fixture

NODE_SCRIPT = r"""
const fs = require("fs");
global.lunr = require(process.argv[2]);
global.window = { Labs: { util: { h() {} }, code: {}, data: {} } };
global.document = { querySelector: () => null };
eval(fs.readFileSync(process.argv[3], "utf8"));
const input = JSON.parse(fs.readFileSync(0, "utf8")), S = window.Labs.code.searchRank;
const indexes = {
  page: lunr.Index.load(window.Labs.code.searchIndex(input.compact)),
  copies: lunr(function () {
    this.ref("id");
    for (const [name, boost] of input.fields) this.field(name, { boost });
    for (let c = 0, i = 0; c < 3; c++) for (const d of input.docs) this.add({ id: String(i++), t: d[0], b: d[1] });
  }),
};
const out = { checked: 0, asked: 0, found: 0, ties: 0, differ: [] };
for (const [name, index] of Object.entries(indexes)) {
  const post = S.postings(index);
  for (const text of input.texts) for (let i = 1; i <= text.length; i++) {
    out.checked++;
    const wanted = S.wantedIn(text.slice(0, i)), tests = wanted.map(x => t => S.matches(t, x));
    if (!wanted.length) continue;  // a stop word alone: the box shows nothing and asks nothing
    out.asked++;
    const mine = [...S.rank(index, post, S.clauses(wanted), tests)];
    const theirs = index.query(S.clauses(wanted))
      .filter(hit => { const found = Object.keys(hit.matchData.metadata); return tests.every(p => found.some(p)); })
      .map(hit => [+hit.ref, hit.score]);
    out.found += theirs.length;
    out.ties += theirs.filter((h, j) => j && h[1] === theirs[j - 1][1]).length;
    if (mine.length !== theirs.length || mine.some((m, j) => m[0] !== theirs[j][0] || !Object.is(m[1], theirs[j][1])))
      out.differ.push([name, text.slice(0, i), mine.slice(0, 5), theirs.slice(0, 5)]);
  }
}
process.stdout.write(JSON.stringify(out));
"""

TEXTS = ["softmax", "attention head", "temperature", "tokenizer", "query key value", "nearest embedding",
         "tokens tokenization", "the tok", "of the", "attentio", "relational", "key/value", "c++", "softmax(qk",
         "x²", "dot product", "zzzq", "embedding of a word",
         # more than 32 typed words: a document's matched words take more than one 32-bit mask
         " ".join("a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc dd ee ff gg hh ii jj".split())]


def test_the_ranking_is_lunr_js_query_to_the_last_bit_ties_in_order(shipped):  # noqa: F811
    _, docs = documents(shipped)
    script = Path(__file__).resolve().parent / ".search-rank-node.js"
    script.write_text(NODE_SCRIPT, encoding="utf-8")
    try:
        out = subprocess.run([_node(), str(script), str(VENDOR / f"lunr-{LUNR_VERSION}.min.js"), str(SEARCH_JS)],
                             input=json.dumps({"compact": encode(build(docs), len(docs)), "docs": [[d.title, d.text] for d in docs],
                                               "fields": FIELDS, "texts": TEXTS}),
                             capture_output=True, text=True, timeout=300, check=False)
    finally:
        script.unlink(missing_ok=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert not got["differ"], got["differ"][:3]
    # what was compared: every prefix over both indexes, thousands of hits, many of them tied
    assert got["checked"] == 2 * sum(len(t) for t in TEXTS) and got["asked"] > 0.8 * got["checked"]
    assert got["found"] > 5_000 and got["ties"] > 1_000, got
