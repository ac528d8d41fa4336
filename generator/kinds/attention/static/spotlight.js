/* The spotlight (#spotlight): click a word, watch its attention fall on the others.
   One state object, one render(): build (when the sentence or the token set changes), measure
   (reads geometry once), paint (writes only, so a click stays cheap).
   Data: #lab-data, see docs/spotlight-data.md. Only the default sentence's numbers and a
   summary of the real model are on the page: the other sentences' numbers (data.lazy.src) and the
   model's attention (data.real.src) are scripts added the first time a learner asks for them.
   State lives in the URL hash: #s=<sentence>&h=<head id | L<layer>H<head>>&q=<query>&scale=1|0[&special=0] */
(() => {
  "use strict";
  const root = document.getElementById("spotlight");
  if (!root) return;
  const Labs = window.Labs, u = Labs.util, { h, fmt, sum } = u;
  const data = u.readJSON("lab-data");
  if (!data?.sentences?.length || !data.heads?.length) {
    root.firstElementChild.textContent = "The spotlight's data is missing from this page.";
    return;
  }

  // Every element with an id "sl-foo-bar" is el.fooBar.
  const el = {};
  for (const n of root.querySelectorAll("[id^=sl-]")) el[n.id.slice(3).replace(/-(\w)/g, (m, c) => c.toUpperCase())] = n;

  const D = data.default || {}, PREC = data.precision, real = data.real;
  const sentences = new Map(data.sentences.map(s => [s.id, s])), meta = new Map(data.heads.map(m => [m.id, m]));
  const headOf = (S, id) => Object.hasOwn(S.heads, id) && S.heads[id];
  const headsFor = S => data.heads.filter(m => headOf(S, m.id));
  const STEPS = u.all("button", el.steps);

  /* ---------- the real model: a summary on the page, the attention on demand ---------- */

  const modelName = real?.model.split("/").pop();
  const hasReal = sid => !!real?.sentence_ids.includes(sid);
  const realOf = sid => hasReal(sid) && Labs.realHeads?.[sid]; // false until the script has run
  const parseReal = id => /^L(\d+)H(\d+)$/.exec(id)?.slice(1).map(Number); // [layer, head] or undefined

  /* Scripts beside the page, added on demand: window.Labs[key] once loaded, then `done` runs.
     The numbers of every sentence but the default one (data.lazy), and the real model's attention. */
  const LAZY = {
    sentenceHeads: [data.lazy?.src, "this sentence's numbers", "pick it", () => {
      for (const S of data.sentences) S.heads ||= Labs.sentenceHeads[S.id] || null;
    }],
    realHeads: [real?.src, "the model's attention", "pick a real head", () => requestAnimationFrame(drawGrid)]
  };
  const scripts = {};
  let loading = 0, moves = 0;
  /** Run `then` once Labs[key] is here — at once if it is — unless the learner has moved on meanwhile. */
  function withScript(key, then) {
    if (Labs[key]) return then();
    const at = moves, [src, what, again, done] = LAZY[key];
    if (!scripts[key]) {
      scripts[key] = new Promise((resolve, reject) => {
        const tag = h("script", { src: new URL(src, document.baseURI).href });
        tag.addEventListener("load", () => Labs[key] ? resolve() : reject());
        tag.addEventListener("error", () => { tag.remove(); reject(); });
        document.head.append(tag);
      });
      busy(1, `Loading ${what}…`);
      scripts[key].then(() => {
        done();
        busy(-1, "");
      }, () => {
        scripts[key] = null; // the next request tries again
        busy(-1, `Could not load ${what} (${src}). Check the connection, then ${again} again.`);
        paint(); // the selects go back to what is on screen
      });
    }
    scripts[key].then(() => moves === at && then(), () => {});
  }
  /** Run `then` once sentence `sid` has its numbers (or once they could have: valid() falls back). */
  const lazy = sid => sentences.get(sid)?.heads === null && !Labs.sentenceHeads;
  const withSentence = (sid, then) => lazy(sid) ? withScript("sentenceHeads", then) : then();
  function busy(step, message) {
    loading += step;
    root.toggleAttribute("aria-busy", loading > 0);
    root.dataset.ready = !loading;
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
    if (!hid) hid = headOf(S, D.head) ? D.head : headsFor(S)[0].id;
    const isReal = !!parseReal(hid), n = isReal ? R.words.length : S.queries.length;
    let q = parseInt(st.q, 10);
    if (!(q >= 0 && q < n)) q = s === D.sentence && !isReal && D.query < n ? D.query : 0;
    const hide = !!st.hide; // remembered across heads; it only applies to real ones
    if (isReal && hide && R.special[q]) q = Math.max(0, R.special.indexOf(false));
    return { s, h: hid, q, scale: st.scale !== false, hide, step: st.step || 0 };
  }

  /** The URL hash of a state; two states that show the same thing have the same hash. */
  const hashOf = st => `#s=${encodeURIComponent(st.s)}&h=${encodeURIComponent(st.h)}&q=${st.q}&scale=${+st.scale}` +
    (parseReal(st.h) ? `&special=${+!st.hide}` : "");
  function parseHash() {
    const p = new URLSearchParams(location.hash.slice(1)), get = k => p.get(k);
    return p.has("s") || p.has("h") || p.has("q")
      ? { s: get("s"), h: get("h"), q: get("q"), scale: get("scale") !== "0", hide: get("special") === "0" } : null;
  }

  // pushState costs as much as the repaint itself, so the URL is written just after it, once
  // per burst of changes (a new history entry if any change in the burst asked for one).
  let hashTimer = 0, hashReplace = true, lastKey = 0;
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

  /** Change the state from a learner's action; arrow keys held down (`byKey`) make one history entry, not dozens. */
  function update(patch, byKey) {
    moves++;
    const next = valid({ ...state, ...patch }), changed = hashOf(next) !== hashOf(state), now = Date.now();
    state = next;
    render();
    if (!changed) return;
    scheduleHash(byKey && now - lastKey < 1000);
    lastKey = byKey ? now : 0;
    announce();
  }

  /* ---------- the view model: what the current state shows ---------- */

  /** A teaching head's weights and percentages for query q, with or without ÷√d. */
  const rowOf = (H, q) => state.scale ? [H.weights[q], H.pct[q]] : [H.weights_unscaled[q], H.pct_unscaled[q]];

  /** Everything paint() needs for the current state, without touching the DOM. */
  function view() {
    const S = sentences.get(state.s), rh = parseReal(state.h), q = state.q;
    let v;
    if (rh) {
      const R = realOf(state.s), row = R.attention[rh[0]][rh[1]][q];
      v = { queries: R.words, keys: R.words, special: R.special, weights: row.map(x => x / 1000), pct: u.roundShares(row, 100),
        masked: [], hidden: R.special.map(sp => state.hide && sp), name: `layer ${rh[0]}, head ${rh[1]}` };
    } else {
      const H = S.heads[state.h], m = meta.get(state.h), [weights, pct] = rowOf(H, q);
      v = { H, m, queries: S.queries, keys: S.keys, cross: S.kind === "cross", special: [], hidden: [], weights, pct,
        masked: H.scores[q].map(x => x === null), name: m.name + " head" };
    }
    return { ...v, S, real: !!rh, word: v.queries[q] };
  }

  /** The `n` largest shares, as "cat 41%, mat 28%, on 12%" (ties: the larger weight, then the earlier word). */
  function top(keys, pct, n, weights = pct, skip = []) {
    return keys.map((k, j) => j).filter(j => !skip[j] && pct[j] > 0)
      .sort((a, b) => pct[b] - pct[a] || weights[b] - weights[a] || a - b)
      .slice(0, n).map(j => `${keys[j]} ${pct[j]}%`).join(", ");
  }
  function announce() {
    const v = view();
    el.live.textContent = `${v.word}: ${top(v.keys, v.pct, 3, v.weights, v.keys.map((k, j) => v.hidden[j] || v.masked[j]))}`;
  }

  /* ---------- structure: rebuilt when the sentence or the token set changes ---------- */

  let built = "", geo = {}, qButtons = [], kWords = [], rows = [], paths = [], minis = [], cells = [];
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
    el.keys.hidden = el.kLabel.hidden = !cross;
    el.band.toggleAttribute("hidden", !cross); // SVG elements have no .hidden property
    el.arcs.toggleAttribute("hidden", cross);
    el.qLabel.textContent = cross ? "Queries — click a word" : "Click a word to make it the query";
    el.kLabel.textContent = "Keys and values: " + (S.key_label || "the other sentence");

    // One link per key, and one readout row.
    paths = v.keys.map(() => h("path", null, null, u.SVG));
    el.arcs.querySelector(".sl-links").replaceChildren(...(cross ? [] : paths));
    el.band.querySelector(".sl-links").replaceChildren(...(cross ? paths : []));
    rows = v.keys.map((w, j) => {
      const r = { pct: h("td", { class: "sl-pct" }), fill: h("span"), tag: h("span", { class: "sl-tag" }) };
      r.tr = h("tr", { "data-index": j, hidden: v.hidden[j] }, [h("th", { scope: "row" }, [w, r.tag]), r.pct,
        h("td", { "aria-hidden": "true" }, [h("span", { class: "sl-bar" }, [r.fill])])]);
      return r;
    });
    el.readout.tBodies[0].replaceChildren(...rows.map(r => r.tr));

    // Small multiples: every teaching head for this sentence.
    minis = headsFor(S).map(m => {
      const mini = { id: m.id, top: h("span"), canvas: h("canvas", { "aria-hidden": "true" }) };
      mini.button = button({ class: "sl-mini", "data-head": m.id, "aria-pressed": "false" }, [h("b", null, [m.name]), mini.canvas, mini.top]);
      return mini;
    });
    el.multiples.replaceChildren(...minis.map(m => m.button));

    // The Head select, and the model view — both from the page's summary of the real model.
    el.head.replaceChildren(h("optgroup", { label: "Teaching heads" }, headsFor(S).map(m => option(m.id, m.name))));
    el.model.hidden = !real;
    el.modelHeads.hidden = !hasReal(S.id);
    cells = [];
    if (!real) return;
    el.modelTitle.textContent = `Model view: the ${real.layers * real.heads} real heads of ${modelName}`;
    el.modelIntro.textContent = !hasReal(S.id)
      ? `${real.model} reads one sentence at a time, so it has no cross-attention to show here. Pick another sentence to see its real heads.`
      : `The real attention weights of ${real.model} (${real.layers} layers × ${real.heads} heads) for this sentence, computed ` +
        "by our NumPy forward pass of its published weights: nobody designed them. Each square shows where the current word " +
        "looks in one head; layers and heads count from 0.";
    if (!hasReal(S.id)) return;
    const grid = [];
    for (let L = 0; L < real.layers; L++) {
      const options = [];
      grid.push(h("span", { "aria-hidden": "true" }, ["L" + L]));
      for (let H = 0; H < real.heads; H++) {
        const id = `L${L}H${H}`, name = `layer ${L}, head ${H}`, canvas = h("canvas", { "aria-hidden": "true" });
        options.push(option(id, name));
        cells.push({ id, L, H, canvas, button: button({ class: "sl-cell", "data-head": id, "aria-label": name, "aria-pressed": "false",
          tabindex: cells.length ? -1 : 0 }, [canvas]) });
        grid.push(cells.at(-1).button);
      }
      el.head.append(h("optgroup", { label: `${modelName}, layer ${L}` }, options));
    }
    el.grid.style.setProperty("--heads", real.heads);
    el.grid.replaceChildren(...grid);
    el.finder.replaceChildren(...(real.finder || []).filter(f => f.head).map(finderItem));
  }

  /** One relation of the head finder: the head picked on one half, its held-out score, the baselines, links. */
  function finderItem(f) {
    const b = f.head, pc = x => Math.round(x * 100) + "%", s = n => n === 1 ? "" : "s";
    const [off, tag] = f.baselines, away = Math.abs(off.offset), [vOff, vTag] = f.versus;
    const link = (ex, text) => ex && h("a", { href: `#s=${encodeURIComponent(ex.sentence)}&h=L${b.layer}H${b.head}&q=${ex.q}&scale=1&special=1` },
      [`${text}: “${ex.word}” → “${ex.target}” in “${sentences.get(ex.sentence)?.label || ex.sentence}”`]);
    const verdict = f.beats_baseline ? "Beats both rules on the held-out pairs."
      : !vOff.wins && !vOff.losses && !vTag.wins && !vTag.losses ? "It agrees with both rules on every held-out pair, so these pairs do not show it doing more than they do."
      : `Not shown to beat both rules on these held-out pairs (against the offset rule ${vOff.wins} won, ${vOff.losses} lost; ` +
        `against the tag rule ${vTag.wins} won, ${vTag.losses} lost).`;
    const best = f.best_held, other = best.layer !== b.layer || best.head !== b.head;
    return h("li", null, [
      h("b", null, [f.relation]), ` — ${f.count} labelled pairs in ${f.sentences} sentences. Picked on ${f.pick.count}: `,
      button({ class: "btn", "data-head": `L${b.layer}H${b.head}` }, [`layer ${b.layer}, head ${b.head}`]),
      ` (${pc(b.pick_hit)} there` + (b.ties > 1 ? `; ${b.ties} heads tie on that, the one with more weight on the target is shown` : "") +
      `). Held out, ${f.held.count} pairs: it finds ${pc(b.held_hit)} (mean weight on the target ${pc(b.held_weight)}); ` +
      `looking ${away} word${s(away)} ${off.offset < 0 ? "back" : "ahead"} finds ${pc(off.held_hit)}; the nearest ` +
      `${tag.tags.join("/")} finds ${pc(tag.held_hit)}. ${verdict}` +
      (other ? ` (Best head on the held-out pairs themselves: layer ${best.layer}, head ${best.head}, ${pc(best.held_hit)} — ` +
        "an optimistic number, chosen on the data it is scored on.)" : ""),
      ...[link(f.examples.works, "Works"), link(f.examples.fails, "Fails")].filter(Boolean).flatMap(a => [" ", a])]);
  }

  /* ---------- measure: geometry, read once per structure or resize ---------- */

  function measure() {
    const cross = root.classList.contains("is-cross");
    // Reads first.
    const rowW = el.queries.clientWidth, dpr = Math.min(devicePixelRatio || 1, 2), cs = getComputedStyle(root);
    const centre = b => !b.hidden && [b.offsetLeft + b.offsetWidth / 2, b.offsetTop];
    const qc = qButtons.map(centre), kc = cross ? kWords.map(centre) : qc;
    const lines = c => new Set(c.filter(Boolean).map(p => p[1])).size;
    const miniW = minis.map(m => m.canvas.clientWidth);
    // Then writes.
    const arcH = Math.round(Math.min(120, Math.max(48, rowW * 0.11))), svgH = cross ? 72 : arcH;
    geo = { qc, kc, arcH, dpr, wrapped: lines(qc) > 1 || lines(kc) > 1, colors: ["--accent", "--surface-2", "--focus"].map(p => cs.getPropertyValue(p).trim()) };
    root.classList.toggle("is-wrapped", geo.wrapped);
    el.wrapnote.hidden = !geo.wrapped;
    const svg = cross ? el.band : el.arcs;
    svg.setAttribute("viewBox", `0 0 ${Math.max(1, rowW)} ${svgH}`);
    svg.setAttribute("height", svgH);
    minis.forEach((m, i) => { m.canvas.width = Math.max(1, Math.round(miniW[i] * dpr)); m.canvas.height = Math.round(18 * dpr); });
    gridDrawn = "";
    clampDesc();
  }

  /* ---------- paint: writes only ---------- */

  function render() {
    const isReal = !!parseReal(state.h), key = `${state.s}|${isReal}|${isReal && state.hide}`;
    if (key === built) return paint();
    // Rebuilding replaces buttons: keep keyboard focus on the equivalent new one.
    const a = document.activeElement, box = a.parentNode.id;
    const again = a !== root && root.contains(a) && box && `#${box} > [${a.dataset.head ? `data-head="${a.dataset.head}"` : 'aria-pressed="true"'}]`;
    build();
    if (isReal) el.model.open = true; // showing a real head shows where it sits among the others
    built = key;
    measure();
    paint();
    if (again && !root.contains(document.activeElement)) root.querySelector(again)?.focus();
  }

  let descText = "", printing = false;
  function paint() {
    const v = view(), S = v.S, q = state.q, causal = S.kind === "causal";
    const set = (node, attr, value) => node.setAttribute(attr, value);

    // Controls.
    el.sentence.value = state.s;
    el.head.value = state.h;
    el.scale.checked = state.scale;
    el.scale.disabled = v.real;
    el.specialField.hidden = !v.real;
    el.special.checked = state.hide;
    const desc = v.real
      ? `A real head of ${modelName} (${v.name}). Its weights come from the pretrained model; the ÷√d switch applies to the teaching heads only.`
      : v.cross && v.m.cross || v.m.description + (v.H.bias ? " It also adds a position bias (move 2 below shows it)." : "");
    if (desc !== descText) {
      descText = el.headDesc.textContent = desc;
      openDesc(false);
    }

    // Words: the query, shading by weight, masked future words; links whose width and opacity grow with the weight.
    qButtons.forEach((b, i) => {
      set(b, "aria-pressed", i === q);
      b.tabIndex = i === q ? 0 : -1;
      b.classList.toggle("is-masked", !!v.masked[i]);
    });
    kWords.forEach((w, j) => w.style.setProperty("--w", v.masked[j] ? 0 : v.weights[j]));
    const from = geo.qc[q];
    paths.forEach((p, j) => {
      const to = geo.kc[j], w = v.weights[j], show = !geo.wrapped && from && to && !v.masked[j] && !v.hidden[j] && w > 0.004;
      set(p, "d", show ? linkPath(from[0], to[0], v.cross, !v.cross && j === q) : "");
      set(p, "stroke-width", (0.75 + 11 * w).toFixed(2));
      set(p, "opacity", Math.min(1, 0.12 + 1.6 * w).toFixed(3));
    });

    // Notes under the sentence.
    const notes = [v.real && causal ? "This model is an encoder: it reads the whole sentence at once, with no causal mask." : S.note];
    const later = v.keys.length - 1 - q;
    if (!v.real && causal && later > 0) {
      notes.push(`Greyed out: the ${later === 1 ? "word" : later + " words"} after “${v.word}”, masked to weight 0` +
        (/look ahead/i.test(S.note) ? "." : " — a decoder can't look ahead."));
    }
    const hiddenNames = [...new Set(v.keys.filter((k, j) => v.hidden[j]))], hiddenPct = sum(v.pct.filter((p, j) => v.hidden[j]));
    if (state.hide && v.real) notes.push(`Hiding ${hiddenNames.join("/")}: ${hiddenPct}% of this row. The other weights are not renormalised.`);
    el.note.textContent = notes.join(" ").trim();

    // Readout table.
    el.caption.textContent = `Where “${v.word}” looks — ${v.name}` + (v.cross ? ", in the " + (S.key_label || "other sentence") : "") +
      (v.real || state.scale ? "" : " (no ÷√d)");
    rows.forEach((r, j) => {
      const self = !v.cross && j === q;
      r.pct.textContent = v.pct[j] + "%";
      r.fill.style.width = (v.weights[j] * 100).toFixed(1) + "%";
      r.tr.classList.toggle("is-query", self);
      r.tr.classList.toggle("is-masked", !!v.masked[j]);
      r.tag.textContent = v.masked[j] ? "masked" : self ? "itself" : "";
    });
    const foot = (label, pct, cls) => h("tr", { class: cls }, [h("th", { scope: "row" }, [label]), h("td", { class: "sl-pct" }, [pct + "%"]), h("td")]);
    el.readout.tFoot.replaceChildren(...(hiddenNames.length ? [foot("Shown", 100 - hiddenPct), foot("Hidden " + hiddenNames.join(", "), hiddenPct, "sl-hidden-row")] : []),
      foot("Total", sum(v.pct), "sl-total"));

    // The quadratic cost.
    const nq = v.queries.length, nk = v.keys.length, n2 = nq * nk, all = real && real.layers * real.heads;
    el.cost.textContent = v.real
      ? `${nq} tokens (with ${v.special.filter(Boolean).length} special) → ${n2} scores per head; this model's ${all} heads compute ${(n2 * all).toLocaleString("en")}. At 2× the tokens, 4× the scores.`
      : v.cross ? `${nq} queries × ${nk} keys → ${n2} scores; double both and it's 4× the scores (${4 * n2}).`
      : `${nq} words → ${n2} scores; at 2× the words (${2 * nq}), 4× the scores (${4 * n2}).` +
        (causal ? ` The causal mask keeps ${nq * (nq + 1) / 2} of them; the rest are never used.` : "");

    // Small multiples (teaching heads, same word) and the model grid.
    const tq = v.real ? toTeach(q) : q;
    for (const m of minis) {
      const [w, pct] = rowOf(S.heads[m.id], tq);
      set(m.button, "aria-pressed", !v.real && m.id === state.h);
      m.top.textContent = "→ " + top(S.keys, pct, 1);
      drawBars(m.canvas, w, v.cross ? -1 : tq);
    }
    for (const c of cells) set(c.button, "aria-pressed", c.id === state.h);
    requestAnimationFrame(drawGrid);

    // Under the hood: the four moves with this word's numbers (all four when printing).
    el.hoodTitle.textContent = `Under the hood: the numbers for “${v.word}”`;
    el.steps.hidden = el.prevStep.parentNode.hidden = v.real;
    STEPS.forEach((b, i) => i === state.step ? set(b, "aria-current", "step") : b.removeAttribute("aria-current"));
    el.prevStep.disabled = state.step === 0;
    el.nextStep.disabled = state.step === 3;
    el.step.replaceChildren(...(v.real
      ? [h("p", null, ["This is a real head, so its queries and keys live in the model's learned dimensions, which the page " +
        "does not embed. What it does carry is the result of the first three moves: the softmax weights in the table, each row adding up to 100%."])]
      : (printing ? [0, 1, 2, 3] : [state.step]).map(s => h("div", { "data-step": s }, [h("h4", null, [`${s + 1}. ${STEPS[s].textContent}`]), ...hood(v, s)]))));
    if (!loading) root.dataset.ready = "true";
  }

  /* The head's description is clamped to a line or two (phones: the sentence stays in view);
     "more" shows the rest. The whole text is always in the DOM for the select's aria-describedby. */
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
     model view is open and the real heads are here, again only when the query or size changed. */
  let gridDrawn = "";
  function drawGrid() {
    const R = realOf(state.s);
    if (!cells.length || !R || !el.model.open) return;
    const rq = parseReal(state.h) ? state.q : toReal(state.q), px = Math.max(1, Math.round(cells[0].button.clientWidth * geo.dpr));
    const sig = `${state.s}|${rq}|${px}`;
    if (sig === gridDrawn) return;
    gridDrawn = sig;
    for (const c of cells) {
      c.canvas.width = c.canvas.height = px;
      drawBars(c.canvas, R.attention[c.L][c.H][rq].map(x => x / 1000), rq);
    }
  }

  /** A link from x1 to x2: an arc above the row (a loop for the word itself), or a band down to the keys. */
  function linkPath(x1, x2, cross, self) {
    const H = geo.arcH, top = (H - Math.min(H - 6, 16 + Math.abs(x2 - x1) * 0.32) * 4 / 3).toFixed(1);
    if (self) return `M${x1 - 7} ${H}C${x1 - 15} ${H - 34} ${x1 + 15} ${H - 34} ${x1 + 7} ${H}`;
    [x1, x2] = [x1.toFixed(1), x2.toFixed(1)];
    return cross ? `M${x1} 0C${x1} 36 ${x2} 36 ${x2} 72` : `M${x1} ${H}C${x1} ${top} ${x2} ${top} ${x2} ${H}`;
  }

  /** One bar per key, as tall as its weight; the query's own bar in the focus colour (qi = -1: none). */
  function drawBars(canvas, weights, qi) {
    const ctx = canvas.getContext("2d"), [accent, track, query] = geo.colors, W = canvas.width, H = canvas.height;
    const bw = W / weights.length, gap = bw > 4 ? 1 : 0;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = track;
    ctx.fillRect(0, H - 1, W, 1);
    weights.forEach((w, j) => {
      const hh = w > 0 ? Math.max(1, w * H) : 0;
      ctx.fillStyle = j === qi ? query : accent;
      ctx.fillRect(j * bw + gap / 2, H - hh, Math.max(1, bw - gap), hh);
    });
  }

  /* Map a query between the teaching words and the model's tokens ([CLS] the cat … [SEP]):
     each word goes to its first word piece ("didn't" → didn ' t). */
  function alignment(sid) {
    const { words, special } = realOf(sid), map = [];
    let p = 0;
    for (const w of sentences.get(sid).queries) {
      while (p < words.length - 1 && special[p]) p++;
      map.push(p);
      for (let got = ""; p < words.length && !special[p] && got.length < w.length;) got += words[p++].replace(/^##/, "");
    }
    return map;
  }
  const toReal = q => alignment(state.s)[q];
  const toTeach = rq => Math.max(0, alignment(state.s).filter(p => p <= rq).length - 1);

  /* ---------- under the hood: the four moves, with the actual numbers ---------- */

  /** Step s (0–3) for the current word: a paragraph or two and a table of the numbers. */
  function hood(v, s) {
    const { H, m, S } = v, q = state.q, d = m.q_dims.length, kd = m.k_dims || m.q_dims, bias = H.bias;
    const vec = x => u.short(x, PREC.vectors), p = (...kids) => h("p", null, kids);
    const cols = vectors => vectors[0].map((x, c) => c).filter(c => vectors.some(r => r[c]));
    const key = j => v.keys[j] + (S.roles_k?.[j] ? " · " + S.roles_k[j] : "");
    const row = (label, cells, cls) => h("tr", { class: cls }, [h("th", { scope: "row" }, [label]),
      ...cells.map(c => h("td", { class: c === "0" ? "z" : null }, [c]))]);
    const rowsFor = cellsOf => v.keys.map((k, j) => row(key(j), cellsOf(j), v.masked[j] ? "is-masked" : null));
    function table(caption, head, body, foot) {
      return h("div", { class: "sl-scroll", tabindex: 0, role: "region", "aria-label": caption }, [h("table", { class: "sl-num" }, [
        h("caption", null, [caption]), h("thead", null, [h("tr", null, head.map(c => h("th", { scope: "col" }, [c])))]),
        h("tbody", null, body), foot && h("tfoot", null, [foot])])]);
    }
    // The score that goes into the softmax: the build's scaled score, or q·k + bias when ÷√d is off.
    const score = j => H.scores[q][j] === null ? null : state.scale ? H.scaled[q][j] : H.scores[q][j] + (bias ? bias[q][j] : 0);

    if (s === 0) {
      const c = cols([H.q[q], ...H.k]), left = d - c.length;
      return [p("Three matrices, W_Q, W_K and W_V, turn every word's vector into a query (what it looks for), a key (what it " +
        "offers) and a value (what it hands over). In a trained model these matrices are learned; in this designed model they are " +
        "written by hand, so every dimension has a name. This head's queries and keys have d", h("sub", null, ["k"]),
        ` = ${d} dimensions. “${v.word}” asks with its query; every ` +
        `${v.cross ? "word of the " + (S.key_label || "other sentence") : "word"} answers with its key.`),
      table("Query and keys" + (left ? ` (${left} all-zero dimension${left > 1 ? "s" : ""} left out)` : ""),
        ["vector", ...c.map(i => kd[i] === m.q_dims[i] ? kd[i] : h("span", null, [m.q_dims[i], h("br"), "× " + kd[i]]))],
        [row("q  " + v.word, c.map(i => vec(H.q[q][i])), "is-q"), ...H.k.map((k, j) => row("k  " + key(j), c.map(i => vec(k[i])), v.masked[j] ? "is-masked" : null))])];
    }
    if (s === 1) {
      const head = ["key", "q·k", ...(state.scale ? ["÷ √" + d] : []), ...(bias ? ["+ bias"] : []), "= score"];
      return [p("Each score is the dot product q·k: multiply matching dimensions and add. A high score means “this key is " +
        "what I'm looking for”. " + (state.scale
          ? `Then divide by √d = √${d} = ${fmt(Math.sqrt(d), 2)}, as every Transformer does: dot products of longer vectors ` +
            "spread wider, and the division keeps the scores in the same range whatever d is."
          : "The ÷√d switch is off, so the raw scores go straight to the softmax.")),
      bias && p("This head also adds a fixed bias B to every score, after the division — softmax(QKᵀ/√d + B)V. Real models " +
        "do this too (T5 and ALiBi add position biases). Here: " + m.bias),
      // The scaled column is the build's score less the bias, so each row adds up as printed.
      table(`Scores for “${v.word}”`, head, rowsFor(j => H.scores[q][j] === null ? ["masked", ...head.slice(2).map(() => "–")]
        : [vec(H.scores[q][j]), ...(state.scale ? [vec(H.scaled[q][j] - (bias ? bias[q][j] : 0))] : []), ...(bias ? [vec(bias[q][j])] : []), vec(score(j))]))];
    }
    if (s === 2) {
      const scores = v.keys.map((k, j) => score(j)), max = Math.max(...scores.filter(x => x !== null));
      const ex = scores.map(x => x === null ? 0 : Math.exp(x - max)), total = sum(ex);
      return [p(`Softmax turns scores into weights: subtract the largest score (${fmt(max, 3)}) so nothing overflows, take e to ` +
        `the power of each, then divide by their sum (${fmt(total, 3)}). The weights are never negative and add up to 1` +
        (S.kind === "causal" ? "; masked words count as −∞, so they get exactly 0." : ".")),
      table(`Softmax for “${v.word}”`, ["key", "score", "e^(score − max)", "weight", "%"], rowsFor(j => scores[j] === null
        ? ["−∞", "0", fmt(0, 4), "0%"] : [vec(scores[j]), fmt(ex[j], 3), fmt(v.weights[j], PREC.weights), v.pct[j] + "%"]),
      row("sum", ["", fmt(total, 3), fmt(sum(v.weights), 2), sum(v.pct) + "%"]))];
    }
    const out = state.scale ? H.out[q] : H.v[0].map((x, c) => sum(H.v.map((r, j) => v.weights[j] * r[c])));
    const c = cols([...H.v, out]);
    return [p(`First the blend: each word's value vector times its weight, added up. This head has its own W_V, so its values ` +
      `say only what it hands over (${m.v_dims.join(", ")}); words with more weight pour more of it in.` +
      (state.scale ? "" : " (With ÷√d off, this blend is recomputed here from the weights shown.)")),
    table("Values, weighted", ["value", "weight", ...c.map(i => m.v_dims[i])], rowsFor(j => [fmt(v.weights[j], 3), ...c.map(i => vec(H.v[j][i]))]),
      row("blend", ["Σ", ...c.map(i => fmt(out[i], 3))])),
    ...residual(v, m, H, q)];
  }

  /** The rest of move 4: the blend through W_O, added to the word's own vector (built with ÷√d, all heads). */
  function residual(v, m, H, q) {
    const S = v.S, R = S.residual || S.heads[data.heads[0].id]?.residual, dims = data.residual_dims, p = (...kids) => h("p", null, kids);
    if (!R || !H.o) return [];
    const shown = headsFor(S), before = dims.map((d, i) => R.before[q][i] ?? 0), after = R.after[q];
    const mine = dims.map(d => { const i = m.o_dims.indexOf(d); return i < 0 ? 0 : H.o[q][i]; });
    const others = dims.map((d, i) => after[i] - before[i] - mine[i]);
    const rowsShown = dims.map((d, i) => i).filter(i => before[i] || mine[i] || Math.abs(others[i]) >= 0.05);
    const left = dims.filter((d, i) => others[i] && Math.abs(others[i]) < 0.05).length;
    const widths = shown.map(x => x.o_dims.length);
    const cell = x => x ? u.short(x, 3) : "0", nRoles = dims.indexOf("subject");
    const role = dims[before.findIndex((x, i) => i < nRoles && x === 1)] || "its role";
    return [p(`The blend does not replace “${v.word}”. In a real layer each head's blend is multiplied by its block of the ` +
      "output matrix W_O and the result is added to the word's own vector, the residual stream: x + concat(" +
      shown.map(x => x.name.toLowerCase()).join(", ") + `)·W_O. Here the ${shown.length} heads' blends (${widths.join(" + ")} = ` +
      `${sum(widths)} numbers, one W_V per head) are joined and projected by one W_O.`),
    p(`Our W_O simply copies each head's blend into slots of its own (${m.o_dims.slice(0, 2).join(", ")}…), so you can ` +
      `read what got added; a trained W_O mixes all heads into every dimension. So “${v.word}” keeps ${role} = 1 — it does ` +
      "not turn into what it looked at — and gains what its heads found." + (state.scale ? "" : " This table shows the layer as built, with ÷√d.")),
    h("div", { class: "sl-scroll", tabindex: 0, role: "region", "aria-label": `“${v.word}” before and after` }, [h("table", { class: "sl-num" }, [
      h("caption", null, [`“${v.word}” before → after the layer`]),
      h("thead", null, [h("tr", null, ["dimension", "before", `+ ${m.name}`, "+ other heads", "= after"].map(x => h("th", { scope: "col" }, [x])))]),
      h("tbody", null, rowsShown.map(i => h("tr", { class: mine[i] ? "is-q" : null }, [h("th", { scope: "row" }, [dims[i]]),
        ...[before[i], mine[i], others[i], after[i]].map(x => h("td", { class: x ? null : "z" }, [cell(x)]))])))])]),
    left ? p(`${left} smaller entr${left === 1 ? "y" : "ies"} from the other heads (under 0.05) left out.`) : null].filter(Boolean);
  }

  /* ---------- events ---------- */

  /** Switch head, carrying the query across between teaching words and model tokens. */
  function selectHead(id) {
    if (parseReal(id) && !realOf(state.s)) return hasReal(state.s) ? withScript("realHeads", () => selectHead(id)) : paint();
    const wasReal = !!parseReal(state.h), isReal = !!parseReal(id);
    update({ h: id, q: isReal === wasReal ? state.q : isReal ? toReal(state.q) : toTeach(state.q) });
  }

  el.queries.addEventListener("click", ev => {
    const b = ev.target.closest(".word");
    if (b) update({ q: +b.dataset.index });
  });
  u.roving(el.queries, ".word", item => update({ q: +item.dataset.index }, true));
  el.sentence.addEventListener("change", () => {
    const s = el.sentence.value;
    withSentence(s, () => {
      const q = s === D.sentence ? D.query : 0, R = parseReal(state.h) && realOf(s);
      update({ s, h: headOf(sentences.get(s), state.h) || R ? state.h : "", q: R ? alignment(s)[q] : q });
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
  el.model.addEventListener("toggle", () => el.model.open && hasReal(state.s) && withScript("realHeads", drawGrid));

  el.steps.addEventListener("click", ev => {
    const b = ev.target.closest("[data-step]");
    if (b) goStep(+b.dataset.step, true);
  });
  el.prevStep.addEventListener("click", () => goStep(state.step - 1));
  el.nextStep.addEventListener("click", () => goStep(state.step + 1));
  function goStep(s, picked) {
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
    if (lazy(p.s)) return withScript("sentenceHeads", () => fromLocation(scroll));
    if (parseReal(p.h) && hasReal(p.s) && !Labs.realHeads) return withScript("realHeads", () => fromLocation(scroll));
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
  }
  addEventListener("popstate", () => fromLocation());
  addEventListener("hashchange", () => fromLocation(true));

  let pending = 0;
  function remeasure() {
    pending ||= requestAnimationFrame(() => { pending = 0; measure(); paint(); });
  }
  new ResizeObserver(remeasure).observe(el.queries);
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", remeasure);
  for (const [event, on] of [["beforeprint", true], ["afterprint", false]]) addEventListener(event, () => { printing = on; paint(); });

  /* ---------- start ---------- */

  root.firstElementChild.remove(); // the no-JavaScript note
  for (const x of root.querySelectorAll(".sl-controls, .sl-desc, #sl-stage, .sl-panels, #sl-hood")) x.hidden = false;
  const start = parseHash();
  state = valid(start || { s: D.sentence, h: D.head, q: D.query });
  render();
  if (start) fromLocation(true); // another sentence or a real head starts loading now; the default view shows meanwhile

  Labs.spotlight = { state: () => ({ ...state }), set: patch => withSentence(patch.s, () => update(patch)) };
})();
