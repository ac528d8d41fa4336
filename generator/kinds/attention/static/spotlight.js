/* The spotlight (#spotlight): click a word, watch its attention fall on the others.
   One state object, one render(): build (when the sentence or the token set changes), measure
   (reads geometry once), paint (writes only, so a click stays cheap).
   Data: #lab-data, see docs/spotlight-data.md. Only the default sentence's numbers and a
   summary of the real model are on the page: the other sentences' numbers (data.lazy.src) and the
   model's attention (data.real.srcs, one per sentence) are scripts added the first time a learner asks for them.
   Only this file writes the spotlight's data and state. Code loaded later (own-ui.js, pattern.js)
   gets the door below (start(door, files)): named functions, and views to read.
   State lives in the URL hash: #s=<sentence>&h=<head id | L<layer>H<head>>&q=<query>&scale=1|0[&special=0] */
(() => {
  "use strict";
  const root = document.getElementById("spotlight");
  if (!root) return;
  const Labs = window.Labs, u = Labs.util, { h } = u, got = Labs.data, code = Labs.code;
  const draw = code.spotlightDraw; // the pictures and texts paint() writes: static/spotlight-draw.js
  const data = u.readJSON("lab-data");
  if (!data?.sentences?.length || !data.heads?.length) {
    root.firstElementChild.textContent = "The spotlight's data is missing from this page.";
    return;
  }

  // Every element with an id "sl-foo-bar" is el.fooBar.
  const el = {};
  for (const n of root.querySelectorAll("[id^=sl-]")) el[n.id.slice(3).replace(/-(\w)/g, (m, c) => c.toUpperCase())] = n;

  const D = data.default || {}, real = data.real;
  const sentences = new Map(data.sentences.map(s => [s.id, s])), meta = new Map(data.heads.map(m => [m.id, m]));
  // Designed heads that only "your sentence" has (a lab may show fewer than the model has): set with it.
  let ownHeads = [];
  const metaOf = id => meta.get(id) || ownHeads.find(m => m.id === id);
  const headOf = (S, id) => Object.hasOwn(S.heads, id) && S.heads[id];
  const headsFor = S => (ownHeads.length ? data.heads.concat(ownHeads) : data.heads).filter(m => headOf(S, m.id));
  const STEPS = u.all("button", el.steps);

  /* ---------- the real model: a summary on the page, the attention on demand ---------- */

  const modelName = real?.model.split("/").pop(), model = real && { name: real.model, layers: real.layers, heads: real.heads };
  // A sentence made in the browser may bring the model's attention with it (S.real).
  const hasReal = sid => !!sentences.get(sid)?.real || !!real?.sentence_ids.includes(sid);
  // False until the script has run. The model's heads are shown with spotlight-more.js's words for them: they come together.
  const realOf = sid => sentences.get(sid)?.real || LAZY[realKey(sid)]?.ready && got.realHeads[sid];
  const parseReal = id => /^L(\d+)H(\d+)$/.exec(id)?.slice(1).map(Number); // [layer, head] or undefined

  /* Files beside the page, added on demand: where it is, what the status line calls it, what the
     learner does to try again, whether it is here, what runs once it is, and what must be here
     before that: a file of LAZY or a stylesheet (`needs`: its key or URL, up to two). */
  const file = (src, what, again, here, done, ...needs) => ({ src, what, again, here, done, needs });
  const LAZY = {
    sentenceHeads: file(data.lazy?.src, "this sentence's numbers", "pick it", () => got.sentenceHeads, () => {
      // The default sentence's embedded heads carry only what the first paint reads.
      for (const S of data.sentences) {
        Object.assign(S, got.sentenceWords?.[S.id]); // the other sentences' words come with their numbers
        if (!full(S)) S.heads = got.sentenceHeads[S.id] || S.heads;
        S.note ??= got.sentenceNotes?.[S.id] || ""; // the other sentences' notes come with their heads
      }
      for (const m of data.heads) m.cross ??= got.headsCross?.[m.id]; // and what each head does across two sentences
    }),
    headFinder: file(real?.finder_src, "the head finder", "open the model view", () => got.headFinder),
    headDetails: file(data.details?.src, "the step-by-step numbers", "try", () => got.headDetails, () => {
      for (const m of data.heads) Object.assign(m, got.headDetails.heads[m.id]);
      data.residual_dims = got.headDetails.residual_dims;
    }),
    // With its styles (the numbers' tables, the model view): what it draws never shows unstyled; without them it still reads.
    spotlightMore: file(data.more?.src, "the step-by-step numbers", "try", () => code.spotlightMore, () => { more = code.spotlightMore; }, data.more?.css),
    // Later modules: each gets the door and its own files once its script has run. One that sets
    // "your sentence" needs spotlight-more.js, which checks the sentence, and the sentences' file
    // (what the designed heads do across two sentences).
    own: file(data.own?.src, "the sentence tool", "try", () => code.own, () => begin(code.own, data.own), "spotlightMore", "sentenceHeads"),
    pattern: file(data.pattern?.src, "the pattern view", "open it", () => code.pattern, () => begin(code.pattern, data.pattern))
  };
  // The real model's attention: one script per sentence (data.real.srcs), key "realHeads:<id>".
  const realKey = sid => "realHeads:" + sid;
  for (const sid of real?.sentence_ids || [])
    LAZY[realKey(sid)] = file(real.srcs[sid], "the model's attention", "pick a real head", () => got.realHeads?.[sid], () => requestAnimationFrame(drawGrid), "spotlightMore");
  /* Which later module makes the "own" sentence a hash names (#s=own&…), asked in this order:
     [key in LAZY, whether the hash's own parameters are its]. */
  const OWN_MAKERS = [["own", () => true]];
  let more = null; // the code of spotlight-more.js, once loaded
  /** Whether sentence S has every number (the four moves need them), not just the first paint's. */
  const full = S => !!S.heads && !!Object.values(S.heads)[0]?.q;
  const scripts = {}; // key → Promise: loaded, and its `done` has run
  let loading = 0, moves = 0;
  /** The file `key`: a Promise that resolves once it (and what it needs) is here and its `done`
      has run. `quiet`: fetched because a part came into view, not because the learner asked: no
      message. A file that failed is fetched again the next time. */
  function fetched(key, quiet) {
    const f = LAZY[key];
    if (!scripts[key]) {
      busy(1, quiet ? null : `Loading ${f.what}…`);
      const need = n => n && (LAZY[n] ? fetched(n, true) : u.load(n).catch(() => {})); // a stylesheet may fail: the text still reads
      scripts[key] = Promise.all([u.load(f.src), ...f.needs.map(need)]).then(() => {
        if (!f.here()) throw Error(f.src);
        f.done?.();
        f.ready = true;
        busy(-1, quiet ? null : "");
      });
      scripts[key].catch(() => {
        scripts[key] = null; // the next request tries again
        busy(-1, `Could not load ${f.what} (${f.src}). Check the connection, then ${f.again} again.`);
        paint(); // the selects go back to what is on screen
      });
    }
    return scripts[key];
  }
  /** Run `then` once the file `key` is here — at once if it is — unless the learner has moved on meanwhile. */
  function withScript(key, then, quiet) {
    if (LAZY[key].ready) return then();
    const at = quiet ? -1 : moves;
    fetched(key, quiet).then(() => (at < 0 || moves === at) && then(), () => {});
  }
  /** Run `then` once sentence `sid` has its numbers (or once they could have: valid() falls back). */
  const lazy = sid => sentences.get(sid)?.heads === null && !got.sentenceHeads;
  const withSentence = (sid, then) => lazy(sid) ? withScript("sentenceHeads", then) : then();
  /** One file more (step 1) or less (-1) loading; `message` for the status line (null: a quiet
      load, which leaves what the line says, a failure included). */
  function busy(step, message) {
    loading += step;
    root.toggleAttribute("aria-busy", loading > 0);
    root.dataset.ready = !loading;
    if (message === null) return;
    el.status.textContent = message;
    el.status.classList.toggle("is-error", step < 0 && !!message);
  }

  /* ---------- state ---------- */

  let state = {};

  /** Clamp any (possibly hand-edited) state into a valid one. A real head is valid once its data is here. */
  function valid(st) {
    const ok = id => sentences.get(id)?.heads, s = ok(st.s) ? st.s : ok(D.sentence) ? D.sentence : data.sentences.find(ok).id;
    const S = sentences.get(s), R = realOf(s), rh = parseReal(st.h);
    let hid = (rh ? R && rh[0] < real.layers && rh[1] < real.heads : headOf(S, st.h)) ? st.h : "";
    if (!hid) hid = headOf(S, D.head) ? D.head : headsFor(S)[0]?.id || "L0H0"; // a sentence may have real heads only
    const isReal = !!parseReal(hid), n = isReal ? R.words.length : S.queries.length;
    let q = parseInt(st.q, 10);
    if (!(q >= 0 && q < n)) q = isReal ? 0 : s === D.sentence && D.query < n ? D.query : S.query < n ? S.query : 0;
    const hide = !!st.hide; // remembered across heads; it only applies to real ones
    if (isReal && hide && R.special[q]) q = Math.max(0, R.special.indexOf(false));
    return { s, h: hid, q, scale: st.scale !== false, hide, step: st.step || 0, own: S.own || "" }; // own: what names "your sentence"
  }

  /** The URL hash of a state; two states that show the same thing have the same hash. */
  const hashOf = st => `#s=${encodeURIComponent(st.s)}&h=${encodeURIComponent(st.h)}&q=${st.q}&scale=${+st.scale}` +
    (parseReal(st.h) ? `&special=${+!st.hide}` : "") + (st.own ? "&" + st.own : "");
  function parseHash() {
    const p = new URLSearchParams(location.hash.slice(1)), get = k => p.get(k);
    if (!(p.has("s") || p.has("h") || p.has("q"))) return null;
    const own = new URLSearchParams(p);
    for (const k of ["s", "h", "q", "scale", "special"]) own.delete(k);
    return { s: get("s"), h: get("h"), q: get("q"), scale: get("scale") !== "0", hide: get("special") === "0", own: own.toString() };
  }

  // pushState costs as much as the repaint itself, so the URL is written just after it, once
  // per burst of changes (a new history entry if any change in the burst asked for one).
  let hashTimer = 0, hashReplace = true;
  function scheduleHash(replace) {
    hashReplace = hashTimer ? hashReplace && replace : replace;
    clearTimeout(hashTimer);
    hashTimer = setTimeout(() => {
      hashTimer = 0;
      const target = hashOf(state);
      try {
        if (location.hash !== target) history[hashReplace ? "replaceState" : "pushState"](null, "", target);
      } catch { location.replace(target); } // odd file:// policies
    });
  }

  /** Change the state from a learner's action. A new sentence is a history entry (Back returns to
      the one before); a word, a head or a switch replaces the entry, so Back never walks through clicks. */
  function update(patch) {
    moves++;
    const next = valid({ ...state, ...patch }), changed = hashOf(next) !== hashOf(state);
    const fresh = next.s !== state.s || next.own !== state.own; // another sentence
    state = next;
    if (fresh) root.querySelector(".sl-notice")?.remove(); // what the stage said (own-ui.js) was about the sentence before
    render();
    if (!changed) return;
    scheduleHash(!fresh);
    announce();
  }

  /* ---------- the view model: what the current state shows ---------- */

  /** A teaching head's weights and percentages for query q, with or without ÷√d. */
  const rowOf = (H, q) => state.scale ? [H.weights[q], H.pct[q]] : [H.weights_unscaled[q], H.pct_unscaled[q]];

  /** What the current state shows, without touching the DOM: all paint() draws from, and all the
      four moves, the figure and later modules read. A new object each time, to read, never to write:
      the state's fields (s, h, q, scale, hide, step, own), the sentence S (sentenceKey changes
      whenever it does) and its designed heads' descriptions (heads), and either a designed head (H
      its numbers, m its description, the page's residualDims and precision) or a real one (layer,
      head, attention: its [n][n] per-mille weights). */
  function view() {
    const S = sentences.get(state.s), rh = parseReal(state.h), q = state.q;
    let v;
    if (rh) {
      const R = realOf(state.s), A = R.attention[rh[0]][rh[1]], row = A[q];
      v = { queries: R.words, keys: R.words, special: R.special, weights: row.map(x => x / 1000), pct: u.roundShares(row, 100),
        masked: [], hidden: R.special.map(sp => state.hide && sp), name: `layer ${rh[0]}, head ${rh[1]}`, layer: rh[0], head: rh[1], attention: A };
    } else {
      const H = S.heads[state.h], m = metaOf(state.h), [weights, pct] = rowOf(H, q);
      v = { H, m, queries: S.queries, keys: S.keys, cross: S.kind === "cross", special: [], hidden: [], weights, pct,
        masked: H.scores ? H.scores[q].map(x => x === null) : S.keys.map(() => false), name: m.name + " head",
        residualDims: data.residual_dims, precision: data.precision };
    }
    return { ...state, ...v, S, heads: headsFor(S), sentenceKey: sentenceKey(), real: !!rh, word: v.queries[q] };
  }

  function announce() {
    const v = view();
    el.live.textContent = `${v.word}: ${draw.top(v.keys, v.pct, 3, v.weights, v.keys.map((k, j) => v.hidden[j] || v.masked[j]))}`;
  }

  /* ---------- structure: rebuilt when the sentence or the token set changes ---------- */

  let built = "", geo = {}, qButtons = [], kWords = [], rows = [], paths = [], texts = [], minis = [], cells = [], pressedQ = -1;
  const button = (attrs, kids) => h("button", { type: "button", ...attrs }, kids);
  const option = (value, text) => h("option", { value }, [text]);

  for (const [kind, label] of [["self", "Self-attention"], ["causal", "Causal (decoder)"], ["cross", "Cross-attention"]]) {
    const list = data.sentences.filter(s => s.kind === kind);
    if (list.length) el.sentence.append(h("optgroup", { label }, list.map(s => option(s.id, s.label))));
  }

  function build() {
    const v = view(), S = v.S, cross = !!v.cross;
    root.classList.toggle("is-cross", cross);

    // Word rows: the queries are buttons (one Tab stop); a cross sentence's keys are plain words.
    qButtons = v.queries.map((w, i) => button({ class: v.special[i] ? "word is-special" : "word", "data-index": i,
      "aria-pressed": "false", hidden: v.hidden[i] }, [w]));
    kWords = cross ? v.keys.map((w, j) => h("span", { class: "word", "data-index": j }, [w])) : qButtons;
    el.queries.replaceChildren(...qButtons);
    el.keys.replaceChildren(...(cross ? kWords : []));
    el.keys.hidden = el.kLabel.hidden = !cross; // the SVGs show by .is-cross (`hidden` is not valid on <svg>)
    el.qLabel.textContent = cross ? "Queries — click a word" : "Click a word to make it the query";
    el.kLabel.textContent = "Keys and values: " + (S.key_label || "the other sentence");

    // One link per key, its percentage under it when the sentence wraps, and one readout row.
    paths = v.keys.map(() => h("path", null, null, u.SVG));
    texts = v.keys.map(() => h("text", null, null, u.SVG));
    el.arcs.querySelector(".sl-links").replaceChildren(...(cross ? [] : [...paths, ...texts]));
    el.band.querySelector(".sl-links").replaceChildren(...(cross ? [...paths, ...texts] : []));
    pressedQ = -1;
    rows = v.keys.map((w, j) => {
      const r = { pct: h("td", { class: "sl-pct" }), fill: h("span"), tag: h("span", { class: "sl-tag" }) };
      r.tr = h("tr", { "data-index": j, hidden: v.hidden[j] }, [h("th", { scope: "row" }, [w, " ", r.tag]), r.pct, // " ": "mat itself", not "matitself"
        h("td", { "aria-hidden": "true" }, [h("span", { class: "sl-bar" }, [r.fill])])]);
      return r;
    });
    el.readout.tBodies[0].replaceChildren(...rows.map(r => r.tr));

    // The Head select, the strip of small multiples and the model view: the select's real heads
    // after the first paint, the others when they come near the screen or are opened (parts).
    const designed = headsFor(S);
    el.head.replaceChildren(...designed.length ? [h("optgroup", { label: "Teaching heads" }, designed.map(m => option(m.id, m.name)))] : []);
    el.multiples.hidden = !designed.length; // the strip holds teaching heads; "every head" is then the model view below it
    if (parts.options || parseReal(state.h) || !designed.length) realOptions(S);
    minis = [];
    el.multiples.replaceChildren();
    if (parts.strip) buildStrip(S);
    el.model.hidden = !real;
    el.modelHeads.hidden = !hasReal(S.id);
    cells = [];
    el.grid.replaceChildren();
    el.finder.replaceChildren();
    if (!real) return;
    el.modelTitle.textContent = `Model view: the ${real.layers * real.heads} real heads of ${modelName}`;
    intro(S);
    if (parts.model && hasReal(S.id)) buildModel();
  }

  /* Parts built only when wanted: what the first screen shows is built before the first paint. */
  const parts = { options: false, strip: false, model: false, hood: false };

  /** The model view's introduction: its words come with the view's code (spotlight-more.js). */
  const intro = S => { el.modelIntro.textContent = more ? more.modelIntro(model, hasReal(S.id), !!S.real) : ""; };

  /** The Head select's 72 real heads, one optgroup per layer. */
  function realOptions(S) {
    if (!real || !hasReal(S.id) || el.head.querySelector('option[value^="L"]')) return;
    for (let L = 0; L < real.layers; L++) {
      const options = [];
      for (let H = 0; H < real.heads; H++) options.push(option(`L${L}H${H}`, `layer ${L}, head ${H}`));
      el.head.append(h("optgroup", { label: `${modelName}, layer ${L}` }, options));
    }
  }

  /** Small multiples: every teaching head for this sentence. */
  function buildStrip(S) {
    minis = headsFor(S).map(m => {
      const mini = { id: m.id, top: h("span"), canvas: h("canvas", { "aria-hidden": "true" }) };
      mini.button = button({ class: "sl-mini", "data-head": m.id, "aria-pressed": "false" }, [h("b", null, [m.name]), mini.canvas, mini.top]);
      return mini;
    });
    el.multiples.replaceChildren(...minis.map(m => m.button));
  }

  /** The model view's 72 thumbnails (spotlight-more.js makes them, as it draws them), and the head finder's report once its script is here. */
  function buildModel() {
    if (!more) return withScript("spotlightMore", () => cells.length || render(built = ""), true); // built again, with it
    el.grid.style.setProperty("--heads", real.heads);
    el.grid.replaceChildren(...more.grid(real, state.h, cells));
    gridDrawn = "";
    if (real.finder_src) withScript("headFinder", fillFinder, true);
  }
  const fillFinder = () => more.fillFinder(el, got.headFinder, sid => sentences.get(sid)?.label || sid);

  /** Build a part the first time it is wanted, then show it. */
  function want(part) {
    if (parts[part]) return;
    parts[part] = true;
    const S = sentences.get(state.s);
    if (part === "options") return realOptions(S);
    if (part === "strip") { buildStrip(S); return remeasure(); }
    if (part === "model") { if (real && hasReal(S.id)) buildModel(); return paint(); }
    if (part === "hood") loadHood();
  }
  /** The four moves need spotlight-more.js and the sentence's full numbers. */
  function loadHood() {
    withScript("spotlightMore", () => withScript("headDetails", () => withScript("sentenceHeads", paint, true), true), true);
  }

  /* ---------- measure: geometry, read once per structure or resize ---------- */

  function measure() {
    const cross = root.classList.contains("is-cross"), line = el.queries.parentNode;
    // A sentence wider than the stage wraps, and its links run between rows: every word, and
    // every weight, on screen. A word's width does not depend on that, so it is read first.
    const qs = getComputedStyle(el.queries), gap = parseFloat(qs.columnGap) || 0; // live: read again once wrapped
    const natural = words => words.reduce((a, b) => a + (b.hidden ? 0 : b.offsetWidth + gap), -gap);
    const wrapped = Math.max(natural(qButtons), cross ? natural(kWords) : 0) > line.clientWidth + 1;
    root.classList.toggle("is-wrapped", wrapped); // the one write before the reads: a build or a resize, never a click
    const rowW = el.queries.clientWidth, dpr = Math.min(devicePixelRatio || 1, 2), cs = getComputedStyle(root);
    // Each word's [centre x, top, bottom]: over the row (one line), or over the whole line (wrapped).
    const at = (b, row, y = (wrapped ? row.offsetTop : 0) + b.offsetTop) => !b.hidden &&
      [(wrapped ? row.offsetLeft : 0) + b.offsetLeft + b.offsetWidth / 2, y, y + b.offsetHeight];
    const qc = qButtons.map(b => at(b, el.queries)), kc = cross ? kWords.map(b => at(b, el.keys)) : qc;
    const miniW = minis.map(m => m.canvas.clientWidth), box = [line.clientWidth, line.clientHeight];
    const lift = (parseFloat(qs.rowGap) || 0) - 18;
    // Then writes.
    const arcH = Math.round(Math.min(120, Math.max(48, rowW * 0.11))), svgH = wrapped ? box[1] : cross ? 72 : arcH;
    geo = { qc, kc, arcH, dpr, wrapped, lift, lineW: box[0], colors: ["--accent", "--surface-2", "--focus"].map(p => cs.getPropertyValue(p).trim()) };
    const svg = cross ? el.band : el.arcs;
    svg.setAttribute("viewBox", `0 0 ${Math.max(1, wrapped ? box[0] : rowW)} ${svgH}`);
    svg.setAttribute("height", svgH);
    minis.forEach((m, i) => { m.canvas.width = Math.max(1, Math.round(miniW[i] * dpr)); m.canvas.height = Math.round(18 * dpr); });
    gridDrawn = "";
    clampDesc();
  }

  /* ---------- paint: writes only ---------- */

  function render() {
    const isReal = !!parseReal(state.h), key = `${sentenceKey()}|${isReal}|${isReal && state.hide}`;
    if (key === built) return paint();
    // Rebuilding replaces buttons: keep keyboard focus on the equivalent new one.
    const a = document.activeElement, box = a.parentNode.id;
    const again = a !== root && root.contains(a) && box && `#${box} > [${a.dataset.head ? `data-head="${a.dataset.head}"` : 'aria-pressed="true"'}]`;
    if (isReal) parts.model = true;
    // New links and bars take their widths at once, not from nothing (measure() lays them out
    // before paint() sizes them): transitions are for the learner's moves, not for every frame
    // of the first screen.
    root.classList.add("is-new");
    requestAnimationFrame(() => requestAnimationFrame(() => root.classList.remove("is-new")));
    build();
    if (isReal) el.model.open = true; // showing a real head shows where it sits among the others
    built = key;
    measure();
    paint();
    if (again && !root.contains(document.activeElement)) root.querySelector(again)?.focus();
  }

  let descText = "", printing = false, lineAt = 0, lineFrame = 0;
  function paint() {
    const v = view(), S = v.S, q = state.q, causal = S.kind === "causal";
    // Only what changed is written: a click on a long sentence must not restyle all of it.
    const set = (node, attr, value) => node.getAttribute(attr) !== String(value) && node.setAttribute(attr, value);
    const text = (node, value) => node.textContent !== value && (node.textContent = value);

    // Controls.
    if (el.sentence.value !== state.s) el.sentence.value = state.s;
    if (el.head.value !== state.h) el.head.value = state.h;
    el.scale.checked = state.scale;
    set(el.scale, "aria-checked", state.scale);
    el.scale.disabled = v.real;
    el.specialField.hidden = !v.real;
    el.special.checked = state.hide;
    set(el.special, "aria-checked", state.hide);
    const said = v.real && more.realHead(v, model); // what is said of a real head: spotlight-more.js, here with its numbers
    const desc = v.real ? said.desc : v.cross && v.m.cross || v.m.description + (v.H.bias ? " It also adds a position bias (move 2 below shows it)." : "");
    if (desc !== descText) {
      descText = el.headDesc.textContent = desc;
      openDesc(false);
    }

    // Words: the query, shading by weight, masked future words; links whose width and opacity grow with the weight.
    draw.words(qButtons, kWords, v, pressedQ);
    pressedQ = q;
    const from = geo.qc[q];
    // The query in view on a line that scrolls (one word wider than the stage): at the next frame,
    // when the layout these writes need is done anyway (a scrollLeft write here would force one more).
    if (from && !geo.wrapped) lineAt = from[0] - geo.lineW / 2, lineFrame ||= requestAnimationFrame(() => { lineFrame = 0; el.queries.parentNode.scrollLeft = lineAt; });
    draw.links(paths, v, geo);
    draw.labels(texts, v, geo);

    // Notes under the sentence.
    const notes = [v.real ? said.note : S.note];
    const later = v.keys.length - 1 - q;
    if (!v.real && causal && later > 0) {
      notes.push(`Greyed out: the ${later === 1 ? "word" : later + " words"} after “${v.word}”, masked to weight 0` +
        (/look ahead/i.test(S.note) ? "." : " — a decoder can't look ahead."));
    }
    if (v.real) notes.push(said.hidden);
    text(el.note, notes.join(" ").trim());

    // Readout table.
    draw.readout(el.caption, rows, el.readout.tFoot, v);

    // The quadratic cost.
    text(el.cost, v.real ? said.cost : draw.cost(v.queries.length, v.keys.length, v.cross, causal));

    // Small multiples (teaching heads, same word) and the model grid.
    const tq = v.real ? toTeach(q) : q;
    for (const m of minis) {
      const [w, pct] = rowOf(S.heads[m.id], tq);
      set(m.button, "aria-pressed", !v.real && m.id === state.h);
      text(m.top, Math.max(...w) - Math.min(...w) < 1e-6 ? "all equal" : "→ " + draw.top(S.keys, pct, 1)); // a flat row has no winner
      draw.bars(m.canvas, w, v.cross ? -1 : tq, geo.colors);
    }
    for (const c of cells) set(c.button, "aria-pressed", c.id === state.h);
    // The model view open on a sentence whose heads have not come yet: fetch that sentence's.
    if (el.model.open && hasReal(state.s) && !realOf(state.s)) withScript(realKey(state.s), drawGrid, true);
    else requestAnimationFrame(drawGrid);

    // Under the hood: the four moves with this word's numbers (spotlight-more.js), once the part is near the screen.
    const ready = !!got.headDetails && full(S);
    if ((parts.hood || v.real) && more) more.paintHood(el, STEPS, v, v.real && said.hood, printing, ready);
    else if (parts.hood) el.step.textContent = "Loading the numbers…";
    if (parts.hood && !v.real && !(more && ready)) loadHood();
    for (const m of started) m.paint?.(v);
    if (!loading && root.dataset.ready !== "true") root.dataset.ready = "true";
    if (!root.hasAttribute("data-started")) root.setAttribute("data-started", ""); // drops the reserved height
  }

  /* The head's description is whole, but clamped to a line on phones (the sentence stays in
     view), where "more" shows the rest. The whole text is always in the DOM for the select's aria-describedby. */
  function openDesc(open) {
    el.headDesc.classList.toggle("is-open", open);
    el.more.setAttribute("aria-expanded", open);
    el.more.textContent = open ? "less" : "more";
    if (!open) requestAnimationFrame(clampDesc);
  }
  function clampDesc() {
    const d = el.headDesc;
    if (!d.classList.contains("is-open")) el.more.hidden = d.scrollHeight <= d.clientHeight + 1;
  }

  /* The model grid's thumbnails are pictures only (each button has its name): drawn when the
     model view is open, on screen and the real heads are here, again only when the query or size changed. */
  let gridDrawn = "", gridSeen = false;
  new IntersectionObserver(([e]) => { gridSeen = e.isIntersecting; drawGrid(); }).observe(el.grid);
  function drawGrid() {
    const R = realOf(state.s);
    if (!cells.length || !R || !el.model.open || !gridSeen) return;
    const rq = parseReal(state.h) ? state.q : toReal(state.q), px = Math.max(1, Math.round(cells[0].button.clientWidth * geo.dpr));
    const sig = `${state.s}|${rq}|${px}`;
    if (sig === gridDrawn) return;
    gridDrawn = sig;
    more.drawGrid(cells, R, rq, px, geo.colors, draw.bars);
  }

  // Only with the model's attention here, so with spotlight-more.js too (its files need it).
  const alignment = sid => more.align(sentences.get(sid).queries, realOf(sid));
  const toReal = q => alignment(state.s)[q];
  const toTeach = rq => Math.max(0, alignment(state.s).filter(p => p <= rq).length - 1);

  /* ---------- events ---------- */

  /** Switch head, carrying the query across between teaching words and model tokens. */
  function selectHead(id) {
    if (parseReal(id) && !realOf(state.s)) return hasReal(state.s) ? withScript(realKey(state.s), () => selectHead(id)) : paint();
    const wasReal = !!parseReal(state.h), isReal = !!parseReal(id);
    update({ h: id, q: isReal === wasReal ? state.q : isReal ? toReal(state.q) : toTeach(state.q) });
  }

  el.queries.addEventListener("click", ev => {
    const b = ev.target.closest(".word");
    if (b) update({ q: +b.dataset.index });
  });
  u.roving(el.queries, ".word", item => update({ q: +item.dataset.index }));
  el.sentence.addEventListener("change", () => {
    const s = el.sentence.value;
    withSentence(s, () => {
      const S = sentences.get(s), q = s === D.sentence ? D.query : S.query || 0;
      const R = (parseReal(state.h) || !headsFor(S).length) && realOf(s); // a sentence with real heads only opens on one
      // A head with a flat row for the telling word (it looks for nothing here) gives way to the
      // head that looks hardest: the sentence's natural one.
      const peak = m => Math.max(...S.heads[m.id || m].weights[q]), flat = m => peak(m) - Math.min(...S.heads[m].weights[q]) < 1e-6;
      const h = !R && headOf(S, state.h) && flat(state.h) ? headsFor(S).reduce((a, b) => peak(b) > peak(a) ? b : a).id : state.h;
      update({ s, h: headOf(S, h) || R ? h : "", q: R ? alignment(s)[q] : q });
    });
  });
  el.head.addEventListener("change", () => selectHead(el.head.value));
  el.scale.addEventListener("change", () => update({ scale: el.scale.checked }));
  el.special.addEventListener("change", () => update({ hide: el.special.checked }));
  el.more.addEventListener("click", () => openDesc(!el.headDesc.classList.contains("is-open")));
  root.addEventListener("click", ev => {
    const b = ev.target.closest("[data-head]");
    if (!b) return;
    if (b.matches(".sl-cell")) u.setTabStop(cells.map(c => c.button), b);
    selectHead(b.dataset.head);
  });
  u.roving(el.grid, ".sl-cell", null, () => real.heads);
  el.model.addEventListener("toggle", () => {
    if (!el.model.open) return;
    want("model");
    // The model's attention for this sentence unless it is here, and the view's words (spotlight-more.js, which the attention needs).
    withScript(LAZY[realKey(state.s)] ? realKey(state.s) : "spotlightMore", () => { intro(sentences.get(state.s)); drawGrid(); });
  });

  el.steps.addEventListener("click", ev => {
    const b = ev.target.closest("[data-step]");
    if (b) goStep(+b.dataset.step, true);
  });
  el.prevStep.addEventListener("click", () => goStep(state.step - 1));
  el.nextStep.addEventListener("click", () => goStep(state.step + 1));
  function goStep(s, picked) {
    want("hood");
    state.step = Math.max(0, Math.min(3, s));
    paint();
    if (!picked && state.step % 3 === 0) el.step.focus(); // the pressed button just became disabled
  }

  /** Show what the URL's hash names (a deep link, Back/Forward); other sentences and real heads wait for their data. */
  function fromLocation(scroll) {
    clearTimeout(hashTimer);
    hashTimer = 0;
    const p = parseHash();
    if (!p) return;
    // "Your sentence", unless it is the one here: the module that made it computes it again from the
    // hash (null if it cannot; one that needs time returns null and sets it through the door later).
    const maker = p.s === "own" && p.own !== sentences.get("own")?.own && OWN_MAKERS.find(([key, mine]) => LAZY[key].src && mine(p))?.[0];
    if (maker) {
      if (!LAZY[maker].ready) return withScript(maker, () => fromLocation(scroll));
      const S = code[maker].restore(location.hash);
      keepOwn(S && ownSentence(S));
    }
    if (lazy(p.s)) return withScript("sentenceHeads", () => fromLocation(scroll));
    if (parseReal(p.h) && hasReal(p.s) && !realOf(p.s)) return withScript(realKey(p.s), () => fromLocation(scroll));
    moves++;
    const next = valid({ ...p, step: state.step });
    if (hashOf(next) !== hashOf(state)) {
      state = next;
      render();
      announce();
    }
    if (scroll) requestAnimationFrame(() => {
      const r = el.stage.getBoundingClientRect();
      if (r.top < 0 || r.bottom > innerHeight) root.scrollIntoView({ behavior: u.reducedMotion.matches ? "auto" : "smooth" });
    });
  }  addEventListener("popstate", () => fromLocation());
  addEventListener("hashchange", () => fromLocation(true));

  let pending = 0;
  function remeasure() {
    pending ||= requestAnimationFrame(() => { pending = 0; measure(); paint(); });
  }
  new ResizeObserver(remeasure).observe(el.queries);
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", remeasure);
  for (const [event, on] of [["beforeprint", true], ["afterprint", false]]) addEventListener(event, () => { printing = on; paint(); });

  /* The strip and the four moves are built when they come within a screen of view (the model
     view when opened); the Head select's real heads once the page is idle. */
  const near = new IntersectionObserver(entries => {
    for (const e of entries) if (e.isIntersecting) { near.unobserve(e.target); want(e.target === el.hood ? "hood" : "strip"); }
  }, { rootMargin: "50% 0px" });
  near.observe(el.multiples);
  near.observe(el.hood);
  (window.requestIdleCallback || setTimeout)(() => want("options"));

  /* Download the view as a figure: SVG, or PNG at twice the size. */
  const download = type => withScript("spotlightMore", () => more.download(view(), el.caption.textContent, type, name => {
    el.live.textContent = `Downloaded ${name}`;
  }));
  el.svg.addEventListener("click", () => download("svg"));
  el.png.addEventListener("click", () => download("png"));

  /* ---------- "your sentence": one made in the browser, shown as the sentence "own" ---------- */

  let ownVersion = 0; // counts the own sentences set: a new one is built afresh
  const sentenceKey = () => state.s === "own" ? "own " + ownVersion : state.s;

  /** S checked and completed (spotlight-more.js, which every module that sets one needs). */
  const ownSentence = S => more.ownSentence(S, data.heads.map(m => m.id), model);
  /** Make S (from ownSentence) the sentence "own", with its entry in the Sentence select, or, for
      null, drop it. Shows nothing new: the caller renders. */
  function keepOwn(S) {
    if (S === sentences.get("own")) return;
    el.sentence.querySelector('[label="Yours"]')?.remove();
    ownHeads = S?.extra || [];
    if (!S) return sentences.delete("own");
    sentences.set("own", S);
    ownVersion++;
    el.sentence.append(h("optgroup", { label: "Yours" }, [option("own", S.label)]));
  }

  /* ---------- the door: all that code loaded later may do to the spotlight ---------- */

  const door = Object.freeze({
    /** The page's elements by name (el.ownText is #sl-own-text); a module writes only into its own part. */
    el: Object.freeze(el),
    /** Read only: the page's model, {name, layers, heads} (null without one), its designed heads'
        descriptions in display order, and the default view's sentence and query. */
    info: { model, heads: data.heads, sentence: D.sentence, query: D.query },
    /** A copy of the state: {s, h, q, scale, hide, step, own}. */
    state: () => ({ ...state }),
    /** What is on screen (view() above): read it, never write to it. */
    view,
    /** A learner's action: change the state (any of s, h, q, scale, hide), clamped to a valid one, then shown. */
    update: patch => update(patch),
    /** Show S as "your sentence" (replacing the one before): one learner action, with `patch` for
        the rest of the state (e.g. {q: 0} or {h: "L0H0"}). S: {label, kind, queries, keys, note,
        key_label, own (the hash parameters that name it, e.g. "t=…"), heads, head_meta, real,
        roles_k, residual}, as ownSentence() checks it; throws if it is not one. */
    setOwnSentence(S, patch) {
      keepOwn(ownSentence(S));
      update({ ...patch, s: "own" });
    },
    /** Drop "your sentence"; if it is on screen, the spotlight goes back to the default sentence. */
    clearOwnSentence() {
      keepOwn(null);
      if (state.s === "own") update({}); // still the state, no longer a sentence: valid() falls back
    }
  });
  /** Start a later module: it gets the door and its own files ({src, css}), and paint(view) on every repaint. */
  const started = [];
  function begin(module, files) {
    module.start(door, files);
    started.push(module);
  }

  /* ---------- start ---------- */

  root.firstElementChild.remove(); // the no-JavaScript note
  for (const x of root.querySelectorAll(".sl-controls, .sl-desc, #sl-stage, #sl-pattern, .sl-panels, #sl-hood")) x.hidden = false;
  el.pattern.addEventListener("toggle", () => el.pattern.open && withScript("pattern", paint));
  if (data.own && el.own) { // "Your sentence": its code (the designed model in JavaScript, and the box) loads on first use
    el.own.hidden = false;
    el.own.addEventListener("focusin", () => withScript("own", () => {}, true), { once: true });
    el.own.addEventListener("submit", ev => { ev.preventDefault(); withScript("own", () => code.own.submit()); });
  }
  const start = parseHash();
  state = valid(start || { s: D.sentence, h: D.head, q: D.query });
  render();
  if (start) fromLocation(true); // another sentence or a real head starts loading now; the default view shows meanwhile

  // For the tests: the state, a way to show any state once its sentence's numbers are here, and the door.
  Labs.test.spotlight = { state: () => ({ ...state }), set: patch => withSentence(patch.s, () => update(patch)), door };
})();
