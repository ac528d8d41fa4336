/* The pattern view (#sl-pattern): the current head's whole n × m pattern as a real <table> — rows are
   queries, columns keys, the shade is the weight — the shuffle (what position is for) and the
   closest learned head. Loaded by spotlight.js (data.pattern.src, written by pattern.py) the first
   time the learner opens the view, with Labs.data.pattern: {shuffle: {sentence id: {order, heads:
   {id: {before, after}}}}, learned: {heads: {id: {layer, head, agreement, words, sentences, next}},
   words: {sentence id: [model word of each word]}}}.
   Labs.code.pattern = { start(door, files), paint(view) }: the spotlight calls paint() on every
   repaint; everything it shows comes from the view, and a click changes the spotlight through the door. */
(() => {
  "use strict";
  const Labs = window.Labs, P = Labs.data.pattern, u = Labs.util, { h } = u;
  const pc = x => Math.round(x * 100) + "%", pc1 = x => (x * 100).toFixed(1) + "%";
  let door = null, el = null, built = "", shuffled = false, perRow = false, tables = [], at = null, hint = null, width = 0, summaryOf = -1;

  function start(d, files) {
    door = d;
    el = door.el;
    u.load(files.css).catch(() => {}); // without it the table still reads, unshaded
    const body = el.patternBody;
    body.addEventListener("click", ev => {
      const b = ev.target.closest("[data-q]");
      if (b?.matches("button")) door.update({ q: +b.dataset.q });
      if (ev.target.closest(".sl-pat-shuffle")) { shuffled = !shuffled; built = ""; paint(door.view()); }
    });
    body.addEventListener("change", ev => {
      if (!ev.target.matches(".sl-pat-rows")) return;
      perRow = ev.target.checked;
      built = "";
      paint(door.view());
      el.patternBody.querySelector(".sl-pat-rows")?.focus(); // the switch was drawn again
    });
    body.addEventListener("keydown", onKey);
    for (const type of ["pointerover", "focusin"]) body.addEventListener(type, ev => say(ev.target.closest("td[data-c]")));
  }

  /* ---------- what a grid shows ---------- */

  const modelName = () => door.info.model.name.split("/").pop();

  /** The current head's grid: {caption, cols, rows: [{word, q, cells: [{w, pct, masked}]}]}. */
  function current(v) {
    const S = v.S;
    if (v.real) {
      const A = v.attention, keep = v.keys.map((w, j) => j).filter(j => !v.hidden[j]);
      return { caption: `Every query of ${v.name} (${modelName()})`, cols: keep.map(j => v.keys[j]),
        rows: keep.map(i => {
          const pct = u.roundShares(A[i], 100);
          return { word: v.queries[i], q: i, cells: keep.map(j => ({ w: A[i][j] / 1000, pct: pct[j] })) };
        }) };
    }
    const H = v.H, W = v.scale ? H.weights : H.weights_unscaled, pct = v.scale ? H.pct : H.pct_unscaled;
    return { caption: `Every query of the ${v.name}` + (v.scale ? "" : " (no ÷√d)"), cols: S.keys,
      rows: S.queries.map((word, i) => ({ word, q: i,
        cells: S.keys.map((k, j) => ({ w: W[i][j], pct: pct[i][j], masked: !!H.scores && H.scores[i][j] === null })) })) };
  }

  /** The shuffle's two grids for head `hid`: the written order and the shuffled one, bias left out. */
  function shuffleGrids(S, hid, name) {
    const X = P.shuffle[S.id], M = X.heads[hid], order = X.order;
    const grid = (caption, W, idx) => ({ caption, cols: idx.map(i => S.queries[i]),
      rows: idx.map((i, a) => ({ word: S.queries[i], q: i, cells: idx.map((k, b) => ({ w: W[a][b], pct: pc(W[a][b]).slice(0, -1) })) })) });
    return [grid(`${name}, written order`, M.before, S.queries.map((w, i) => i)), grid(`${name}, words shuffled`, M.after, order)];
  }

  /* ---------- building ---------- */

  function table(g) {
    const byQ = new Map(); // query index → its row's button
    const caption = h("caption", null, [g.caption]);
    const head = h("tr", null, [h("td", { class: "sl-pat-corner" }, [h("span", { class: "visually-hidden" }, ["Query, then keys"])]),
      ...g.cols.map(k => h("th", { scope: "col" }, [h("span", null, [k])]))]);
    const rows = g.rows.map((r, a) => {
      const top = Math.max(...r.cells.map(c => c.masked ? 0 : c.w)); // the row's largest weight: full colour on the per-row scale
      const cells = r.cells.map((c, b) => {
        const td = h("td", { "data-r": a, "data-c": b, tabindex: -1, class: c.masked ? "is-masked" : null },
          [h("span", { class: "visually-hidden" }, [c.masked ? "masked" : c.pct + "%"])]);
        if (!c.masked) td.style.setProperty("--w", Math.min(1, perRow ? c.w / (top || 1) : c.w));
        td.pattern = [r.word, g.cols[b], c];
        return td;
      });
      const q = h("button", { type: "button", class: "sl-pat-q", "data-q": r.q, "data-r": a, "data-c": -1, tabindex: -1, "aria-pressed": "false" }, [r.word]);
      byQ.set(r.q, q);
      return h("tr", null, [h("th", { scope: "row" }, [q]), ...cells]);
    });
    const t = h("table", { class: "sl-pat" }, [caption, h("thead", null, [head]), h("tbody", null, rows)]);
    // The query's row is outlined by one mark laid over the table (outside the box that scrolls), moved
    // on a click: nothing in the table changes, so the browser keeps its painting (1,764 cells for 42 words).
    const mark = h("div", { class: "sl-pat-mark", "aria-hidden": "true", hidden: "" });
    const box = h("div", { class: "sl-pat-frame" }, [h("div", { class: "sl-pat-box" }, [t]), mark]);
    t.grid = { rows: g.rows.length, cols: g.cols.length, byQ, on: null, mark, boxes: [] };
    tables.push(t);
    return box;
  }

  function build(v) {
    const S = v.S, X = !v.real && P.shuffle?.[S.id], kids = [];
    tables = [];
    if (!X) shuffled = false;
    const what = v.cross ? `The queries (rows) come from one sentence and the keys (columns) from the ${S.key_label || "other"}, ` +
      `so the grid is ${S.queries.length} × ${S.keys.length}, not square.`
      : S.kind === "causal" && !v.real ? "The empty triangle above the diagonal is the causal mask: no word sees a word after it." : "";
    kids.push(h("p", { class: "sl-hint" }, ["Each row is one word as the query, each column a key it can look at; the stronger the " +
      "orange of a cell, the more weight (scale below), and every row adds up to 100%. Point at or focus a cell for its percentage; press a word on the left " +
      "(or Enter on a cell) to make that word the query. " + what + (v.real && !perRow ? " A real head spreads its weight " +
      "thinly, so most cells are pale on this scale: shade each row by its own largest weight to see where each word looks." : "")]));
    // The colour scale, drawn with the cells' own mix, so it is true in light and in dark; per row, full colour is each row's largest weight.
    const ends = perRow ? ["0%", "the row's largest weight"] : ["0%", "100% of a row"];
    kids.push(h("div", { class: "sl-pat-scale" }, [h("span", null, [ends[0]]),
      h("span", { class: "sl-pat-ramp", role: "img", "aria-label": `Colour scale: from the background at ${ends[0]} to full orange at ${ends[1]}` }, []),
      h("span", null, [ends[1]]),
      h("span", { class: "sl-field sl-switch" }, [h("input", { type: "checkbox", role: "switch", id: "sl-pat-rows", class: "sl-pat-rows",
        checked: perRow ? "" : null, "aria-checked": String(perRow) }), h("label", { for: "sl-pat-rows" }, ["Shade each row by its largest weight"])])]));
    if (X) kids.push(h("p", null, [h("button", { type: "button", class: "btn sl-pat-shuffle", "aria-pressed": String(shuffled) },
      ["Shuffle the words"]), " ", h("span", { class: "sl-hint" }, ["What is position for? Shuffle and see which heads notice."])]));
    else if (!v.real) kids.push(h("p", { class: "sl-hint" }, ["The shuffle is computed for the lab's own self-attention sentences " +
      "(a causal mask or a second sentence is an order of its own)."]));
    at = h("p", { class: "sl-pat-at", "aria-hidden": "true" }, ["Point at a cell to read its weight."]);
    hint = h("p", { class: "sl-pat-hint", hidden: "" }, ["Scroll the grid sideways to see every key →"]);
    if (shuffled) {
      const [a, b] = shuffleGrids(S, v.h, v.m.name);
      kids.push(h("p", null, ["Each word keeps its tag and its subject flag and takes the position of its new slot, as a " +
        "Transformer with position embeddings does (RoPE and ALiBi bring in position differently). Both grids leave out the heads' position biases (a bias " +
        "that compares positions is position information too), so what is left is softmax(q·kᵀ/√d)."]),
      at, hint, h("div", { class: "sl-pat-pair" }, [table(a), table(b)]), summary(S, X, v.q));
    } else kids.push(at, hint, table(current(v)));
    kids.push(learned(v));
    el.patternBody.replaceChildren(...kids.filter(Boolean));
  }

  /** What the shuffle did to each head, for the current query word. */
  function summary(S, X, q) {
    summaryOf = q;
    const order = X.order, slot = order.indexOf(q), word = `“${S.queries[q]}”`;
    const top = row => row.reduce((b, w, j) => w > row[b] ? j : b, 0);
    const items = door.info.heads.filter(m => X.heads[m.id]).map(m => {
      const M = X.heads[m.id], before = top(M.before[q]), after = order[top(M.after[slot])];
      const same = M.before[q].every((w, j) => Math.abs(w - M.after[slot][order.indexOf(j)]) < 1e-9);
      const flat = Math.max(...M.before[q]) - Math.min(...M.before[q]) < 1e-9;
      const text = flat ? `${word} looks for nothing in this head (an even row, in either order); pick a word it looks from.`
        : same ? `${word} still gives “${S.queries[before]}” ${pc(M.before[q][before])}: every weight moved with its word. Its q·k reads tags, not places.`
        : `${word} looked at “${S.queries[before]}”; shuffled, it looks at “${S.queries[after]}”` +
          (slot ? `, the word now before it` : ", itself, now that it is first") + ". This head reads positions only, so it follows the slots, not the words.";
      return h("li", null, [h("b", null, [m.name + ": "]), text]);
    });
    return h("ul", { class: "sl-pat-sum" }, items);
  }

  /** The closest learned head to the current designed head (or, on a real head, which designed head it is closest to). */
  function learned(v) {
    const L = P.learned;
    if (!L?.heads) return null;
    const model = modelName(), name = x => `layer ${x.layer}, head ${x.head}`;
    const define = `Agreement: for each word the designed head looks from, both rows are cut to the sentence's words ([CLS], [SEP] ` +
      `and words ${model} splits differently left out), each rescaled to 100%, and we add up the smaller of the two weights on ` +
      `every word — 100% for the same row, 0% for rows that share nothing (1 − total variation distance). Averaged over the words ` +
      `of ${L.sentences.length} sentences (the self-attention ones above and the head finder's); rows where the designed head looks ` +
      "for nothing (all equal, as coreference from a word that is not a pronoun) are not counted. Computed when the site was built.";
    if (v.real) {
      const mine = Object.entries(L.heads).filter(([, x]) => x.layer === v.layer && x.head === v.head)
        .map(([id, x]) => `the designed ${door.info.heads.find(m => m.id === id)?.name.toLowerCase() || id} head (agreement ${pc1(x.agreement)})`);
      return mine.length ? h("p", { class: "sl-pat-learned" }, [`This is the closest learned head to ${mine.join(" and ")}. `, h("small", null, [define])]) : null;
    }
    const x = L.heads[v.h];
    if (!x) return null;
    const sid = L.words[v.s] ? v.s : door.info.sentence, q = sid === v.s ? v.q : door.info.query;
    const href = `#s=${encodeURIComponent(sid)}&h=L${x.layer}H${x.head}&q=${L.words[sid]?.[q] ?? 1}&scale=1&special=1`;
    return h("p", { class: "sl-pat-learned" }, [`Closest learned head: `, h("a", { href }, [`${name(x)} of ${model}`]),
      `, agreement ${pc1(x.agreement)} over ${x.words} words in ${x.sentences} sentences (next best: ${name(x.next)}, ` +
      `${pc1(x.next.agreement)}${x.agreement - x.next.agreement < 0.01 ? ": nearly a tie" : ""}). ` +
      (sid === v.s ? "The link opens it on this word: its pattern shows here too, so you can compare." : "The link opens it on the first sentence."),
      " ", h("small", null, [define])]);
  }

  /* ---------- painting: only the query changes between builds ---------- */

  function paint(v) {
    if (!door || !el.pattern.open) return;
    const sig = [v.sentenceKey, v.h, v.scale, v.hide, shuffled, v.queries.length, v.keys.length].join("|");
    const focus = el.patternBody.contains(document.activeElement) && document.activeElement;
    const again = focus && (focus.matches(".sl-pat-shuffle") ? ".sl-pat-shuffle"
      : focus.dataset.r !== undefined && [tables.indexOf(focus.closest("table")), focus.dataset.r, focus.dataset.c]);
    const fresh = sig !== built || !el.patternBody.firstChild; // a new grid: whether it scrolls is measured once
    if (fresh) { build(v); built = sig; }
    for (const t of tables) { // the query's button is pressed, the mark moves to its row: nothing else changes
      const stop = t.grid.byQ.get(v.q) || null;
      if (stop === t.grid.on) continue;
      for (const [b, on] of [[t.grid.on, false], [stop, true]]) b?.setAttribute("aria-pressed", on);
      t.grid.on = stop;
      place(t);
      if (!t.querySelector('[tabindex="0"]')) (stop || t.querySelector(".sl-pat-q")).tabIndex = 0;
    }
    if (typeof again === "string") el.patternBody.querySelector(again)?.focus();
    else if (again && !el.patternBody.contains(document.activeElement)) move(tables[again[0]], +again[1], +again[2]);
    if (shuffled && !fresh && summaryOf !== v.q) el.patternBody.querySelector(".sl-pat-sum")?.replaceWith(summary(v.S, P.shuffle[v.S.id], v.q));
    if ((fresh || width !== innerWidth) && tables.length) requestAnimationFrame(measure);
  }

  /** Once per grid (and per window width): whether it scrolls sideways, and where its rows are. */
  function measure() {
    width = innerWidth;
    hint.hidden = tables.every(t => t.parentNode.scrollWidth <= t.parentNode.clientWidth + 1);
    for (const t of tables) {
      const box = t.parentNode; // the row as far as the box shows it, whatever its sideways scroll
      t.grid.boxes = [...t.tBodies[0].rows].map(tr => [box.offsetLeft, box.offsetTop + t.offsetTop + tr.offsetTop,
        Math.min(box.clientWidth, t.offsetLeft + tr.offsetWidth), tr.offsetHeight]);
      place(t);
    }
  }
  /** The mark over the query's row: its place only (a transform), drawn by the compositor. */
  function place(t) {
    const at = t.grid.boxes[+t.grid.on?.dataset.r], m = t.grid.mark;
    if (m.hidden !== !at) m.hidden = !at;
    if (!at) return;
    const size = [at[2] + "px", at[3] + "px"];
    if (m.style.width !== size[0] || m.style.height !== size[1]) [m.style.width, m.style.height] = size;
    m.style.transform = `translate(${at[0]}px, ${at[1]}px)`;
  }

  /* ---------- keyboard: arrows between cells and rows, one Tab stop per grid ---------- */

  function move(t, r, c) {
    if (!t) return;
    r = Math.max(0, Math.min(t.grid.rows - 1, r));
    c = Math.max(-1, Math.min(t.grid.cols - 1, c));
    const to = t.querySelector(`[data-r="${r}"][data-c="${c}"]`);
    if (!to) return;
    for (const x of t.querySelectorAll('[tabindex="0"]')) x.tabIndex = -1;
    to.tabIndex = 0;
    to.focus();
  }

  function onKey(ev) {
    const from = ev.target.closest("[data-c]"), t = from?.closest("table");
    if (!t) return;
    const r = +from.dataset.r, c = +from.dataset.c;
    if ((ev.key === "Enter" || ev.key === " ") && from.matches("td")) {
      ev.preventDefault();
      door.update({ q: +t.querySelector(`.sl-pat-q[data-r="${r}"]`).dataset.q });
      return;
    }
    const to = { ArrowLeft: [r, c - 1], ArrowRight: [r, c + 1], ArrowUp: [r - 1, c], ArrowDown: [r + 1, c],
      Home: ev.ctrlKey ? [0, -1] : [r, -1], End: ev.ctrlKey ? [t.grid.rows - 1, t.grid.cols - 1] : [r, t.grid.cols - 1] }[ev.key];
    if (!to) return;
    ev.preventDefault();
    move(t, ...to);
  }

  /** The percentage of the cell under the pointer or with the focus, in words. */
  function say(td) {
    if (!td?.pattern || !at) return;
    const [q, k, c] = td.pattern;
    at.textContent = c.masked ? `“${q}” → “${k}”: masked, a later word` : `“${q}” → “${k}”: ${c.pct}%`;
  }

  Labs.code.pattern = { start, paint };
})();
