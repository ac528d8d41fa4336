/* The header's search box ([data-search]): added by js/30-tools.js when the box is first
   focused. It loads the site's index (assets/search-index.js, written by
   generator/search/index.py) and lunr.js, which the index names, then searches as the learner
   types.

   The box is an ARIA combobox with a listbox popup (WAI-ARIA APG, "list autocomplete with
   automatic selection"): the focus stays in the text box; the first result is the active option
   (aria-activedescendant), Down/Up move it, Enter opens it, Escape closes the list (a second
   Escape empties the box), a click opens a result. Results are grouped by page, best page first,
   each with its part's title and a snippet of its text (a page's texts are loaded when one of its
   results is first shown), the words that matched marked with <mark>. A status line says how
   many results there are, for screen readers too.

   Matching: every word typed must match (English stems: "tokenizer" finds "tokenization");
   the word being typed also matches as the start of a word, from its third letter on. */
(() => {
  "use strict";
  const Labs = window.Labs, u = Labs.util, h = u.h;
  /** lunr's serialised index from the compact one: the terms and their postings as lunr's builder
      numbered and counted them, scored here as lunr.Builder.createFieldVectors scores them. */
  function expand(d) {
    const F = d.fields, nf = F.length, lens = d.lens, n = lens.length / nf, terms = d.terms ? d.terms.split(" ") : [];
    const inverted = Object.create(null), tfs = Array.from({ length: n * nf }, () => []), idf = [];
    const avg = F.map((_, f) => { let s = 0; for (let i = 0; i < n; i++) s += lens[i * nf + f]; return s / n; });
    (terms.length ? d.post.split(";") : []).forEach((p, k) => {
      const posting = { _index: k };
      let count = 0;
      p.split("|").forEach((items, f) => {
        const docs = posting[F[f]] = {};
        let doc = 0;
        if (items) for (const item of items.split(",")) {
          const c = item.indexOf(":");
          doc += parseInt(c < 0 ? item : item.slice(0, c), 36);
          docs[doc] = {};
          count++;
          tfs[doc * nf + f].push(k, c < 0 ? 1 : parseInt(item.slice(c + 1), 36));
        }
      });
      inverted[terms[k]] = posting;
      idf[k] = Math.log(1 + Math.abs((n - count + 0.5) / (count + 0.5)));
    });
    const fieldVectors = [];
    for (let i = 0; i < n; i++) for (let f = 0; f < nf; f++) {
      const t = tfs[i * nf + f], norm = 1.2 * (1 - 0.75 + 0.75 * (lens[i * nf + f] / avg[f])), elements = [];
      for (let j = 0; j < t.length; j += 2) {
        let score = idf[t[j]] * ((1.2 + 1) * t[j + 1]) / (norm + t[j + 1]);
        score *= d.boosts[f];
        elements.push(t[j], Math.round(score * 1000) / 1000);
      }
      fieldVectors.push([F[f] + "/" + i, elements]);
    }
    return { version: d.lunr, fields: F, fieldVectors, pipeline: ["stemmer"],
      invertedIndex: Object.keys(inverted).sort().map(t => [t, inverted[t]]) };
  }
  Labs.code.searchIndex = expand;

  /* ---------- matching ---------- */

  const PREFIX_FROM = 3;
  // Each word's stem, kept: the snippets of every keystroke stem the same texts' words again.
  const stems = new Map();
  const stem = w => { let s = stems.get(w); if (s === undefined) stems.set(w, s = lunr.stemmer(new lunr.Token(w)).toString()); return s; };
  /** The words of a text as the index cut them: lower case, split, trimmed; with their stems. */
  function words(text) {
    const ws = lunr.tokenizer(text).map(t => lunr.trimmer(t).toString()).filter(Boolean);
    return ws.map((w, i) => ({ w, stem: stem(w), stop: !lunr.stopWordFilter(new lunr.Token(w)),
      prefix: i === ws.length - 1 && w.length >= PREFIX_FROM }));
  }
  /** Whether an index term matches a typed word: its stem, or, for the word being typed, a word
      it begins (the last few letters typed may be an ending the stemmer cuts: "attentio"). */
  const matches = (term, x) => term === x.stem || x.prefix && (term.startsWith(x.w) || x.w.startsWith(term) && term.length >= x.w.length - 3);
  const head = x => x.w.slice(0, Math.max(PREFIX_FROM, x.w.length - 3));
  /** The words a search looks for (a stop word only as the start of the word being typed), and
      its lunr query: each word's stem, boosted, and the word being typed as a prefix. */
  const wantedIn = text => words(text).filter(x => !x.stop || x.prefix);
  const clauses = wanted => q => {
    for (const x of wanted) {
      if (!x.stop) q.term(x.w, { boost: 10 });
      if (x.prefix) q.term(head(x), { usePipeline: false, wildcard: lunr.Query.wildcard.TRAILING });
    }
  };

  /* ---------- ranking ---------- */

  /** lunr's field vectors laid out by term: for term k (lunr's number for it) in field f, the
      documents that hold it, ascending, and its weight in each one's vector, at
      start[k * nf + f] .. start[k * nf + f + 1]. lunr's index.query walks every matching
      document's whole field vector (a prefix such as "tok" matches hundreds of terms and half of
      a large site's documents); with these a query touches only the postings of its own terms. */
  function postings(index) {
    const F = index.fields, nf = F.length, nt = Object.keys(index.invertedIndex).length, fv = index.fieldVectors;
    let n = 0;
    for (const ref in fv) n = Math.max(n, +ref.slice(ref.indexOf("/") + 1) + 1); // refs are 0, 1, …
    const each = fn => {
      for (let i = 0; i < n; i++) for (let f = 0; f < nf; f++) {
        const e = fv[F[f] + "/" + i]?.elements || [];
        for (let j = 0; j < e.length; j += 2) fn(e[j] * nf + f, i, e[j + 1]);
      }
    };
    const start = new Int32Array(nt * nf + 1);
    each(k => start[k + 1]++);
    for (let k = 0; k < nt * nf; k++) start[k + 1] += start[k];
    const at = start.slice(0, -1), doc = new Int32Array(start[nt * nf]), weight = new Float64Array(doc.length);
    each((k, i, w) => { doc[at[k]] = i; weight[at[k]++] = w; });
    return { n, nf, start, doc, weight };
  }

  /** What `index.query(build)` returns (lunr.js 2.3.9; one optional clause or more), less the documents
      none of whose matched terms passes one of `tests`: their refs (as numbers) with lunr's own
      scores, [ref, score], best first, one at a time (a keystroke shows a few dozen of
      thousands). The same scores to the last bit and the same order among equal scores: it
      follows lunr's query step for step — its pipeline, its expansion of each clause over the
      index's token set, its query vectors and their magnitudes, each field's dot product summed in
      term order, the fields' scores added (two fields: the same either way round), lunr's stable
      sort by score from the order in which it first meets each document — but takes the weights
      from `post`, scores only the documents `tests` keep, and finds which terms matched each one
      without lunr's match data. tests/test_search.py holds it to lunr's own query. */
  function* rank(index, post, build, tests) {
    const { kept, score } = scores(index, post, build, tests), next = best(kept, score);
    for (let d = next(); d >= 0; d = next()) yield [d, score[d]];
  }
  /** rank's work, in a plain function (V8 optimises a generator's loops less well). */
  function scores(index, post, build, tests) {
    const { n, nf, start, doc, weight } = post, F = index.fields, W = Math.ceil(tests.length / 32) || 1;
    const query = new lunr.Query(F);
    build(query);
    if (!query.clauses.length) throw new Error("rank: no clauses"); // lunr: a query of none matches everything
    const qv = F.map(() => new Map()), done = new Set(), order = [], seen = new Uint8Array(n), mask = new Uint32Array(n * W);
    for (const clause of query.clauses) {
      if (clause.presence !== lunr.Query.presence.OPTIONAL) throw new Error("rank: optional clauses only");
      const terms = clause.usePipeline ? index.pipeline.runString(clause.term, { fields: clause.fields }) : [clause.term];
      for (const term of terms) {
        clause.term = term;
        for (const t of index.tokenSet.intersect(lunr.TokenSet.fromClause(clause)).toArray()) {
          const k = index.invertedIndex[t]._index, bits = Array(W).fill(0);
          for (let j = 0; j < tests.length; j++) if (tests[j](t)) bits[j >> 5] |= 1 << (j & 31);
          for (const field of clause.fields) {
            const f = F.indexOf(field), q = qv[f];
            q.set(k, q.has(k) ? q.get(k) + clause.boost : clause.boost);
            if (done.has(t + "/" + field)) continue;
            done.add(t + "/" + field);
            for (let p = start[k * nf + f], end = start[k * nf + f + 1]; p < end; p++) {
              const d = doc[p];
              if (!seen[d]) { seen[d] = 1; order.push(d); }
              for (let w = 0; w < W; w++) mask[d * W + w] |= bits[w];
            }
          }
        }
      }
    }
    const all = Array.from({ length: W }, (_, w) => w < W - 1 || tests.length % 32 === 0 && tests.length ? -1 >>> 0 : (1 << tests.length % 32) - 1 >>> 0);
    const kept = order.filter(d => { for (let w = 0; w < W; w++) if (mask[d * W + w] !== all[w]) return false; return true; });
    const acc = new Float64Array(n), score = new Float64Array(n);
    qv.forEach((q, f) => {
      const ks = [...q.keys()].sort((a, b) => a - b);
      let squares = 0;
      for (const k of ks) squares += q.get(k) * q.get(k);
      const magnitude = Math.sqrt(squares);
      acc.fill(0);
      for (const k of ks) for (let p = start[k * nf + f], end = start[k * nf + f + 1], v = q.get(k); p < end; p++) acc[doc[p]] += v * weight[p];
      for (const d of kept) score[d] += acc[d] / magnitude || 0;
    });
    return { kept, score };
  }
  /** The documents of `kept` (in the order lunr met them) by `score`, best first, as lunr's
      stable sort orders them, one per call (-1 when done), drawn from a heap. */
  function best(kept, score) {
    const heap = new Int32Array(kept.length);
    for (let i = 0; i < heap.length; i++) heap[i] = i;
    const above = (a, b) => score[kept[a]] > score[kept[b]] || score[kept[a]] === score[kept[b]] && a < b;
    const down = (i, size) => {
      for (let c = 2 * i + 1; c < size; i = c, c = 2 * i + 1) {
        if (c + 1 < size && above(heap[c + 1], heap[c])) c++;
        if (!above(heap[c], heap[i])) return;
        const x = heap[i]; heap[i] = heap[c]; heap[c] = x;
      }
    };
    let size = heap.length;
    for (let i = (size >> 1) - 1; i >= 0; i--) down(i, size);
    return () => {
      if (!size) return -1;
      const top = kept[heap[0]];
      heap[0] = heap[--size];
      down(0, size);
      return top;
    };
  }
  Labs.code.searchRank = { wantedIn, clauses, matches, postings, rank };

  const box = document.querySelector("[data-search]");
  if (!box || box.dataset.ready) return;
  box.dataset.ready = "loading";
  const input = box.firstElementChild, root = box.dataset.search.replace(/assets\/later\/[^]*$/, "");
  const list = h("div", { id: "search-list", role: "listbox", "aria-label": "Search results" });
  const pop = h("div", { class: "search-pop", hidden: "" }, [list]);
  const status = h("p", { class: "visually-hidden", role: "status" });
  box.append(pop, status);
  input.setAttribute("aria-controls", "search-list");
  input.setAttribute("aria-autocomplete", "list");
  const MAX_PAGES = 8, MAX_PER_PAGE = 4;
  let data = null, index = null, post = null, shown = [], active = -1, typed = "", redraw = 0, last = { typed: null, groups: [] };
  const asked = new Set(); // the pages' text files asked for

  function find(text) {
    const wanted = wantedIn(text);
    if (!wanted.length) return [];
    // Best first: the first MAX_PAGES pages with a hit that has every word, each with its first
    // MAX_PER_PAGE such hits.
    const pages = new Map();
    let full = 0;
    for (const [doc] of rank(index, post, clauses(wanted), wanted.map(x => t => matches(t, x)))) {
      const page = data.docs[doc][0], docs = pages.get(page);
      if (docs ? docs.length === MAX_PER_PAGE : pages.size === MAX_PAGES) continue;
      if (docs) docs.push({ doc, wanted });
      else pages.set(page, [{ doc, wanted }]);
      if (pages.get(page).length === MAX_PER_PAGE && ++full === MAX_PAGES) break;
    }
    return [...pages].map(([page, docs]) => ({ page, docs }));
  }

  /** One piece of a text (a word with the punctuation around it) as nodes: [piece], or the word
      inside <mark> when it matches a wanted word. */
  function markPiece(piece, wanted) {
    const m = /^(\W*)(.*?)(\W*)$/.exec(piece), word = m[2].toLowerCase();
    return word && wanted.some(x => matches(stem(word), x) || x.prefix && word.startsWith(x.w)) ? [m[1], h("mark", null, [m[2]]), m[3]] : [piece];
  }
  const pieces = text => text.split(/([\s\-]+)/);
  /** `text` as nodes, each word that matches a wanted word inside <mark>. */
  const marked = (text, wanted) => joined(pieces(text).flatMap(p => markPiece(p, wanted)));
  /** `nodes` with each run of strings as one: one text node for the words between two marks, not
      one a word (32 snippets of a word a node were two thousand boxes to lay out a keystroke). */
  const joined = nodes => nodes.reduce((out, n) => {
    if (typeof n === "string" && typeof out[out.length - 1] === "string") out[out.length - 1] += n;
    else out.push(n);
    return out;
  }, []);

  /** The part of `text` around its first marked word, at most about 160 characters. Only the
      words up to the first match and the 160 characters after it are looked at: a section's text
      may be thousands of words, and a keystroke draws up to 32 snippets. */
  function snippet(text, wanted) {
    const ps = pieces(text);
    let first = -1, hit = null;
    while (++first < ps.length && (hit = markPiece(ps[first], wanted)).length === 1);
    if (first === ps.length) return [text.length > 160 ? text.slice(0, 157).replace(/\s+\S*$/, "") + " …" : text];
    function* after() { yield hit[1]; yield hit[2]; for (let i = first + 1; i < ps.length; i++) yield* markPiece(ps[i], wanted); }
    let before = ps.slice(0, first).join("") + hit[0], start = Math.max(0, before.length - 50);
    start = start && before.indexOf(" ", start) + 1;
    let out = [(start ? "… " : "") + before.slice(start)], length = out[0].length;
    for (const n of after()) {
      const s = typeof n === "string" ? n : n.textContent;
      if (length + s.length > 160) { out.push(typeof n === "string" ? n.slice(0, 160 - length).replace(/\s+\S*$/, "") + " …" : " …"); break; }
      out.push(n);
      length += s.length;
    }
    return joined(out);
  }

  /* ---------- the list ---------- */

  const pageUrl = (path, anchor) => root + path + (location.protocol === "file:" ? "index.html" : "") + (anchor ? "#" + anchor : "");
  const textOf = (page, doc) => (Labs.data.searchText || {})[data.pages[page][0]]?.[data.docs[doc].pos];

  function render() {
    // The same text again (a page's texts arriving for its snippets): the same results, not
    // another query of the whole index.
    if (last.typed !== typed) last = { typed, groups: typed ? find(typed) : [] };
    const groups = last.groups;
    shown = [];
    const nodes = groups.map((g, gi) => {
      const [path, label] = data.pages[g.page];
      const id = `search-g${gi}`;
      return h("div", { role: "group", "aria-labelledby": id, class: "search-group" }, [
        h("div", { id, role: "presentation", class: "search-group-label" }, [label]),
        ...g.docs.map(hit => {
          const [, anchor, part, title] = data.docs[hit.doc], text = textOf(g.page, hit.doc);
          const o = h("div", { role: "option", id: `search-o${shown.length}`, "aria-selected": "false", class: "search-option" }, [
            h("span", { class: "search-title" }, [part ? part + " · " : "", ...marked(title, hit.wanted)]),
            text ? h("span", { class: "search-snippet" }, snippet(text, hit.wanted)) : null]);
          shown.push({ url: pageUrl(path, anchor), el: o });
          return o;
        })]);
    });
    list.replaceChildren(...nodes);
    const n = shown.length, pages = groups.length;
    status.textContent = !typed ? "" : n ? `${n} result${n > 1 ? "s" : ""} on ${pages} page${pages > 1 ? "s" : ""}` : `No results for “${typed}”`;
    open(!!typed);
    select(n ? 0 : -1);
    // The texts of the pages shown, each asked for once; the list is drawn again once a frame at
    // most as they come (a render per arrival, each adding its own wait on those still loading,
    // would multiply the renders).
    for (const g of groups) {
      const file = data.pages[g.page][2];
      if (asked.has(file)) continue;
      asked.add(file);
      u.load(root + "assets/" + file).then(again, () => asked.delete(file)); // failed: asked again next time
    }
  }
  function again() {
    redraw ||= requestAnimationFrame(() => { redraw = 0; if (typed) render(); });
  }

  function open(on) {
    pop.hidden = !on;
    input.setAttribute("aria-expanded", on && shown.length > 0);
  }
  function select(i) {
    if (shown[active]) shown[active].el.setAttribute("aria-selected", "false");
    active = i;
    if (shown[i]) {
      shown[i].el.setAttribute("aria-selected", "true");
      input.setAttribute("aria-activedescendant", shown[i].el.id);
      shown[i].el.scrollIntoView({ block: "nearest" });
    } else input.removeAttribute("aria-activedescendant");
  }
  function go(i) {
    const url = new URL(shown[i].url, location.href);
    open(false);
    if (url.href.split("#")[0] === location.href.split("#")[0]) {
      location.hash = url.hash;
      document.getElementById(decodeURIComponent(url.hash.slice(1)))?.scrollIntoView();
    } else location.href = url.href;
  }

  input.addEventListener("input", () => {
    typed = input.value.trim();
    if (index) render();
  });
  input.addEventListener("keydown", ev => {
    const n = shown.length, isOpen = !pop.hidden;
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      if (!n) return;
      ev.preventDefault();
      if (!isOpen) return open(true), select(active < 0 ? 0 : active);
      select((active + (ev.key === "ArrowDown" ? 1 : n - 1)) % n);
    } else if (ev.key === "Enter" && isOpen && shown[active]) {
      ev.preventDefault();
      go(active);
    } else if (ev.key === "Escape") {
      if (isOpen) open(false);
      else if (input.value) { input.value = typed = ""; render(); }
      else return;
      ev.preventDefault();
    }
  });
  input.addEventListener("focus", () => { if (typed && index) open(true); });
  box.addEventListener("focusout", ev => { if (!box.contains(ev.relatedTarget)) open(false); });
  list.addEventListener("pointerdown", ev => ev.preventDefault()); // the focus stays in the box
  list.addEventListener("click", ev => {
    const o = ev.target.closest("[role=option]");
    if (o) go(shown.findIndex(s => s.el === o));
  });

  u.load(root + "assets/search-index.js").then(() => u.load(root + "assets/" + Labs.data.search.script)).then(() => {
    data = Labs.data.search;
    const seen = {};
    for (const doc of data.docs) doc.pos = seen[doc[0]] = (seen[doc[0]] ?? -1) + 1; // its place among its page's texts
    index = lunr.Index.load(expand(data));
    post = postings(index);
    box.dataset.ready = "true";
    typed = input.value.trim();
    if (typed) render();
  }, () => {
    box.dataset.ready = "";
    status.textContent = "The search could not load.";
  });
})();
