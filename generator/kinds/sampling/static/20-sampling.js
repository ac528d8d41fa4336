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
   State in the URL hash: #c=<context>&t=<temperature>&k=<top-k>&p=<top-p %>&seed=<seed>
   This script draws the dial as it opens; what the learner's acts run (a setting changed, a draw,
   the arithmetic, a link that sets the dial) is static/later/dial.js, loaded when
   the learner first reaches for the dial, with its styles (static/later/dial.css, data.acts): each
   act waits for them, in order. */
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
  const MAX_SEED = 4294967295;

  const state = {
    context: contexts.has(data.default?.context) ? data.default.context : data.contexts[0].id,
    t: Number.isInteger(data.default?.t) ? data.default.t : 0,
    k: 0,
    p: 100,
    seed: Number.isInteger(data.seed) ? data.seed : 42
  };
  const draws = { drawn: [], tally: [] };  // the sampler's draws so far and each row's count (dial.js)
  let rowsLoad = null;

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
  // while nothing is cut (or its tail is still loading: dial.js loads it), else every other
  // token's parts.
  function weights(C) {
    const top = C.p[state.t], tails = view.tails;
    if (!C.ids) return { w: top, whole: true };
    if (cutting() && tails) return { w: top.concat(expand(tails[C.id][state.t])), whole: true };
    if (cutting()) view.loadTail?.();
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
      if (waiting) { waiting = false; view.changed ? view.changed(false) : paint(); }
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
  function current() {
    const C = ctxOf(), { w: full, whole } = weights(C), n = C.words.length;
    const mask = whole ? S.keep(full, state.k, state.p) : full.map(() => true);
    const kept = full.map((x, j) => mask[j] ? x : 0), total = u.sum(kept);
    // What the rows show: a model context's tokens past the top ones add up into one row.
    const rows = a => C.ids ? a.slice(0, n).concat([u.sum(a.slice(n))]) : a;
    const fullR = rows(full), keptR = rows(kept), maskR = C.ids ? mask.slice(0, n).concat([mask.slice(n).some(Boolean)]) : mask;
    return { C, full, kept, total, fullR, keptR, maskR, before: u.roundShares(fullR, 100), after: u.roundShares(keptR, 100),
      left: C.ids && !(cutting() && view.tails) ? (cutting() ? null : C.vocab) : mask.filter(Boolean).length, pending: cutting() && !whole };
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
    view.built?.(C);
  }

  function paint() {
    if (!rowsReady()) return;
    const v = current(), C = v.C, T = temps[state.t], n = sizeOf(C), cuts = v.left !== null && v.left < n;
    const unit = C.ids ? "tokens" : "words", { drawn, tally } = draws;
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
    el.next.textContent = drawn.length ? nameOf(drawn[drawn.length - 1]) : "…";
    el.next.classList.toggle("is-drawn", drawn.length > 0);
    el.draws.textContent = drawn.length
      ? `${drawn.length} draw${drawn.length === 1 ? "" : "s"} with seed ${state.seed}; the latest: “${nameOf(drawn[drawn.length - 1])}”.`
      : `No draws yet. Seed ${state.seed}: the same settings and seed always draw the same words.`;
    view.painted?.(v, T);
  }

  const nameOf = j => ctxOf().ids && j >= ctxOf().words.length ? "(another token)" : ctxOf().words[j];

  /* ---------- announcements and the URL ---------- */
  let sayTimer = 0;
  function say(text, later) {
    clearTimeout(sayTimer);
    if (later) sayTimer = setTimeout(() => { el.live.textContent = text; }, 400);
    else el.live.textContent = text;
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

  /* ---------- what the learner's acts run: static/later/dial.js ---------- */
  // What dial.js works with; it adds changed, built, painted and loadTail, and fills tails.
  const view = { data, el, state, draws, temps, contexts, ctxOf, current, sizeOf, shownWords, count, tText, pText, pctText,
    nameOf, rowOf, hasRow, fillTopK, build, paint, syncControls, readHash, say, listeners: [], MAX_SEED, tails: null, tailLoad: null };
  let acting = null, queue = Promise.resolve();
  const wake = () => acting ||= Promise.all([u.load(data.acts.js), u.load(data.acts.css)]).then(() => Labs.code.samplingAct(view),
    () => { acting = null; el.summary.textContent = "The dial's code did not load, so the dial cannot change."; throw 0; });
  // Each act waits for dial.js and for the acts before it, so they run in the order they came,
  // each with the value its control had when the learner set it: an act before it (a context
  // changed) redraws every control from the settings, over a value set while dial.js was loading.
  const act = (name, value) => (queue = queue.then(wake).then(a => a[name](value), () => {}));
  const on = (node, type, name) => node.addEventListener(type, () => act(name, node.value));
  on(el.context, "change", "context");
  on(el.temp, "input", "temp");
  on(el.topk, "change", "topk");
  on(el.topp, "input", "topp");
  on(el.seed, "change", "seed");
  on(el.sample, "click", "sampleOne");
  on(el.sampleMany, "click", "sampleMany");
  on(el.reset, "click", "reset");
  // A link such as the quiz's "Set the dial to T = 0.3" shows the dial it set, also when the hash
  // already says so (no hashchange).
  addEventListener("hashchange", () => act("showHash"));
  document.addEventListener("click", ev => {
    const a = ev.target.closest && ev.target.closest('a[href^="#c="]');
    if (a && a.hash === location.hash) { ev.preventDefault(); act("showHash"); }
  });
  // Reaching for the dial (a pointer or the keyboard on any of it, the arithmetic included) loads
  // what its acts need, so that the first act does not wait.
  for (const type of ["pointerdown", "focusin"]) app.addEventListener(type, () => { wake().catch(() => {}); if (data.rows_src) loadRows(); }, { once: true });

  if (readHash()) wake().catch(() => {});  // an address that sets the dial may show cuts: their styles
  fillContexts();
  fillTopK();
  build();
  syncControls();
  paint();
  // "Your prompt": only the offer is here; its code (data.live.src) loads on the first click.
  const L = data.live;
  if (L && el.own) {
    el.own.hidden = false;
    Labs.code.samplingDial = { state: () => ({ ...state, T: temps[state.t] }), onChange: fn => view.listeners.push(fn), el, say };
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
  // For the tests: the settings and the draws once every act so far has run.
  Labs.test.sampling = {
    state: async () => { await queue; return { ...state, drawn: draws.drawn.slice(), words: ctxOf().words.slice() }; },
    ready: async () => { await queue; await acting; await rowsLoad; await view.tailLoad; }
  };
})();
