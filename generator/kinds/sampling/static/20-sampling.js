/* The sampling dial (#sampling): temperature, top-k, top-p and a seeded sampler.
   The build embeds, for every context and every temperature of the grid, the probabilities as
   whole parts of data.parts (contexts[].p[t][n]); this script only picks a row, cuts it with
   top-k then top-p, renormalises what is left (largest remainder: percentages add up to 100)
   and draws with mulberry32(seed) — Labs.code.sampling, in 10-core.js.
   Draws are reproducible: the same context, temperature, top-k, top-p and seed give the same
   words in the same order, so any change of setting starts the draws over.
   A context on the model (contexts[].ids: SmolLM2's whole vocabulary) embeds its top tokens'
   parts and shows the rest as one row, "all other tokens"; the other tokens' parts (runs of equal
   values, in rank order: data.tail_src) load on the first cut, so top-k and top-p cut the whole
   vocabulary exactly. A draw needs no tail: the top tokens come first in the order draws walk.
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
  let rng = null, drawn = [], tally = [], tails = null, tailLoad = null, rowsLoad = null;

  /* ---------- controls ---------- */
  const ctxOf = () => contexts.get(state.context);
  function fillContexts() {
    for (const c of data.contexts) el.context.append(h("option", { value: c.id }, [c.text + " …"]));
    el.contextField.hidden = data.contexts.length < 2;
  }
  const count = n => n.toLocaleString("en");
  const sizeOf = C => C.vocab || C.words.length;  // how many tokens (or words) the context has
  const shownWords = C => C.ids ? C.words.concat([`all other ${count(C.vocab - C.words.length)} tokens`]) : C.words;
  function fillTopK() {
    const C = ctxOf(), n = sizeOf(C), keep = state.k, ks = C.topk || C.words.slice(1).map((w, j) => j + 1);
    el.topk.replaceChildren(h("option", { value: "0" }, ["off (all " + count(n) + ")"]));
    for (const k of ks) el.topk.append(h("option", { value: String(k) }, [String(k)]));
    state.k = ks.includes(keep) ? keep : 0;
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
  const cutting = () => state.k > 0 || state.p < 100;
  const expand = runs => runs.flatMap(([value, n]) => new Array(n).fill(value));
  // The weights the cuts and draws use: a model context's top tokens, then the rest — one lump
  // while nothing is cut (or its tail is still loading), else every other token's parts.
  function weights(C) {
    const top = C.p[state.t];
    if (!C.ids) return { w: top, whole: true };
    if (cutting() && tails) return { w: top.concat(expand(tails[C.id][state.t])), whole: true };
    if (cutting()) loadTail();
    return { w: top.concat([data.parts - u.sum(top)]), whole: !cutting() };
  }
  // A model context's parts at every temperature but the one the dial opens on (data.rows_src)
  // load when the learner first reaches for a control; a setting that needs them before they are
  // in is drawn once they are.
  let waiting = false;
  const hasRow = () => !!ctxOf().p[state.t];
  function loadRows() {
    rowsLoad ||= u.load(data.rows_src).then(() => {
      for (const [id, p] of Object.entries(Labs.data.samplingRows)) contexts.get(id).p = p;
      if (waiting) { waiting = false; changed(false); }
    }, () => { rowsLoad = null; el.summary.textContent = "The chances for this setting did not load."; });
    return rowsLoad;
  }
  function rowsReady() {
    if (hasRow()) return true;
    waiting = true;
    loadRows();
    el.summary.textContent = "Loading the chances for this setting…";
    return false;
  }
  function loadTail() {
    tailLoad ||= u.load(data.tail_src).then(() => { tails = Labs.data.samplingTail; restart(); paint(); say(describe()); })
      .catch(() => { tailLoad = null; el.summary.textContent = "The other tokens' chances did not load, so nothing is cut."; });
  }
  function current() {
    const C = ctxOf(), { w: full, whole } = weights(C), n = C.words.length;
    const mask = whole ? S.keep(full, state.k, state.p) : full.map(() => true);
    const kept = full.map((x, j) => mask[j] ? x : 0), total = u.sum(kept);
    // What the rows show: a model context's tokens past the top ones add up into one row.
    const rows = a => C.ids ? a.slice(0, n).concat([u.sum(a.slice(n))]) : a;
    const fullR = rows(full), keptR = rows(kept), maskR = C.ids ? mask.slice(0, n).concat([mask.slice(n).some(Boolean)]) : mask;
    return { C, full, kept, total, fullR, keptR, maskR, before: u.roundShares(fullR, 100), after: u.roundShares(keptR, 100),
      left: C.ids && !(cutting() && tails) ? (cutting() ? null : C.vocab) : mask.filter(Boolean).length, pending: cutting() && !whole };
  }
  const rowOf = j => Math.min(j, ctxOf().ids ? ctxOf().words.length : j);

  // A whole percentage, except where rounding would say something false: a chance that rounds to
  // 0 but is not 0 reads "<1%" (that word can still be drawn; "0%" would say it cannot), and one
  // that rounds to 100 while other words can still be drawn reads ">99%".
  const pctText = (pct, parts, total) => pct === 0 && parts > 0 ? "<1%" : pct === 100 && parts < total ? ">99%" : pct + "%";

  let rows = [];
  function build() {
    const C = ctxOf();
    el.text.textContent = C.text;
    el.bars.tHead.rows[0].cells[0].textContent = C.ids ? "Next token" : "Next word";
    const about = C.ids ? `SmolLM2-135M-Instruct's chances for its next token, over all ${count(C.vocab)} tokens of its vocabulary; it reads the text as written${C.chat ? ", as a user's message in its chat template" : ", with no chat template"}: ${C.tokens.join(" ")}.`
      : C.designed ? "Hand-written scores for a few words, not a model's: a designed example." : "";
    el.note.textContent = [C.note, about].filter(Boolean).join(" ");
    el.note.hidden = !el.note.textContent;
    rows = shownWords(C).map(word => {
      const ghost = h("span", { class: "sa-ghost" }), fill = h("span", { class: "sa-fill" });
      const pct = h("span", { class: "sa-pct" }), was = h("span", { class: "sa-was" }), count = h("td", { class: "sa-count" });
      const tr = h("tr", {}, [h("th", { scope: "row", class: "sa-word" }, [word]),
        h("td", { class: "sa-bar-cell", "aria-hidden": "true" }, [h("span", { class: "sa-track" }, [ghost, fill])]),
        h("td", { class: "sa-pct-cell" }, [pct, was]), count]);
      return { tr, ghost, fill, pct, was, count };
    });
    if (C.ids) rows[rows.length - 1].tr.classList.add("sa-other");
    el.bars.tBodies[0].replaceChildren(...rows.map(r => r.tr));
    el.math.tBodies[0].replaceChildren(...C.words.map((w, j) => h("tr", {}, [h("th", { scope: "row" }, [w]),
      h("td", {}, [u.fmt(C.logits[j], 2)]), h("td", {}, []), h("td", {}, [])])));
  }

  function paint() {
    if (!rowsReady()) return;
    const v = current(), C = v.C, T = temps[state.t], n = sizeOf(C), cuts = v.left !== null && v.left < n;
    const unit = C.ids ? "tokens" : "words";
    el.caption.textContent = `Next ${C.ids ? "token" : "word"} after “${C.text} …” at T = ${tText(T)}` +
      (state.k ? `, top-k ${state.k}` : "") + (state.p < 100 ? `, top-p ${pText(state.p)}` : "");
    // A bar's length is the word's chance: the whole track is 100%. The pale bar behind it is
    // the chance before top-k and top-p; the solid one the renormalised chance after.
    rows.forEach((r, j) => {
      const isCut = !v.maskR[j], share = v.total ? v.keptR[j] / v.total : 0;
      r.tr.classList.toggle("is-cut", isCut);
      r.ghost.style.width = (v.fullR[j] / data.parts * 100).toFixed(2) + "%";
      r.fill.style.width = (share * 100).toFixed(2) + "%";
      r.pct.textContent = isCut ? "cut" : pctText(v.after[j], v.keptR[j], v.total);
      r.was.textContent = isCut ? `was ${pctText(v.before[j], v.fullR[j], data.parts)}`
        : cuts && v.after[j] !== v.before[j] ? `from ${pctText(v.before[j], v.fullR[j], data.parts)}` : "";
      r.tr.title = isCut ? `Cut by ${state.k && state.p < 100 ? "top-k or top-p" : state.k ? "top-k" : "top-p"}` : "";
      r.count.textContent = tally[j] ? String(tally[j]) : "";
    });
    el.summary.textContent = v.pending ? `Loading the chances of the other ${count(n - C.words.length)} tokens to cut them…`
      : cuts ? `${state.k && state.p < 100 ? "Top-k and top-p keep" : state.k ? "Top-k keeps" : "Top-p keeps"} ${count(v.left)} of ${count(n)} ${unit}; their chances are renormalised to add up to 100%. A cut ${unit.slice(0, -1)}'s pale bar shows the chance it had.`
      : `All ${count(n)} ${unit} stay in. The chances add up to 100%.`;
    el.mathT.textContent = `Logit ÷ ${tText(T)}`;
    [...el.math.tBodies[0].rows].forEach((tr, j) => {
      tr.cells[2].textContent = u.fmt(C.logits[j] / T, 2);
      tr.cells[3].textContent = (v.fullR[j] / data.parts * 100).toFixed(2) + "%";
    });
    el.next.textContent = drawn.length ? nameOf(drawn[drawn.length - 1]) : "…";
    el.next.classList.toggle("is-drawn", drawn.length > 0);
    el.draws.textContent = drawn.length
      ? `${drawn.length} draw${drawn.length === 1 ? "" : "s"} with seed ${state.seed}; the latest: “${nameOf(drawn[drawn.length - 1])}”.`
      : `No draws yet. Seed ${state.seed}: the same settings and seed always draw the same words.`;
  }

  const nameOf = j => ctxOf().ids && j >= ctxOf().words.length ? "(another token)" : ctxOf().words[j];

  /* ---------- sampling ---------- */
  function restart() {
    rng = S.mulberry32(state.seed);
    drawn = [];
    tally = shownWords(ctxOf()).map(() => 0);
    el.history.replaceChildren();
  }
  function sample(n) {
    if (!hasRow()) return;
    const v = current(), C = v.C, got = [];
    if (v.pending) { say("The other tokens' chances are still loading; draw again in a moment."); return; }
    for (let i = 0; i < n; i++) {
      const j = S.draw(v.kept, rng());  // cut words weigh 0: never drawn
      drawn.push(j);
      tally[rowOf(j)]++;
      got.push(j);
    }
    const items = got.map(j => h("li", {}, [nameOf(j)]));
    el.history.append(...items);
    while (el.history.children.length > HISTORY) el.history.firstElementChild.remove();
    paint();
    if (n === 1) say(`Draw ${drawn.length}: ${nameOf(got[0])}.`);
    else {
      const counts = shownWords(C).map((w, j) => [w, got.filter(x => rowOf(x) === j).length]).filter(x => x[1]);
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
    if (!hasRow()) return "Loading the chances for this setting…";
    const v = current(), C = v.C;
    const shown = C.words.map((w, j) => [w, v.after[j], v.keptR[j]]).filter(x => x[2] > 0).slice(0, 4);
    return `T = ${tText(temps[state.t])}` + (state.k ? `, top-k ${state.k}` : "") + (state.p < 100 ? `, top-p ${pText(state.p)}` : "") +
      ": " + shown.map(([w, p, parts]) => `${w} ${pctText(p, parts, v.total)}`).join(", ") +
      (v.left > shown.length ? `, and ${count(v.left - shown.length)} more` : "") +
      (v.left !== null && v.left < sizeOf(C) ? `. ${count(sizeOf(C) - v.left)} cut.` : ".") + (drawn.length ? "" : " Draws start over.");
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
  const listeners = [];  // "Your prompt" (static/later/live.js) follows the dial
  function changed(rebuild) {
    if (rebuild) { fillTopK(); build(); }
    restart();
    syncControls();
    paint();
    writeHash();
    say(describe(), true);
    listeners.forEach(fn => fn());
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

  if (data.rows_src) for (const type of ["pointerdown", "focusin"]) el.controls.addEventListener(type, loadRows, { once: true });
  readHash();
  fillContexts();
  fillTopK();
  build();
  restart();
  syncControls();
  paint();
  // "Your prompt": only the offer is here; its code (data.live.src) loads on the first click.
  const L = data.live;
  if (L && el.own) {
    el.own.hidden = false;
    Labs.code.samplingDial = { state: () => ({ ...state, T: temps[state.t] }), onChange: fn => listeners.push(fn), el, say };
    if (L.reason) el.ownStatus.textContent = L.reason;
    el.ownLoad.hidden = !!L.reason;
    el.ownLicense.href = L.license;
    el.ownLoad.textContent = `Load the model (${Math.round(L.download_bytes / 1e6)} MB)`;
    el.ownLoad.addEventListener("click", () => u.load(L.src).then(() => Labs.code.samplingLive(L),
      () => { el.ownStatus.textContent = "Its code could not be loaded."; }));
  }
  nojs.hidden = true;
  app.hidden = false;
  root.dataset.ready = "true";
  // For the tests: the settings and the draws so far.
  Labs.test.sampling = { state: () => ({ ...state, drawn: drawn.slice(), words: ctxOf().words.slice() }), ready: async () => { await rowsLoad; await tailLoad; } };
})();
