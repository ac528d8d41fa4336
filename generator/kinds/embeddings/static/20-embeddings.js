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

  // -- neighbours ---------------------------------------------------------------------------
  const pick = $("em-item"), nn = $("em-nn"), picked = $("em-picked");
  items.forEach((it, i) => pick.append(h("option", { value: i }, [it.text])));
  let current = 0;
  function select(i, from) {
    current = i;
    pick.value = String(i);
    picked.textContent = `Nearest to “${items[i].text}”:`;
    nn.replaceChildren(...items[i].nn.map(([j, c]) =>
      h("li", { "data-item": items[j].id }, [h("span", { class: "em-cos" }, [f3(c)]), " ", items[j].text])));
    for (const p of map.children) if (p.classList.contains("em-pt")) p.classList.toggle("is-on", +p.dataset.i === i);
    if (from !== "map") moveFocusable(i);
  }
  pick.addEventListener("change", () => select(+pick.value));

  // -- map ----------------------------------------------------------------------------------
  const map = $("em-map");
  const xs = items.map(it => it.xy[0]), ys = items.map(it => it.xy[1]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const pts = items.map((it, i) => h("button", {
    type: "button", class: "em-pt", "data-i": i, tabindex: i ? -1 : 0,
    "aria-label": `${it.text} (group ${it.group || "none"})`,
  }, []));
  const labels = items.map(it => h("span", { class: "em-label", "aria-hidden": "true" }, [short(it.text)]));
  map.append(...pts, ...labels);
  function moveFocusable(i) { pts.forEach((p, j) => p.tabIndex = j === i ? 0 : -1); }
  function layout() {
    const W = map.clientWidth, H = map.clientHeight, pad = 14;
    const px = i => pad + (W - 2 * pad) * (xs[i] - x0) / ((x1 - x0) || 1);
    const py = i => pad + (H - 2 * pad) * (1 - (ys[i] - y0) / ((y1 - y0) || 1));
    const boxes = [];
    pts.forEach((p, i) => { p.style.left = px(i) + "px"; p.style.top = py(i) + "px"; boxes.push([px(i) - 6, py(i) - 6, px(i) + 6, py(i) + 6]); });
    const hit = b => boxes.some(o => b[0] < o[2] && o[0] < b[2] && b[1] < o[3] && o[1] < b[3]);
    labels.forEach((l, i) => {  // greedy: right, left, above, below; none free: no label
      l.hidden = false;
      const w = l.offsetWidth, hh = l.offsetHeight, x = px(i), y = py(i);
      const tries = [[x + 8, y - hh / 2], [x - 8 - w, y - hh / 2], [x - w / 2, y - 8 - hh], [x - w / 2, y + 8]];
      const spot = tries.map(([a, b]) => [a, b, a + w, b + hh]).find(b => b[0] >= 0 && b[2] <= W && b[1] >= 0 && b[3] <= H && !hit(b));
      if (!spot) { l.hidden = true; return; }
      boxes.push(spot);
      l.style.left = spot[0] + "px"; l.style.top = spot[1] + "px";
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
  $("em-explained").textContent = `The two axes are the first two principal components: they hold ${pct(ex[0])} and ${pct(ex[1])} of the spread, ${pct(ex[0] + ex[1])} together. Labels that would overlap are left out; every point has its sentence as its name.`;
  const dis = data.disagree, w = dis.worst;
  $("em-warn").textContent = `Closeness on the map is not closeness in ${data.dim} dimensions: for ${dis.count} of ${dis.of} sentences the nearest point on the map is not the nearest in full.` +
    (w ? ` Worst here: next to “${items[w.item].text}” on the map sits “${items[w.map].text}”, only its neighbour number ${w.rank} in full (cosine ${f3(w.cos)}).` : "");
  const hub = data.hub;
  $("em-hub").textContent = `Hubness: “${items[hub.item].text}” is among the ${hub.k} nearest of ${hub.count} sentences; the average sentence is among the ${hub.k} nearest of ${hub.k}.`;

  // -- matrix -------------------------------------------------------------------------------
  const mx = $("em-matrix"), cell = $("em-cell"), order = data.order;
  const lo = Math.min(0, ...data.S.flat()), shade = c => Math.round(100 * (c - lo) / (1 - lo));
  mx.style.setProperty("--n", n);
  mx.setAttribute("aria-label", `Cosine similarity matrix of ${n} sentences`);
  const cells = [];
  order.forEach((i, r) => order.forEach((j, c) => {
    const el = h("span", { class: "em-c", "data-r": r, "data-c": c });
    el.style.setProperty("--v", shade(data.S[i][j]) + "%");
    cells.push(el);
  }));
  mx.append(...cells);
  $("em-scale-lo").textContent = f3(lo); $("em-scale-hi").textContent = f3(1);
  let at = [0, 1];
  function show(r, c) {
    at = [r, c];
    cells.forEach(e => e.classList.remove("is-at"));
    cells[r * n + c].classList.add("is-at");
    const i = order[r], j = order[c];
    cell.textContent = `“${items[i].text}” × “${items[j].text}”: cosine ${f3(data.S[i][j])}`;
  }
  mx.addEventListener("mouseover", ev => { const e = ev.target.closest(".em-c"); if (e) show(+e.dataset.r, +e.dataset.c); });
  mx.addEventListener("click", ev => { const e = ev.target.closest(".em-c"); if (e) show(+e.dataset.r, +e.dataset.c); });
  mx.addEventListener("focus", () => show(...at));
  mx.addEventListener("keydown", ev => {
    const d = { ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[ev.key];
    if (!d) return;
    ev.preventDefault();
    show(Math.min(n - 1, Math.max(0, at[0] + d[0])), Math.min(n - 1, Math.max(0, at[1] + d[1])));
  });
  if (data.crossMean != null) {
    $("em-aniso").textContent = `Anisotropy: pairs from different groups average cosine ${f3(data.crossMean)} with the mean-pooled vectors this model was trained with; with the raw [CLS] vectors of the same sentences, ${f3(data.crossMeanCls)}.`;
  }

  // -- search over the author's queries, and the retrieval example ----------------------------
  const qpick = $("em-pick"), results = $("em-results");
  const ranked = list => list.map(([j, c]) => h("li", {}, [h("span", { class: "em-cos" }, [f3(c)]), " ", items[j].text]));
  (data.queries || []).forEach((q, m) => qpick.append(h("option", { value: m }, [q.text])));
  function search(m) { results.replaceChildren(...ranked(data.queries[m].ranked.slice(0, 5))); }
  if (data.queries?.length) { qpick.addEventListener("change", () => search(+qpick.value)); search(0); }
  else qpick.closest(".em-search").hidden = true;
  // -- live search: the in-page model, only when the learner asks -----------------------------
  const live = data.live, test = ((window.Labs.test ||= {}).embeddings = {});
  if (live && $("em-load")) {
    const load = $("em-load"), cancel = $("em-cancel"), bar = $("em-progress"), status = $("em-status");
    const form = $("em-form"), input = $("em-query");
    let model = null, vectors = null;
    const mb = (live.download_bytes / 1e6).toFixed(1);
    // The 8-bit model's closeness, measured when it was packed (bundle.json): a bound rounded up.
    const e = live.expect, up3 = x => (Math.ceil(x * 1000 - 1e-9) / 1000).toFixed(3);
    $("em-live-hint").textContent = `Or search with your own words: that runs the ${live.model} model in this page with ` +
      `8-bit weights, a ${mb} MB download the first time. ` + (e ? `In our tests on ${e.count} sentences, a cosine computed ` +
      `with them was within ${up3(e.worst)} of the full model's (about ${e.median.toFixed(3)} typically).` :
      "How close its cosines come to the full model's was not measured.");
    $("em-license").href = live.license;
    $("em-license").textContent = `${live.model} licence`;
    load.textContent = `Load the model (${mb} MB)`;
    async function embed(text) {  // mean over every piece ([CLS] and [SEP] too), then unit length
      const out = await model.run(model.tokenizer.encode(text).ids), d = out.d, v = new Float64Array(d);
      for (let i = 0; i < out.n; i++) for (let k = 0; k < d; k++) v[k] += out.hidden[i * d + k];
      let norm = 0;
      for (let k = 0; k < d; k++) norm += v[k] * v[k];
      norm = Math.sqrt(norm);
      return Array.from(v, x => x / norm);
    }
    test.embed = text => embed(text);
    load.addEventListener("click", async () => {
      const ui = { load, cancel, bar, status, still: "The queries above still work." };
      try {
        await u.load(live.code);
        await u.load(live.vectors);
      } catch { status.textContent = `The model's files could not be loaded. ${ui.still}`; return; }
      vectors = window.Labs.data.embeddingVectors;
      model = await window.Labs.runtime.loadShown(ui, { manifestSrc: live.manifest, worker: false });
      if (!model) return;
      status.textContent = "The model is ready: type a search and press Enter.";
      form.hidden = false;
      input.focus();
    });
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
        status.textContent = `Ranked by cosine to “${text}”, embedded in this page.`;
      } catch (err) {
        status.textContent = `The search failed: ${err?.message || err}`;
      }
    });
  }

  const rag = $("em-rag");
  if (data.rag) {
    const q = data.queries[data.rag.query];
    rag.append(
      h("p", {}, [`Question: “${q.text}”. Retrieval ranks every stored sentence by cosine and keeps the top ${data.rag.k}; in a RAG system their text would be handed to a language model as context:`]),
      h("ol", { class: "em-list", "aria-label": `Top ${data.rag.k} retrieved` }, ranked(q.ranked.slice(0, data.rag.k))),
      h("p", { class: "em-hint" }, ["Retrieval only: no answer is generated in this lab."]));
  } else rag.previousElementSibling.hidden = rag.hidden = true;

  nojs.hidden = true;
  app.hidden = false;
  select(0);
  layout();
  window.addEventListener("resize", layout);
  root.dataset.ready = "true";
})();
