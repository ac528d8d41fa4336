/* The sampling dial (#sampling): temperature, top-k, top-p and a seeded sampler.
   The build embeds, for every context and every temperature of the grid, the probabilities as
   whole parts of data.parts (contexts[].p[t][n]); this script only picks a row, cuts it with
   top-k then top-p, renormalises what is left (largest remainder: percentages add up to 100)
   and draws with mulberry32(seed) — Labs.code.sampling, in 10-core.js.
   Draws are reproducible: the same context, temperature, top-k, top-p and seed give the same
   words in the same order, so any change of setting starts the draws over.
   State in the URL hash: #c=<context>&t=<temperature>&k=<top-k>&p=<top-p %>&seed=<seed> */
(() => {
  "use strict";
  const root = document.getElementById("sampling");
  if (!root) return;
  const Labs = window.Labs, u = Labs.util, S = Labs.code.sampling, { h } = u;
  const data = u.readJSON("lab-data");
  const nojs = root.querySelector(".sa-nojs"), app = root.querySelector(".sa-app");
  if (!data?.contexts?.length || !data.temps?.length || !S) {
    nojs.firstElementChild.textContent = "The dial's data is missing from this page.";
    return;
  }

  // Every element with an id "sa-foo-bar" is el.fooBar.
  const el = {};
  for (const n of root.querySelectorAll("[id^=sa-]")) el[n.id.slice(3).replace(/-(\w)/g, (m, c) => c.toUpperCase())] = n;

  const temps = data.temps, contexts = new Map(data.contexts.map(c => [c.id, c]));
  const tText = t => String(+Number(t).toFixed(4));
  const pText = p => p >= 100 ? "off" : (p / 100).toFixed(2);
  const MAX_SEED = 4294967295, MANY = 20, HISTORY = 30;

  const state = {
    context: contexts.has(data.default?.context) ? data.default.context : data.contexts[0].id,
    t: Number.isInteger(data.default?.t) ? data.default.t : 0,
    k: 0,
    p: 100,
    seed: Number.isInteger(data.seed) ? data.seed : 42
  };
  let rng = null, drawn = [], tally = [];

  /* ---------- controls ---------- */
  const ctxOf = () => contexts.get(state.context);
  function fillContexts() {
    for (const c of data.contexts) el.context.append(h("option", { value: c.id }, [c.text + " …"]));
    el.contextField.hidden = data.contexts.length < 2;
  }
  function fillTopK() {
    const n = ctxOf().words.length, keep = state.k;
    el.topk.replaceChildren(h("option", { value: "0" }, ["off (all " + n + ")"]));
    for (let k = 1; k < n; k++) el.topk.append(h("option", { value: String(k) }, [String(k)]));
    state.k = keep > 0 && keep < n ? keep : 0;
  }
  function syncControls() {
    el.context.value = state.context;
    el.temp.value = String(state.t);
    el.temp.setAttribute("aria-valuetext", "T = " + tText(temps[state.t]));
    el.tempOut.textContent = "T = " + tText(temps[state.t]);
    el.topk.value = String(state.k);
    el.topp.value = String(state.p);
    el.toppOut.textContent = "p = " + pText(state.p);
    el.topp.setAttribute("aria-valuetext", state.p >= 100 ? "off" : "p = " + pText(state.p));
    el.seed.value = String(state.seed);
  }

  /* ---------- what the bars show ---------- */
  function current() {
    const C = ctxOf(), full = C.p[state.t], mask = S.keep(full, state.k, state.p);
    const kept = full.map((x, j) => mask[j] ? x : 0), total = u.sum(kept);
    return { C, full, mask, kept, total, before: u.roundShares(full, 100), after: u.roundShares(kept, 100),
      left: mask.filter(Boolean).length };
  }

  // A whole percentage, except where rounding would say something false: a chance that rounds to
  // 0 but is not 0 reads "<1%" (that word can still be drawn; "0%" would say it cannot), and one
  // that rounds to 100 while other words can still be drawn reads ">99%".
  const pctText = (pct, parts, total) => pct === 0 && parts > 0 ? "<1%" : pct === 100 && parts < total ? ">99%" : pct + "%";

  let rows = [];
  function build() {
    const C = ctxOf();
    el.text.textContent = C.text;
    el.note.textContent = C.note || "";
    el.note.hidden = !C.note;
    rows = C.words.map(word => {
      const ghost = h("span", { class: "sa-ghost" }), fill = h("span", { class: "sa-fill" });
      const pct = h("span", { class: "sa-pct" }), was = h("span", { class: "sa-was" }), count = h("td", { class: "sa-count" });
      const tr = h("tr", {}, [h("th", { scope: "row", class: "sa-word" }, [word]),
        h("td", { class: "sa-bar-cell", "aria-hidden": "true" }, [h("span", { class: "sa-track" }, [ghost, fill])]),
        h("td", { class: "sa-pct-cell" }, [pct, was]), count]);
      return { tr, ghost, fill, pct, was, count };
    });
    el.bars.tBodies[0].replaceChildren(...rows.map(r => r.tr));
    el.math.tBodies[0].replaceChildren(...C.words.map((w, j) => h("tr", {}, [h("th", { scope: "row" }, [w]),
      h("td", {}, [u.fmt(C.logits[j], 2)]), h("td", {}, []), h("td", {}, [])])));
  }

  function paint() {
    const v = current(), C = v.C, T = temps[state.t], cuts = v.left < C.words.length;
    el.caption.textContent = `Next word after “${C.text} …” at T = ${tText(T)}` +
      (state.k ? `, top-k ${state.k}` : "") + (state.p < 100 ? `, top-p ${pText(state.p)}` : "");
    // A bar's length is the word's chance: the whole track is 100%. The pale bar behind it is
    // the chance before top-k and top-p; the solid one the renormalised chance after.
    rows.forEach((r, j) => {
      const isCut = !v.mask[j], share = v.total ? v.kept[j] / v.total : 0;
      r.tr.classList.toggle("is-cut", isCut);
      r.ghost.style.width = (v.full[j] / data.parts * 100).toFixed(2) + "%";
      r.fill.style.width = (share * 100).toFixed(2) + "%";
      r.pct.textContent = isCut ? "cut" : pctText(v.after[j], v.kept[j], v.total);
      r.was.textContent = isCut ? `was ${pctText(v.before[j], v.full[j], data.parts)}`
        : cuts && v.after[j] !== v.before[j] ? `from ${pctText(v.before[j], v.full[j], data.parts)}` : "";
      r.tr.title = isCut ? `Cut by ${state.k && state.p < 100 ? "top-k or top-p" : state.k ? "top-k" : "top-p"}` : "";
      r.count.textContent = tally[j] ? String(tally[j]) : "";
    });
    el.summary.textContent = cuts
      ? `${state.k && state.p < 100 ? "Top-k and top-p keep" : state.k ? "Top-k keeps" : "Top-p keeps"} ${v.left} of ${C.words.length} words; their chances are renormalised to add up to 100%. A cut word's pale bar shows the chance it had.`
      : `All ${C.words.length} words stay in. The chances add up to 100%.`;
    el.mathT.textContent = `Logit ÷ ${tText(T)}`;
    [...el.math.tBodies[0].rows].forEach((tr, j) => {
      tr.cells[2].textContent = u.fmt(C.logits[j] / T, 2);
      tr.cells[3].textContent = (v.full[j] / data.parts * 100).toFixed(2) + "%";
    });
    el.next.textContent = drawn.length ? C.words[drawn[drawn.length - 1]] : "…";
    el.next.classList.toggle("is-drawn", drawn.length > 0);
    el.draws.textContent = drawn.length
      ? `${drawn.length} draw${drawn.length === 1 ? "" : "s"} with seed ${state.seed}; the latest: “${C.words[drawn[drawn.length - 1]]}”.`
      : `No draws yet. Seed ${state.seed}: the same settings and seed always draw the same words.`;
  }

  /* ---------- sampling ---------- */
  function restart() {
    rng = S.mulberry32(state.seed);
    drawn = [];
    tally = ctxOf().words.map(() => 0);
    el.history.replaceChildren();
  }
  function sample(n) {
    const v = current(), C = v.C, got = [];
    for (let i = 0; i < n; i++) {
      const j = S.draw(v.kept, rng());  // cut words weigh 0: never drawn
      drawn.push(j);
      tally[j]++;
      got.push(j);
    }
    const items = got.map(j => h("li", {}, [C.words[j]]));
    el.history.append(...items);
    while (el.history.children.length > HISTORY) el.history.firstElementChild.remove();
    paint();
    if (n === 1) say(`Draw ${drawn.length}: ${C.words[got[0]]}.`);
    else {
      const counts = C.words.map((w, j) => [w, got.filter(x => x === j).length]).filter(x => x[1]);
      say(`${n} more draws: ` + counts.map(([w, c]) => `${w} ${c}`).join(", ") + `. ${drawn.length} in all.`);
    }
  }

  /* ---------- announcements and the URL ---------- */
  let sayTimer = 0;
  function say(text, later) {
    clearTimeout(sayTimer);
    if (later) sayTimer = setTimeout(() => { el.live.textContent = text; }, 400);
    else el.live.textContent = text;
  }
  function describe() {
    const v = current(), C = v.C;
    const shown = C.words.map((w, j) => [w, v.after[j], v.kept[j]]).filter(x => x[2] > 0).slice(0, 4);
    return `T = ${tText(temps[state.t])}` + (state.k ? `, top-k ${state.k}` : "") + (state.p < 100 ? `, top-p ${pText(state.p)}` : "") +
      ": " + shown.map(([w, p, parts]) => `${w} ${pctText(p, parts, v.total)}`).join(", ") +
      (v.left > shown.length ? `, and ${v.left - shown.length} more` : "") +
      (v.left < C.words.length ? `. ${C.words.length - v.left} cut.` : ".") + (drawn.length ? "" : " Draws start over.");
  }
  function writeHash() {
    const q = `c=${encodeURIComponent(state.context)}&t=${tText(temps[state.t])}` + (state.k ? `&k=${state.k}` : "") +
      (state.p < 100 ? `&p=${state.p}` : "") + (state.seed !== data.seed ? `&seed=${state.seed}` : "");
    try { history.replaceState(null, "", "#" + q); } catch { /* file:// in some browsers */ }
  }
  function readHash() {
    const m = new URLSearchParams(location.hash.slice(1));
    if (!m.has("c") && !m.has("t")) return false;
    if (contexts.has(m.get("c"))) state.context = m.get("c");
    const t = Number(m.get("t")), at = temps.findIndex(x => Math.abs(x - t) < 1e-9);
    if (m.has("t") && at >= 0) state.t = at;
    const k = parseInt(m.get("k"), 10), p = parseInt(m.get("p"), 10), seed = Number(m.get("seed"));
    state.k = k > 0 ? k : 0;
    state.p = p >= 1 && p <= 100 ? p : 100;
    if (m.has("seed") && Number.isInteger(seed) && seed >= 0 && seed <= MAX_SEED) state.seed = seed;
    return true;
  }

  /* ---------- wiring ---------- */
  function changed(rebuild) {
    if (rebuild) { fillTopK(); build(); }
    restart();
    syncControls();
    paint();
    writeHash();
    say(describe(), true);
  }
  el.context.addEventListener("change", () => { state.context = el.context.value; changed(true); });
  el.temp.addEventListener("input", () => { state.t = +el.temp.value; changed(false); });
  el.topk.addEventListener("change", () => { state.k = +el.topk.value; changed(false); });
  el.topp.addEventListener("input", () => { state.p = +el.topp.value; changed(false); });
  el.seed.addEventListener("change", () => {
    const s = Number(el.seed.value);
    const ok = Number.isInteger(s) && s >= 0 && s <= MAX_SEED;
    if (ok) state.seed = s;
    changed(false);
    if (!ok) say(`A seed is a whole number from 0 to ${MAX_SEED}, so the seed stays ${state.seed}.`);
  });
  el.sample.addEventListener("click", () => sample(1));
  el.sampleMany.addEventListener("click", () => sample(MANY));
  el.reset.addEventListener("click", () => {
    restart();
    paint();
    say(`Draws cleared. The next draw starts again from seed ${state.seed}.`);
  });
  // A link such as the quiz's "Set the dial to T = 0.3": show the dial it set, and put the keyboard
  // on it, wherever on the page the link was (also when the hash already says so: no hashchange).
  function showHash() {
    if (!readHash()) return;
    changed(true);
    el.temp.scrollIntoView({ block: "center", behavior: u.reducedMotion.matches ? "auto" : "smooth" });
    el.temp.focus({ preventScroll: true });
  }
  addEventListener("hashchange", showHash);
  document.addEventListener("click", ev => {
    const a = ev.target.closest && ev.target.closest('a[href^="#c="]');
    if (a && a.hash === location.hash) { ev.preventDefault(); showHash(); }
  });

  readHash();
  fillContexts();
  fillTopK();
  build();
  restart();
  syncControls();
  paint();
  nojs.hidden = true;
  app.hidden = false;
  root.dataset.ready = "true";
  // For the tests: the settings and the draws so far.
  Labs.test.sampling = { state: () => ({ ...state, drawn: drawn.slice(), words: ctxOf().words.slice() }) };
})();
