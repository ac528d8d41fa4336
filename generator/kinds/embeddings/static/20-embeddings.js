/* The embeddings lab (#embeddings): neighbours, the PCA map, the cosine matrix, search over the
   author's queries and the retrieval example, all from the numbers the build embeds in #lab-data
   (generator/kinds/embeddings/compute.py: items[].nn, items[].xy, S, queries[].ranked, …).
   Nothing is computed here but layout. */
(() => {
  "use strict";
  const root = document.getElementById("embeddings");
  if (!root) return;
  const u = window.Labs.util, { h } = u;
  const data = u.readJSON("lab-data");
  const nojs = root.querySelector(".em-nojs"), app = root.querySelector(".em-app");
  if (!data?.items?.length || !data.S) {
    nojs.firstElementChild.textContent = "The map's data is missing from this page.";
    return;
  }
  const items = data.items, n = items.length, $ = id => document.getElementById(id);
  const f3 = x => (x < 0 ? "−" : "") + Math.abs(x).toFixed(3), pct = x => (100 * x).toFixed(1) + "%";
  const short = t => t.length > 28 ? t.slice(0, 27) + "…" : t;
  const MAX_PIECES = 256;  // the model's max_seq_length in sentence-transformers

  // The learner's place is kept in the address with replaceState (no history entry per click),
  // so a reload or a shared link opens on the same sentence and search.
  const saved = new URLSearchParams(location.hash.slice(1));
  const start = Math.max(0, items.findIndex(it => it.id === saved.get("s")));
  let asked = (saved.get("q") || "").slice(0, 300);
  function keep() {
    const p = new URLSearchParams();
    if (current) p.set("s", items[current].id);
    if (asked) p.set("q", asked);
    const target = p.toString() ? "#" + p : "", ours = /^#(s|q)=/.test(location.hash);
    if ((target || ours) && target !== location.hash) history.replaceState(null, "", target || location.pathname + location.search);
  }

  // Groups in the order of their first item: colour, legend and the matrix's labels share it.
  const groups = [...new Set(items.map(it => it.group))], gi = it => groups.indexOf(it.group);
  const gname = g => g || "no group", band = data.unrelated;
  // A cosine as a bar from 0 to 1 over the band where most pairs of unrelated sentences fall.
  const part = (cls, x) => { const e = h("span", { class: cls }); e.style.width = (100 * Math.max(0, x)).toFixed(1) + "%"; return e; };
  const bar = c => h("span", { class: "em-bar", "aria-hidden": "true" }, [band && part("em-band", band.below), part("em-fill", c)]);
  const ranked = list => list.map(([j, c]) => h("li", { "data-item": items[j].id },
    [bar(c), h("span", { class: "em-cos" }, [f3(c)]), " ", items[j].text]));
  if (band) $("em-band").textContent = `Bars: cosine from 0 to 1. Shaded: below ${f3(band.below)}, where ${Math.round(100 * band.share)}% ` +
    "of the pairs of sentences from different groups fall; a neighbour there is no closer than sentences about other things.";

  // -- neighbours ---------------------------------------------------------------------------
  const pick = $("em-item"), nn = $("em-nn"), picked = $("em-picked");
  items.forEach((it, i) => pick.append(h("option", { value: i }, [it.text])));
  let current = 0;
  function select(i, from) {
    current = i;
    pick.value = String(i);
    picked.textContent = `Nearest to “${items[i].text}”, by cosine:`;
    nn.replaceChildren(...ranked(items[i].nn));
    pts.forEach((p, j) => { p.classList.toggle("is-on", j === i); if (j === i) p.setAttribute("aria-current", "true"); else p.removeAttribute("aria-current"); });
    if (from !== "map") moveFocusable(i);
    layout();
    keep();
  }
  pick.addEventListener("change", () => select(+pick.value));

  // -- map ----------------------------------------------------------------------------------
  const map = $("em-map"), SVG = "http://www.w3.org/2000/svg";
  const xs = items.map(it => it.xy[0]), ys = items.map(it => it.xy[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const pts = items.map((it, i) => h("button", {
    type: "button", class: `em-pt em-g${gi(it) % 8}`, "data-i": i, tabindex: i ? -1 : 0,
    "aria-label": `${it.text} (group ${gname(it.group)})`,
  }, []));
  const labels = items.map(it => h("span", { class: "em-label", "aria-hidden": "true" }, [short(it.text)]));
  const lines = h("svg", { class: "em-lines", "aria-hidden": "true" }, [], SVG);
  map.append(lines, ...pts, ...labels);
  $("em-legend").replaceChildren(...groups.map((g, k) => h("li", {}, [h("span", { class: `em-swatch em-g${k % 8}` }), gname(g)])));
  function moveFocusable(i) { pts.forEach((p, j) => p.tabIndex = j === i ? 0 : -1); }
  function layout() {
    const W = map.clientWidth, H = map.clientHeight, pad = 14;
    const px = i => pad + (W - 2 * pad) * (xs[i] - x0) / ((x1 - x0) || 1);
    const py = i => pad + (H - 2 * pad) * (1 - (ys[i] - y0) / ((y1 - y0) || 1));
    const boxes = [], near = items[current].nn.map(([j]) => j);
    lines.replaceChildren(...near.map(j => h("line", { x1: px(current), y1: py(current), x2: px(j), y2: py(j) }, [], SVG)));
    pts.forEach((p, i) => { p.style.left = px(i) + "px"; p.style.top = py(i) + "px"; boxes.push([px(i) - 6, py(i) - 6, px(i) + 6, py(i) + 6]); });
    const crosses = (b, list) => list.some(o => b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]);
    // The picked sentence and its true nearest first, so they always find room; then the rest.
    const first = [current, ...near], order = [...first, ...items.keys()].filter((i, k, a) => a.indexOf(i) === k);
    // Each label's size as its sentence, and a neighbour's as its number: measured in two passes
    // (two layouts of the page), not once per label and try.
    const full = i => near.includes(i) ? `${near.indexOf(i) + 1}. ${short(items[i].text)}` : short(items[i].text);
    const sized = (list, text, num) => {
      list.forEach(i => {
        const l = labels[i];
        l.textContent = text(i);
        l.hidden = false;
        l.classList.toggle("is-near", near.includes(i));
        l.classList.toggle("is-picked", i === current);
        l.classList.toggle("is-num", num);
      });
      return new Map(list.map(i => [i, [labels[i].offsetWidth, labels[i].offsetHeight]]));
    };
    const asFull = sized(order, full, false), asNum = sized(near, i => `${near.indexOf(i) + 1}`, true);
    order.forEach(i => {  // greedy: beside, above, below; none free: no label
      const l = labels[i], rank = near.indexOf(i);
      // A neighbour with no room for its sentence gets its number alone, which the list explains.
      // Relaxed, a label of this pick may cross another sentence's point, never a label or a point it names.
      const num = `${rank + 1}`;
      const attempts = rank >= 0 ? [[full(i), false], [num, false], [num, true]] : i === current ? [[full(i), false], [full(i), true]] : [[full(i), false]];
      for (const [text, relaxed] of attempts) {
        const [w, hh] = (text === num ? asNum : asFull).get(i), x = px(i), y = py(i);
        const mid = Math.min(Math.max(x - w / 2, 0), W - w);  // centred on the point, kept inside the map
        const tries = [[x + 8, y - hh / 2], [x - 8 - w, y - hh / 2], [x - w / 2, y - 8 - hh], [x - w / 2, y + 8],
          [x + 4, y - 6 - hh], [x - 4 - w, y - 6 - hh], [x + 4, y + 6], [x - 4 - w, y + 6], [mid, y + 8], [mid, y - 8 - hh]];
        if (i === current) tries.push([mid, y + 8 + hh], [mid, y - 8 - 2 * hh]);
        if (relaxed) for (const r of [10, 18, 26]) for (let a = 0; a < 8; a++)  // further out, round the point
          tries.push([x + r * Math.cos(a * Math.PI / 4) - w / 2, y + r * Math.sin(a * Math.PI / 4) - hh / 2]);
        const taken = b => crosses(b, relaxed ? boxes.slice(n).concat(first.map(j => boxes[j])) : boxes);
        const spot = tries.map(([a, b]) => [a, b, a + w, b + hh])
          .find(b => b[0] >= 0 && b[2] <= W && b[1] >= 0 && b[3] <= H && !taken(b));
        if (spot) {
          boxes.push(spot);
          l.textContent = text;
          l.classList.toggle("is-num", text === num);
          l.classList.toggle("is-over", relaxed);
          l.style.left = spot[0] + "px"; l.style.top = spot[1] + "px";
          return;
        }
      }
      l.hidden = true;
    });
  }
  map.addEventListener("click", ev => { const p = ev.target.closest(".em-pt"); if (p) select(+p.dataset.i, "map"); });
  map.addEventListener("focusin", ev => { const p = ev.target.closest(".em-pt"); if (p) { moveFocusable(+p.dataset.i); select(+p.dataset.i, "map"); } });
  map.addEventListener("keydown", ev => {  // arrows: the nearest point in that direction
    const p = ev.target.closest(".em-pt");
    const dir = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowUp: [0, 1], ArrowDown: [0, -1] }[ev.key];
    if (!p || !dir) return;
    ev.preventDefault();
    const i = +p.dataset.i;
    let best = -1, bestD = Infinity;
    items.forEach((_, j) => {
      const dx = (xs[j] - xs[i]) / ((x1 - x0) || 1), dy = (ys[j] - ys[i]) / ((y1 - y0) || 1);
      const along = dx * dir[0] + dy * dir[1], across = Math.abs(dx * dir[1] - dy * dir[0]);
      if (j === i || along <= 0) return;
      const d = along + 2 * across;
      if (d < bestD) { bestD = d; best = j; }
    });
    if (best >= 0) { moveFocusable(best); pts[best].focus(); }
  });
  const ex = data.explained;
  $("em-explained").textContent = `The two axes are the first two principal components: they hold ${pct(ex[0])} and ${pct(ex[1])} of the spread, ${pct(ex[0] + ex[1])} together. Labels that would overlap are left out; the picked sentence and its ${items[0].nn.length} nearest (in ${data.dim} dimensions, joined by lines) are always labelled.`;
  const dis = data.disagree, w = dis.worst;
  $("em-warn").textContent = `Closeness on the map is not closeness in ${data.dim} dimensions: for ${dis.count} of ${dis.of} sentences the nearest point on the map is not the nearest in full.` +
    (w ? ` Worst here: next to “${items[w.item].text}” on the map sits “${items[w.map].text}”, only its neighbour number ${w.rank} in full (cosine ${f3(w.cos)}).` : "");
  const hub = data.hub;
  $("em-hub").textContent = `The most-shared neighbour: “${items[hub.item].text}” is among the ${hub.k} nearest of ${hub.count} other sentences. ` +
    `${n} random points in ${data.dim} dimensions give their most-shared point ${hub.chance.toFixed(1)} on average (${hub.trials} draws), so ` +
    (hub.count >= hub.rare ? `they reach ${hub.rare} in fewer than 1 in 100 draws: this sentence is a hub.`
      : "this is within what chance gives, not hubness, which shows in collections of thousands of vectors.");

  // -- matrix -------------------------------------------------------------------------------
  const mx = $("em-matrix"), cell = $("em-cell"), order = data.order;
  const lo = Math.min(0, ...data.S.flat()), shade = c => Math.round(100 * (c - lo) / (1 - lo));
  mx.style.setProperty("--n", n);
  mx.setAttribute("aria-label", `Cosine similarity matrix of ${n} sentences`);
  const cells = [];
  const edge = r => r > 0 && items[order[r]].group !== items[order[r - 1]].group;  // a group's first row or column
  // The n² cells are most of the page's elements and of its first layout: they are drawn when the
  // matrix nears the screen, or when the learner reaches it (focus, pointer) before that.
  function drawCells() {
    if (cells.length) return;
    order.forEach((i, r) => order.forEach((j, c) => {
      // The first row and column carry the group colour of their column and row, as the legend does.
      const strip = r === 0 ? ` em-top em-g${gi(items[j]) % 8}` : c === 0 ? ` em-left em-g${gi(items[i]) % 8}` : "";
      const el = h("span", { class: `em-c${edge(r) ? " em-gt" : ""}${edge(c) ? " em-gl" : ""}${strip}`, "data-r": r, "data-c": c });
      el.style.setProperty("--v", shade(data.S[i][j]) + "%");
      cells.push(el);
    }));
    mx.append(...cells);
  }
  if ("IntersectionObserver" in window) {
    const near = new IntersectionObserver(es => { if (es.some(e => e.isIntersecting)) { near.disconnect(); drawCells(); } }, { rootMargin: "400px" });
    near.observe(mx);
  } else drawCells();
  for (const type of ["focus", "pointerover", "pointerdown"]) mx.addEventListener(type, drawCells);
  $("em-scale-lo").textContent = f3(lo); $("em-scale-hi").textContent = f3(1);
  const starts = order.map((i, r) => r).filter(r => r === 0 || edge(r));
  $("em-groups").textContent = "Rows and columns, top to bottom and left to right: " + starts.map((r, k) =>
    `${gname(items[order[r]].group)} (${r + 1}–${(starts[k + 1] ?? n)})`).join(", ") + ". Home and End go to the row's ends.";
  let at = [0, 1];
  function show(r, c) {
    drawCells();
    at = [r, c];
    cells.forEach(e => e.classList.remove("is-at"));
    cells[r * n + c].classList.add("is-at");
    const i = order[r], j = order[c];
    cell.textContent = `“${items[i].text}” (${gname(items[i].group)}) × “${items[j].text}” (${gname(items[j].group)}): cosine ${f3(data.S[i][j])}`;
  }
  mx.addEventListener("mouseover", ev => { const e = ev.target.closest(".em-c"); if (e) show(+e.dataset.r, +e.dataset.c); });
  mx.addEventListener("click", ev => { const e = ev.target.closest(".em-c"); if (e) show(+e.dataset.r, +e.dataset.c); });
  mx.addEventListener("focus", () => show(...at));
  mx.addEventListener("keydown", ev => {
    const d = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[ev.key];
    const ends = { Home: [ev.ctrlKey ? 0 : at[0], 0], End: [ev.ctrlKey ? n - 1 : at[0], n - 1] }[ev.key];
    if (!d && !ends) return;
    ev.preventDefault();
    if (ends) show(...ends);
    else show(Math.min(n - 1, Math.max(0, at[0] + d[0])), Math.min(n - 1, Math.max(0, at[1] + d[1])));
  });
  const cls = data.cls;
  if (data.crossMean != null && cls) {
    $("em-aniso").textContent = `Pairs from different groups average cosine ${f3(data.crossMean)} with the mean-pooled vectors this model was trained with. ` +
      `With the raw [CLS] vectors of the same sentences they average ${f3(cls.mean)}: coordinate ${cls.dim} averages ${f3(cls.value)} in these [CLS] vectors (of length 1) ` +
      `and alone adds ${f3(cls.adds)} to a pair's cosine. Subtract the [CLS] vectors' shared mean and the average is ${f3(cls.centred)}.`;
  }

  // -- search over the author's queries, and the retrieval example ----------------------------
  const qpick = $("em-pick"), results = $("em-results");
  (data.queries || []).forEach((q, m) => qpick.append(h("option", { value: m }, [q.text])));
  function search(m) { results.replaceChildren(...ranked(data.queries[m].ranked.slice(0, 5))); }
  if (data.queries?.length) { qpick.addEventListener("change", () => search(+qpick.value)); search(0); }
  else qpick.closest(".em-search").hidden = true;
  // -- live search: the in-page model, only when the learner asks -----------------------------
  const live = data.live, test = ((window.Labs.test ||= {}).embeddings = {});
  if (live && $("em-load")) {
    const load = $("em-load"), cancel = $("em-cancel"), progress = $("em-progress"), status = $("em-status");
    const form = $("em-form"), input = $("em-query");
    let model = null, vectors = null;
    const mb = (live.download_bytes / 1e6).toFixed(1);
    // The 8-bit model's closeness, measured when it was packed (bundle.json): a bound rounded up.
    const e = live.expect, up3 = x => (Math.ceil(x * 1000 - 1e-9) / 1000).toFixed(3);
    $("em-live-hint").textContent = `Or search with your own words: that runs the ${live.model} model in this page with ` +
      `8-bit weights, a ${mb} MB download the first time. ` + (e ? `In our tests on ${e.count} sentences, a cosine computed ` +
      `with them was within ${up3(e.worst)} of the full model's (about ${e.median.toFixed(3)} typically).` :
      "How close its cosines come to the full model's was not measured.") +
      " It was trained on English text: it ranks other languages and emoji too, but those rankings mean little.";
    $("em-license").href = live.license;
    $("em-license").textContent = `${live.model} licence`;
    load.textContent = `Load the model (${mb} MB)`;
    let cut = false;
    async function embed(text) {  // mean over every piece ([CLS] and [SEP] too), then unit length
      let ids = model.tokenizer.encode(text).ids;
      cut = ids.length > MAX_PIECES;  // as sentence-transformers reads it: [CLS], the first 254 pieces, [SEP]
      if (cut) ids = [...ids.slice(0, MAX_PIECES - 1), ids[ids.length - 1]];
      const out = await model.run(ids), d = out.d, v = new Float64Array(d);
      for (let i = 0; i < out.n; i++) for (let k = 0; k < d; k++) v[k] += out.hidden[i * d + k];
      let norm = 0;
      for (let k = 0; k < d; k++) norm += v[k] * v[k];
      norm = Math.sqrt(norm);
      return Array.from(v, x => x / norm);
    }
    test.embed = text => embed(text);
    load.addEventListener("click", async () => {
      const ui = { load, cancel, bar: progress, status, still: "The queries above still work." };
      try {
        await u.load(live.code);
        await u.load(live.vectors);
      } catch {  // blame the connection only when it is the cause
        status.textContent = `The model could not be loaded: ${navigator.onLine ? "its files could not be read"
          : "this device is offline, so its files could not be downloaded; try again when connected"}. ${ui.still}`;
        return;
      }
      vectors = window.Labs.data.embeddingVectors;
      model = await window.Labs.runtime.loadShown(ui, { manifestSrc: live.manifest, worker: false });
      if (!model) return;
      status.textContent = "The model is ready: type a search and press Enter.";
      form.hidden = false;
      input.focus();
      if (input.value.trim()) form.requestSubmit();  // the search kept in the address
    });
    if (asked) {
      input.value = asked;
      status.textContent = `Your search “${asked}” is kept in this page's address: load the model to run it.`;
    }
    form.addEventListener("submit", async ev => {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text || !model) return;
      status.textContent = "Embedding…";
      try {
        const q = await embed(text);
        const cos = vectors.map(v => v.reduce((s, x, k) => s + x * q[k], 0));
        const order = cos.map((c, j) => j).sort((a, b) => cos[b] - cos[a] || a - b);
        results.replaceChildren(...ranked(order.slice(0, 5).map(j => [j, cos[j]])));
        status.textContent = `Ranked by cosine to “${text}”, embedded in this page` +
          (cut ? `, read as its first ${MAX_PIECES} word pieces as the model reads every text.` : ".");
        asked = text;
        keep();
      } catch (err) {
        status.textContent = `The search failed: ${err?.message || err}`;
      }
    });
  }

  // Top-k hands on k passages whatever their cosine: say how many of them are no closer than unrelated text.
  const ragBand = top => {
    const weak = band ? top.filter(([, c]) => c < band.below).length : 0;
    return weak ? `${weak} of these ${top.length} ${weak === 1 ? "is" : "are"} in the unrelated band (below ${f3(band.below)}), handed on ` +
      "all the same: top-k always returns k, so a real system also sets a threshold or re-scores the candidates. " : "";
  };
  const rag = $("em-rag");
  if (data.rag) {
    const q = data.queries[data.rag.query];
    rag.append(
      h("p", {}, [`Question: “${q.text}”. Retrieval ranks every stored sentence by cosine and keeps the top ${data.rag.k}; in a RAG system their text would be handed to a language model as context:`]),
      h("ol", { class: "em-list", "aria-label": `Top ${data.rag.k} retrieved` }, ranked(q.ranked.slice(0, data.rag.k))),
      h("p", { class: "em-hint" }, [ragBand(q.ranked.slice(0, data.rag.k)) + "Retrieval only: no answer is generated in this lab."]));
  } else rag.previousElementSibling.hidden = rag.hidden = true;

  nojs.hidden = true;
  app.hidden = false;
  select(start);
  window.addEventListener("resize", layout);
  root.dataset.ready = "true";
})();
