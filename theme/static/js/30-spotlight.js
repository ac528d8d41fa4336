/* The spotlight (#spotlight): click a word, watch its attention fall on the others.
   One state object, one render(): structure (rebuilt when the sentence or token set changes),
   measure (reads geometry once), paint (writes only — no layout reads, so a click stays cheap).
   Data: #spotlight-data, see docs/spotlight-data.md. State lives in the URL hash:
   #s=<sentence>&h=<head id | L<layer>H<head>>&q=<query index>&scale=<1|0>[&special=0] */
(function () {
  "use strict";
  var root = document.getElementById("spotlight");
  if (!root) return;
  var Labs = window.Labs, u = Labs.util, h = u.h, fmt = u.fmt;
  var data = u.readJSON("spotlight-data");
  var noJs = root.querySelector(".sl-nojs");
  if (!data || !data.sentences || !data.sentences.length || !data.heads || !data.heads.length) {
    if (noJs) noJs.textContent = "The spotlight's data is missing from this page, so it cannot be shown.";
    return;
  }

  function $(id) { return document.getElementById(id); }
  var el = {
    sentence: $("sl-sentence"), head: $("sl-head"), scale: $("sl-scale"), special: $("sl-special"),
    specialField: $("sl-special-field"), headDesc: $("sl-head-desc"), stage: $("sl-stage"),
    qLabel: $("sl-q-label"), kLabel: $("sl-k-label"), arcs: $("sl-arcs"), band: $("sl-band"),
    queries: $("sl-queries"), keys: $("sl-keys"), note: $("sl-note"), wrapnote: $("sl-wrapnote"),
    caption: $("sl-caption"), table: $("sl-readout"), cost: $("sl-cost"), multiples: $("sl-multiples"),
    model: $("sl-model"), modelIntro: $("sl-model-intro"), grid: $("sl-grid"), finder: $("sl-finder"),
    hoodTitle: $("sl-hood-title"), steps: $("sl-steps"), step: $("sl-step"),
    prevStep: $("sl-prev-step"), nextStep: $("sl-next-step"), live: $("sl-live")
  };
  el.tbody = el.table.tBodies[0];
  el.tfoot = el.table.tFoot;
  el.arcLinks = el.arcs.querySelector(".sl-links");
  el.bandLinks = el.band.querySelector(".sl-links");

  var PREC = data.precision || { vectors: 3, weights: 4 };
  var real = data.real || null;
  var REAL_ID = /^L(\d+)H(\d+)$/;
  var headMeta = {}, sentences = {};
  data.heads.forEach(function (hd) { headMeta[hd.id] = hd; });
  data.sentences.forEach(function (s) { sentences[s.id] = s; });
  var STEP_NAMES = ["Three projections", "Score every pair", "Softmax to weights", "Blend the values"];
  var KIND_GROUPS = [["self", "Self-attention"], ["causal", "Causal (decoder)"], ["cross", "Cross-attention"]];

  /* ---------- state ---------- */

  var state = { s: "", h: "", q: 0, scale: true, hide: false, step: 0 };

  function realOf(s) { return real && real.sentences && real.sentences[s] ? real.sentences[s] : null; }
  function parseReal(id) {
    var m = REAL_ID.exec(id || "");
    return m ? { layer: +m[1], head: +m[2] } : null;
  }
  function headsFor(s) { return data.heads.filter(function (hd) { return sentences[s].heads[hd.id]; }); }

  /** Clamp any (possibly hand-edited) state into a valid one. */
  function valid(st) {
    var d = data["default"] || {};
    var s = sentences[st.s] ? st.s : (sentences[d.sentence] ? d.sentence : data.sentences[0].id);
    var S = sentences[s], R = realOf(s), rh = parseReal(st.h);
    var hid = st.h;
    if (rh) {
      if (!R || rh.layer >= real.layers || rh.head >= real.heads) hid = "";
    } else if (!S.heads[hid]) hid = "";
    if (!hid) hid = S.heads[d.head] ? d.head : headsFor(s)[0].id;
    var isReal = !!parseReal(hid);
    var n = isReal ? R.words.length : S.queries.length;
    var q = parseInt(st.q, 10);
    if (!(q >= 0 && q < n)) q = s === d.sentence && !isReal && d.query < n ? d.query : 0;
    var hide = !!st.hide; // remembered across heads; it only applies to real ones
    if (isReal && hide && R.special[q]) q = firstPlain(R);
    return { s: s, h: hid, q: q, scale: st.scale !== false, hide: hide, step: st.step || 0 };
  }
  function firstPlain(R) {
    for (var i = 0; i < R.special.length; i++) if (!R.special[i]) return i;
    return 0;
  }

  function hashOf(st) {
    var parts = ["s=" + encodeURIComponent(st.s), "h=" + encodeURIComponent(st.h), "q=" + st.q,
      "scale=" + (st.scale ? 1 : 0)];
    if (parseReal(st.h)) parts.push("special=" + (st.hide ? 0 : 1));
    return "#" + parts.join("&");
  }
  function parseHash() {
    var raw = (location.hash || "").slice(1);
    if (!/(^|&)(s|h|q)=/.test(raw)) return null;
    var p = {};
    raw.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) {
        try { p[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1)); } catch (e) { /* bad escape */ }
      }
    });
    return { s: p.s, h: p.h, q: p.q, scale: p.scale !== "0", hide: p.special === "0" };
  }

  var lastPush = 0;
  function writeHash(replace) {
    var target = hashOf(state);
    if (location.hash === target) return;
    try {
      if (replace) history.replaceState(null, "", target);
      else history.pushState(null, "", target);
    } catch (e) {
      location.replace(target); // very old engines / odd file:// policies
    }
  }

  // pushState costs as much as the repaint itself, so the URL is written just after it, once
  // per burst of changes (a new history entry if any change in the burst asked for one).
  var hashTimer = 0, hashReplace = true;
  function scheduleHash(replace) {
    hashReplace = hashTimer ? hashReplace && replace : replace;
    clearTimeout(hashTimer);
    hashTimer = setTimeout(function () { hashTimer = 0; writeHash(hashReplace); }, 0);
  }

  /** Change the state from a user action; `how` is "push" | "replace" | "key" | "none". */
  function update(patch, how, announceIt) {
    var next = {}, k;
    for (k in state) next[k] = state[k];
    for (k in patch) next[k] = patch[k];
    next = valid(next);
    var changed = next.s !== state.s || next.h !== state.h || next.q !== state.q ||
      next.scale !== state.scale || next.hide !== state.hide;
    state = next;
    render();
    if (!changed) return;
    if (how === "key") {
      var now = Date.now();
      scheduleHash(now - lastPush < 1000);
      lastPush = now;
    } else if (how !== "none") {
      scheduleHash(how === "replace");
      lastPush = 0;
    }
    if (announceIt !== false) announce();
  }

  /* ---------- the view model: what the current state shows ---------- */

  /** Everything paint() needs for the current state, without touching the DOM. */
  function view() {
    var S = sentences[state.s], rh = parseReal(state.h), v = { S: S, real: !!rh };
    if (rh) {
      var R = realOf(state.s);
      var row = R.attention[rh.layer][rh.head][state.q];
      v.queries = R.words; v.keys = R.words; v.cross = false; v.special = R.special;
      v.weights = row.map(function (x) { return x / 1000; });
      v.pct = u.roundShares(row, 100);
      v.masked = row.map(function () { return false; });
      v.hidden = R.special.map(function (sp) { return state.hide && sp; });
      v.hiding = state.hide;
      v.headName = "Layer " + rh.layer + ", head " + rh.head;
    } else {
      var H = S.heads[state.h];
      v.H = H; v.meta = headMeta[state.h];
      v.queries = S.queries; v.keys = S.keys; v.cross = S.kind === "cross";
      v.weights = (state.scale ? H.weights : H.weights_unscaled)[state.q];
      v.pct = (state.scale ? H.pct : H.pct_unscaled)[state.q];
      v.masked = H.scores[state.q].map(function (x) { return x === null; });
      v.hidden = v.keys.map(function () { return false; });
      v.special = v.keys.map(function () { return false; });
      v.headName = v.meta.name;
    }
    v.word = v.queries[state.q];
    return v;
  }

  /** The three largest weights, as "cat 41%, mat 28%, on 12%". */
  function topThree(v) {
    var idx = v.keys.map(function (k, j) { return j; })
      .filter(function (j) { return !v.hidden[j] && !v.masked[j] && v.pct[j] > 0; })
      .sort(function (a, b) { return v.pct[b] - v.pct[a] || v.weights[b] - v.weights[a] || a - b; });
    return idx.slice(0, 3).map(function (j) { return v.keys[j] + " " + v.pct[j] + "%"; }).join(", ");
  }
  function topOne(keys, pct) {
    var best = 0;
    for (var j = 1; j < pct.length; j++) if (pct[j] > pct[best]) best = j;
    return keys[best] + " " + pct[best] + "%";
  }

  function announce() {
    var v = view();
    el.live.textContent = v.word + ": " + topThree(v);
  }

  /* ---------- structure: rebuilt when the sentence or the token set changes ---------- */

  var built = "", geo = null;
  var qButtons = [], kWords = [], rows = [], arcPaths = [], bandPaths = [], minis = [], cells = [];

  function fillSentenceSelect() {
    el.sentence.textContent = "";
    KIND_GROUPS.forEach(function (g) {
      var list = data.sentences.filter(function (s) { return s.kind === g[0]; });
      if (!list.length) return;
      var group = h("optgroup", { label: g[1] });
      list.forEach(function (s) { group.appendChild(h("option", { value: s.id, text: s.label })); });
      el.sentence.appendChild(group);
    });
  }

  function fillHeadSelect() {
    el.head.textContent = "";
    var teach = h("optgroup", { label: "Teaching heads" });
    headsFor(state.s).forEach(function (hd) { teach.appendChild(h("option", { value: hd.id, text: hd.name })); });
    el.head.appendChild(teach);
    if (realOf(state.s)) {
      for (var L = 0; L < real.layers; L++) {
        var g = h("optgroup", { label: shortModel() + ", layer " + L });
        for (var H = 0; H < real.heads; H++) {
          g.appendChild(h("option", { value: "L" + L + "H" + H, text: "layer " + L + ", head " + H }));
        }
        el.head.appendChild(g);
      }
    }
  }
  function shortModel() { return real.model.split("/").pop(); }

  function wordButton(text, i, cls) {
    return h("button", { type: "button", "class": "word" + (cls ? " " + cls : ""), "data-index": i,
      "aria-pressed": "false", tabindex: "-1" }, [text]);
  }

  function build() {
    var v = view();
    var S = v.S;
    root.classList.toggle("is-cross", v.cross);
    root.classList.toggle("is-real", v.real);
    root.setAttribute("data-kind", v.real ? "real" : S.kind);
    root.setAttribute("data-sentence", S.id);

    // Word rows.
    el.queries.textContent = "";
    qButtons = v.queries.map(function (w, i) {
      var b = wordButton(w, i, v.special[i] ? "is-special" : "");
      if (v.hidden[i]) b.hidden = true;
      el.queries.appendChild(b);
      return b;
    });
    el.keys.textContent = "";
    kWords = qButtons;
    if (v.cross) {
      kWords = v.keys.map(function (w, j) {
        var span = h("span", { "class": "word", "data-index": j }, [w]);
        el.keys.appendChild(span);
        return span;
      });
    }
    el.keys.hidden = el.kLabel.hidden = !v.cross;
    el.band.toggleAttribute("hidden", !v.cross); // SVG elements have no .hidden property
    el.arcs.toggleAttribute("hidden", v.cross);
    el.qLabel.textContent = v.cross ? "Queries — click a word" : "Click a word to make it the query";
    el.kLabel.textContent = v.cross ? "Keys and values: " + (S.key_label || "the other sentence") : "";

    // Links: one path per key, created once per structure.
    el.arcLinks.textContent = ""; el.bandLinks.textContent = "";
    var into = v.cross ? el.bandLinks : el.arcLinks;
    var paths = v.keys.map(function () { var p = h("path", null, null, u.SVG); into.appendChild(p); return p; });
    arcPaths = v.cross ? [] : paths; bandPaths = v.cross ? paths : [];

    // Readout rows.
    el.tbody.textContent = "";
    rows = v.keys.map(function (w, j) {
      var pct = h("td", { "class": "sl-pct" }), fill = h("span"), tag = h("span", { "class": "sl-tag" });
      var tr = h("tr", { "data-index": j }, [
        h("th", { scope: "row" }, [w, tag]), pct,
        h("td", { "aria-hidden": "true" }, [h("span", { "class": "sl-bar" }, [fill])])
      ]);
      if (v.hidden[j]) tr.hidden = true;
      el.tbody.appendChild(tr);
      return { tr: tr, pct: pct, fill: fill, tag: tag };
    });

    // Small multiples: every teaching head for this sentence.
    el.multiples.textContent = "";
    minis = headsFor(S.id).map(function (hd) {
      var top = h("span", { "class": "sl-mini-top" });
      var canvas = h("canvas", { "aria-hidden": "true", width: 150, height: 18 });
      var b = h("button", { type: "button", "class": "sl-mini", "data-head": hd.id, "aria-pressed": "false" },
        [h("span", { "class": "sl-mini-name" }, [hd.name]), canvas, top]);
      el.multiples.appendChild(b);
      return { id: hd.id, button: b, canvas: canvas, top: top };
    });

    buildModel();
    fillHeadSelect();
  }

  function buildModel() {
    var R = realOf(state.s);
    el.model.hidden = !R;
    cells = [];
    if (!R) return;
    el.modelIntro.textContent = "These are real attention weights of " + real.model + " (" + real.layers +
      " layers × " + real.heads + " heads), computed for this sentence by our own NumPy forward pass of its " +
      "published weights: nobody designed them. Each square shows where the current word's attention goes " +
      "in one head; layers and heads are numbered from 0.";
    el.grid.textContent = "";
    el.grid.style.setProperty("--heads", real.heads);
    for (var L = 0; L < real.layers; L++) {
      el.grid.appendChild(h("span", { "class": "sl-grid-l", "aria-hidden": "true" }, ["L" + L]));
      for (var H = 0; H < real.heads; H++) {
        var canvas = h("canvas", { "aria-hidden": "true", width: 24, height: 24 });
        var b = h("button", { type: "button", "class": "sl-cell", "data-layer": L, "data-head": "L" + L + "H" + H,
          "aria-label": "layer " + L + ", head " + H, "aria-pressed": "false", tabindex: "-1" }, [canvas]);
        el.grid.appendChild(b);
        cells.push({ id: "L" + L + "H" + H, layer: L, head: H, button: b, canvas: canvas });
      }
    }
    cells[0].button.tabIndex = 0;
    el.finder.textContent = "";
    (real.finder || []).forEach(function (f) {
      var b0 = f.best && f.best[0];
      if (!b0) return;
      var off = f.baseline && f.baseline.offset;
      el.finder.appendChild(h("li", null, [f.relation + ", " + f.count + (f.count === 1 ? " pair: " : " pairs: "),
        h("button", { type: "button", "class": "btn", "data-head": "L" + b0.layer + "H" + b0.head }, ["layer " + b0.layer + ", head " + b0.head]),
        " finds " + Math.round(b0.score * 100) + "%" + (f.baseline ? "; looking " + Math.abs(off) + " word" +
          (Math.abs(off) === 1 ? "" : "s") + (off < 0 ? " back" : " ahead") + " finds " + Math.round(f.baseline.score * 100) + "%" : "") +
          (f.beats_baseline ? "." : " — no better.")]));
    });
  }

  /* ---------- measure: geometry, read once per structure or resize ---------- */

  function measure() {
    var v = view();
    // Reads first.
    var rowW = el.queries.clientWidth;
    var qc = qButtons.map(function (b) { return b.hidden ? null : [b.offsetLeft + b.offsetWidth / 2, b.offsetTop]; });
    var kc = v.cross ? kWords.map(function (s) { return [s.offsetLeft + s.offsetWidth / 2, s.offsetTop]; }) : qc;
    var wrapped = lineCount(qc) > 1 || (v.cross && lineCount(kc) > 1);
    var miniW = minis.map(function (m) { return m.canvas.clientWidth; });
    var cellW = cells.length ? cells[0].canvas.clientWidth : 0;
    var dpr = Math.min(window.devicePixelRatio || 1, 2);
    // Then writes.
    var arcH = Math.round(Math.min(120, Math.max(48, rowW * 0.11)));
    geo = { w: rowW, qc: qc, kc: kc, wrapped: wrapped, arcH: arcH, bandH: 72 };
    root.classList.toggle("is-wrapped", wrapped);
    el.wrapnote.hidden = !wrapped;
    var svg = v.cross ? el.band : el.arcs, hgt = v.cross ? geo.bandH : arcH;
    svg.setAttribute("viewBox", "0 0 " + Math.max(1, rowW) + " " + hgt);
    svg.setAttribute("height", String(hgt));
    minis.forEach(function (m, i) { m.canvas.width = Math.max(1, Math.round(miniW[i] * dpr)); m.canvas.height = Math.round(18 * dpr); });
    cells.forEach(function (c) { c.canvas.width = c.canvas.height = Math.max(1, Math.round(cellW * dpr)); });
    gridDrawn = "";
    colors = readColors();
  }
  function lineCount(centres) {
    var tops = {}, n = 0;
    centres.forEach(function (c) { if (c && !tops[c[1]]) { tops[c[1]] = 1; n++; } });
    return n;
  }

  var colors = null;
  function readColors() {
    var cs = getComputedStyle(root);
    function v(name, fallback) { return (cs.getPropertyValue(name) || "").trim() || fallback; }
    return { accent: v("--accent", "#e08600"), track: v("--surface-2", "#eee"), query: v("--focus", "#b35400") };
  }

  /* ---------- paint: writes only ---------- */

  function render() {
    var isReal = !!parseReal(state.h);
    var key = state.s + "|" + isReal + "|" + (isReal && state.hide);
    if (key === built) return paint();
    // Rebuilding replaces buttons: keep keyboard focus on the equivalent new one.
    var a = document.activeElement, again = null;
    if (a && a !== root && root.contains(a) && a.parentNode && a.parentNode.id) {
      again = "#" + a.parentNode.id + " > [" + (a.hasAttribute("data-head") ? 'data-head="' + a.getAttribute("data-head") + '"]'
        : 'aria-pressed="true"]');
    }
    build();
    built = key;
    measure();
    paint();
    if (again && !root.contains(document.activeElement)) {
      var b = root.querySelector(again);
      if (b) b.focus();
    }
  }

  function paint() {
    var v = view(), S = v.S, q = state.q, i, j;

    // Controls.
    el.sentence.value = state.s;
    el.head.value = state.h;
    el.scale.checked = state.scale;
    el.scale.disabled = v.real;
    el.specialField.hidden = !v.real;
    el.special.checked = state.hide;
    el.headDesc.textContent = v.real
      ? "A real head of " + shortModel() + " (" + v.headName.toLowerCase() + "). Its weights come from the pretrained model; the ÷√d switch applies to the teaching heads only."
      : S.kind === "cross" && v.meta.cross ? v.meta.cross
      : v.meta.description + (v.H.bias ? " It also adds a distance bias (step 2 below shows it)." : "");

    // Words: the query, shading by weight, masked future words.
    qButtons.forEach(function (b, i2) {
      var isQ = i2 === q;
      b.setAttribute("aria-pressed", String(isQ));
      b.tabIndex = isQ ? 0 : -1;
      if (!v.cross) {
        b.style.setProperty("--w", v.masked[i2] ? 0 : v.weights[i2]);
        b.classList.toggle("is-masked", v.masked[i2]);
      }
    });
    if (v.cross) {
      kWords.forEach(function (s, j2) { s.style.setProperty("--w", v.weights[j2]); });
    }

    // Links.
    if (geo && !geo.wrapped) {
      var from = geo.qc[q];
      var paths = v.cross ? bandPaths : arcPaths;
      for (j = 0; j < paths.length; j++) {
        var to = geo.kc[j], p = paths[j], w = v.weights[j];
        if (!from || !to || v.masked[j] || v.hidden[j] || !(w > 0.004)) { p.setAttribute("d", ""); p.setAttribute("opacity", "0"); continue; }
        p.setAttribute("d", v.cross ? bandPath(from[0], to[0]) : arcPath(from[0], to[0], geo.arcH, j === q));
        p.setAttribute("stroke-width", (0.75 + 11 * w).toFixed(2));
        p.setAttribute("opacity", Math.min(1, 0.12 + 1.6 * w).toFixed(3));
      }
    }

    // Notes under the sentence.
    var notes = [];
    if (S.note && !(v.real && S.kind === "causal")) notes.push(S.note);
    if (v.real && S.kind === "causal") notes.push("This model is an encoder: it reads the whole sentence at once, with no causal mask.");
    if (!v.real && S.kind === "causal" && q < v.keys.length - 1) {
      var later = v.keys.length - 1 - q;
      notes.push("Greyed out: the " + (later === 1 ? "word" : later + " words") + " after “" + v.word + "”, masked to weight 0" +
        (/look ahead/i.test(S.note || "") ? "." : " — a decoder can't look ahead."));
    }
    var hiddenPct = 0, hiddenNames = [];
    if (v.hiding) {
      v.keys.forEach(function (k, j2) {
        if (v.hidden[j2]) { hiddenPct += v.pct[j2]; if (hiddenNames.indexOf(k) < 0) hiddenNames.push(k); }
      });
      notes.push("Hiding " + hiddenNames.join("/") + ": " + hiddenPct + "% of this row. The other weights are not renormalised.");
    }
    el.note.textContent = notes.join(" ");

    // Readout table.
    el.caption.textContent = "Where “" + v.word + "” looks — " + (v.real ? v.headName.toLowerCase() : v.headName + " head") +
      (v.cross ? ", in the " + (S.key_label || "other sentence") : "") + (!v.real && !state.scale ? " (no ÷√d)" : "");
    for (j = 0; j < rows.length; j++) {
      var r = rows[j];
      r.pct.textContent = v.pct[j] + "%";
      r.fill.style.width = (v.weights[j] * 100).toFixed(1) + "%";
      r.tr.classList.toggle("is-query", !v.cross && j === q);
      r.tr.classList.toggle("is-masked", v.masked[j]);
      r.tag.textContent = v.masked[j] ? "masked" : (!v.cross && j === q ? "itself" : "");
    }
    el.tfoot.textContent = "";
    if (v.hiding) {
      el.tfoot.appendChild(h("tr", null, [h("th", { scope: "row" }, ["Shown"]), h("td", { "class": "sl-pct" }, [(100 - hiddenPct) + "%"]), h("td")]));
      el.tfoot.appendChild(h("tr", { "class": "sl-hidden-row" }, [h("th", { scope: "row" }, ["Hidden " + hiddenNames.join(", ")]),
        h("td", { "class": "sl-pct" }, [hiddenPct + "%"]), h("td")]));
    }
    el.tfoot.appendChild(h("tr", { "class": "sl-total" }, [h("th", { scope: "row" }, ["Total"]),
      h("td", { "class": "sl-pct" }, [sum(v.pct) + "%"]), h("td")]));

    // Quadratic cost.
    el.cost.textContent = costText(v);

    // Small multiples and the model grid.
    var tq = v.real ? toTeach(q) : q;
    minis.forEach(function (m) {
      var H = S.heads[m.id];
      var w = (state.scale ? H.weights : H.weights_unscaled)[tq], pc = (state.scale ? H.pct : H.pct_unscaled)[tq];
      m.button.setAttribute("aria-pressed", String(!v.real && m.id === state.h));
      m.top.textContent = "→ " + topOne(S.keys, pc);
      drawBars(m.canvas, w, v.cross ? -1 : tq);
    });
    cells.forEach(function (c) { c.button.setAttribute("aria-pressed", String(c.id === state.h)); });
    drawGrid();

    paintHood(v);
    root.setAttribute("data-ready", "true");
  }

  /* The model grid's 72 thumbnails are pictures only (each button has its name): draw them when
     the grid is on screen, and only when the query or sentence changed. */
  var gridSeen = true, gridDrawn = "";
  function drawGrid() {
    if (!cells.length || !gridSeen) return;
    var R = realOf(state.s), rq = parseReal(state.h) ? state.q : toReal(state.q);
    var sig = state.s + "|" + rq + "|" + cells[0].canvas.width;
    if (sig === gridDrawn) return;
    gridDrawn = sig;
    cells.forEach(function (c) {
      drawBars(c.canvas, R.attention[c.layer][c.head][rq].map(function (x) { return x / 1000; }), rq);
    });
  }
  if (window.IntersectionObserver) {
    gridSeen = false;
    new IntersectionObserver(function (entries) {
      gridSeen = entries[entries.length - 1].isIntersecting;
      drawGrid();
    }, { rootMargin: "100px 0px" }).observe(el.grid);
  }

  function sum(a) { var s = 0; for (var i = 0; i < a.length; i++) s += a[i]; return s; }

  function arcPath(x1, x2, H, self) {
    if (self) return "M" + (x1 - 7) + " " + H + "C" + (x1 - 15) + " " + (H - 34) + " " + (x1 + 15) + " " + (H - 34) + " " + (x1 + 7) + " " + H;
    var lift = Math.min(H - 6, 16 + Math.abs(x2 - x1) * 0.32) * 4 / 3;
    return "M" + x1.toFixed(1) + " " + H + "C" + x1.toFixed(1) + " " + (H - lift).toFixed(1) + " " +
      x2.toFixed(1) + " " + (H - lift).toFixed(1) + " " + x2.toFixed(1) + " " + H;
  }
  function bandPath(x1, x2) {
    return "M" + x1.toFixed(1) + " 0C" + x1.toFixed(1) + " 36 " + x2.toFixed(1) + " 36 " + x2.toFixed(1) + " 72";
  }

  function drawBars(canvas, weights, qi) {
    var ctx = canvas.getContext && canvas.getContext("2d");
    if (!ctx || !colors) return;
    var W = canvas.width, H = canvas.height, n = weights.length, bw = W / n, gap = bw > 4 ? 1 : 0;
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = colors.track;
    ctx.fillRect(0, H - 1, W, 1);
    for (var j = 0; j < n; j++) {
      var hh = weights[j] > 0 ? Math.max(1, weights[j] * H) : 0;
      ctx.fillStyle = j === qi ? colors.query : colors.accent;
      ctx.fillRect(j * bw + gap / 2, H - hh, Math.max(1, bw - gap), hh);
    }
  }

  function costText(v) {
    var nq = v.queries.length, nk = v.keys.length;
    if (v.real) {
      var per = nq * nk;
      return nq + " tokens (with " + v.keys.filter(function (k, j) { return v.special[j]; }).length +
        " special) → " + per + " scores per head; this model's " + real.layers * real.heads + " heads compute " +
        (per * real.layers * real.heads).toLocaleString("en") + ". At 2× the tokens, 4× the scores.";
    }
    if (v.cross) {
      return nq + " queries × " + nk + " keys → " + nq * nk + " scores; double both and it's 4× the scores (" + 4 * nq * nk + ").";
    }
    var t = nq + " words → " + nq * nk + " scores; at 2× the words (" + 2 * nq + "), 4× the scores (" + 4 * nq * nk + ").";
    if (v.S.kind === "causal") t += " The causal mask keeps " + nq * (nq + 1) / 2 + " of them; the rest are never used.";
    return t;
  }

  /* Map a query between the teaching words and the model's tokens ([CLS] the cat … [SEP]):
     each word goes to its first word piece ("didn't" → didn ' t). */
  var aligned = {};
  function alignment(sid) {
    if (aligned[sid]) return aligned[sid];
    var R = realOf(sid), words = sentences[sid].queries, map = [], p = 0;
    words.forEach(function (w) {
      while (p < R.words.length - 1 && R.special[p]) p++;
      map.push(p);
      var got = "";
      while (p < R.words.length && !R.special[p] && got.length < w.length) got += R.words[p++].replace(/^##/, "");
    });
    return (aligned[sid] = map);
  }
  function toReal(q) { return alignment(state.s)[q]; }
  function toTeach(rq) {
    var map = alignment(state.s), i = 0;
    while (i + 1 < map.length && map[i + 1] <= rq) i++;
    return i;
  }

  /* ---------- under the hood: the four moves, with the actual numbers ---------- */

  function paintHood(v) {
    el.hoodTitle.textContent = "Under the hood: the numbers for “" + v.word + "”";
    el.steps.hidden = el.prevStep.parentNode.hidden = v.real;
    el.step.textContent = "";
    if (v.real) {
      el.step.appendChild(h("p", null, ["This is a real head, so its queries and keys live in the model's " +
        "learned dimensions, which the page does not embed. What it does carry is the result of the four moves: " +
        "the softmax weights in the table, each row adding up to 100%."]));
      return;
    }
    var buttons = el.steps.querySelectorAll("button");
    for (var i = 0; i < buttons.length; i++) {
      if (i === state.step) buttons[i].setAttribute("aria-current", "step");
      else buttons[i].removeAttribute("aria-current");
    }
    el.prevStep.disabled = state.step === 0;
    el.nextStep.disabled = state.step === 3;
    if (printing) {
      for (var s = 0; s < 4; s++) el.step.appendChild(stepSection(v, s));
    } else {
      el.step.appendChild(stepSection(v, state.step));
    }
  }

  function stepSection(v, s) {
    var box = h("div", { "class": "sl-step-body", "data-step": s });
    box.appendChild(h("h4", null, [(s + 1) + ". " + STEP_NAMES[s]]));
    [stepProject, stepScore, stepSoftmax, stepBlend][s](v, box);
    return box;
  }

  function nonzeroCols(vectors) {
    var cols = [];
    for (var c = 0; c < vectors[0].length; c++) {
      for (var r = 0; r < vectors.length; r++) if (vectors[r] && vectors[r][c]) { cols.push(c); break; }
    }
    return cols;
  }
  function numTable(caption, head, bodyRows, footRows) {
    var t = h("table", { "class": "sl-num" }, [h("caption", null, [caption]),
      h("thead", null, [h("tr", null, head.map(function (c) { return h("th", { scope: "col" }, [c]); }))])]);
    var tb = h("tbody");
    bodyRows.forEach(function (r) { tb.appendChild(r); });
    t.appendChild(tb);
    if (footRows) { var tf = h("tfoot"); footRows.forEach(function (r) { tf.appendChild(r); }); t.appendChild(tf); }
    return h("div", { "class": "sl-scroll", tabindex: "0", role: "region", "aria-label": caption }, [t]);
  }
  function numRow(label, cells, cls) {
    return h("tr", cls ? { "class": cls } : null, [h("th", { scope: "row" }, [label])].concat(cells.map(function (c) {
      return typeof c === "object" && c !== null && c.nodeType ? c : h("td", { "class": c === "0" ? "z" : null }, [c]);
    })));
  }
  function keyLabel(v, j) {
    var role = v.S.roles_k && v.S.roles_k[j];
    return v.keys[j] + (role ? " · " + role : "");
  }

  function stepProject(v, box) {
    var H = v.H, m = v.meta, q = state.q, d = m.q_dims.length;
    box.appendChild(h("p", null, ["Learned matrices turn every word into a query (what it looks for), a key (what it offers) " +
      "and a value (what it carries). This head's queries and keys have d", h("sub", null, ["k"]), " = " + d +
      " named dimensions. “" + v.word + "” asks with its query; every " + (v.cross ? "word of the " + (v.S.key_label || "other sentence") : "word") +
      " answers with its key."]));
    var vecs = [H.q[q]].concat(H.k);
    var cols = nonzeroCols(vecs);
    var hidden = d - cols.length;
    var rowsOut = [numRow("q  " + v.word, cols.map(function (c) { return u.short(H.q[q][c], PREC.vectors); }), "is-q")];
    H.k.forEach(function (k, j) {
      rowsOut.push(numRow("k  " + keyLabel(v, j), cols.map(function (c) { return u.short(k[c], PREC.vectors); }), v.masked[j] ? "is-masked" : null));
    });
    var kd = m.k_dims || m.q_dims;
    box.appendChild(numTable("Query and keys" + (hidden ? " (" + hidden + " all-zero dimension" + (hidden > 1 ? "s" : "") + " left out)" : ""),
      ["vector"].concat(cols.map(function (c) { return kd[c] === m.q_dims[c] ? m.q_dims[c] : h("span", null, [m.q_dims[c], h("br"), "× " + kd[c]]); })), rowsOut));
  }

  function stepScore(v, box) {
    var H = v.H, m = v.meta, q = state.q, d = m.q_dims.length, hasBias = !!H.bias;
    var root2 = Math.sqrt(d);
    box.appendChild(h("p", null, ["Each score is the dot product q·k: multiply matching dimensions and add. A high score " +
      "means “this key is what I'm looking for”. " + (state.scale
        ? "Then divide by √d = √" + d + " = " + fmt(root2, 2) + " to keep the scores in a range where the softmax stays smooth."
        : "The ÷√d switch is off, so the raw scores go straight to the softmax.")]));
    if (hasBias) box.appendChild(h("p", null, ["This head also adds a bias to every score, after the division: " + m.bias]));
    var head = ["key", "q·k"];
    if (state.scale) head.push("÷ √" + d);
    if (hasBias) head.push("+ bias");
    head.push("= score");
    var out = H.k.map(function (k, j) {
      var raw = H.scores[q][j];
      if (raw === null) return numRow(keyLabel(v, j), head.slice(1).map(function (c, i) { return i === 0 ? "masked" : "–"; }), "is-masked");
      var cells = [u.short(raw, PREC.vectors)];
      // The scaled column is the build's score less the bias, so the row adds up as printed.
      if (state.scale) cells.push(u.short(H.scaled[q][j] - (hasBias ? H.bias[q][j] : 0), PREC.vectors));
      if (hasBias) cells.push(u.short(H.bias[q][j], PREC.vectors));
      cells.push(u.short(scoreOf(H, q, j), PREC.vectors));
      return numRow(keyLabel(v, j), cells, null);
    });
    box.appendChild(numTable("Scores for “" + v.word + "”", head, out));
  }
  /** The score that goes into the softmax: the precomputed scaled one, or q·k + bias when ÷√d is off. */
  function scoreOf(H, q, j) {
    if (H.scores[q][j] === null) return null;
    if (state.scale) return H.scaled[q][j];
    return H.scores[q][j] + (H.bias ? H.bias[q][j] : 0);
  }

  function stepSoftmax(v, box) {
    var H = v.H, q = state.q, n = v.keys.length, j;
    var scores = [], max = -Infinity;
    for (j = 0; j < n; j++) { scores[j] = scoreOf(H, q, j); if (scores[j] !== null && scores[j] > max) max = scores[j]; }
    var ex = scores.map(function (s) { return s === null ? 0 : Math.exp(s - max); });
    var total = sum(ex);
    box.appendChild(h("p", null, ["Softmax turns scores into weights: subtract the largest score (" + fmt(max, 3) +
      ") so nothing overflows, take e to the power of each, then divide by their sum (" + fmt(total, 3) +
      "). The weights are never negative and add up to 1" + (v.S.kind === "causal" ? "; masked words count as −∞, so they get exactly 0." : ".")]));
    var out = [];
    for (j = 0; j < n; j++) {
      out.push(numRow(keyLabel(v, j), scores[j] === null ? ["−∞", "0", fmt(0, 4), "0%"]
        : [u.short(scores[j], PREC.vectors), fmt(ex[j], 3), fmt(v.weights[j], PREC.weights), v.pct[j] + "%"], scores[j] === null ? "is-masked" : null));
    }
    box.appendChild(numTable("Softmax for “" + v.word + "”", ["key", "score", "e^(score − max)", "weight", "%"], out,
      [numRow("sum", ["", fmt(total, 3), fmt(sum(v.weights), 2), sum(v.pct) + "%"])]));
  }

  function stepBlend(v, box) {
    var H = v.H, m = v.meta, q = state.q, n = v.keys.length;
    var outVec = state.scale ? H.out[q] : H.v[0].map(function (x, c) {
      var s = 0;
      for (var j = 0; j < n; j++) s += v.weights[j] * H.v[j][c];
      return s;
    });
    box.appendChild(h("p", null, ["The output for “" + v.word + "” is the weighted sum of the values: each word's " +
      "value vector times its weight, added up. Words with more weight pour more of what they carry into “" +
      v.word + "”." + (state.scale ? "" : " (With ÷√d off, this blend is recomputed here from the weights shown.)")]));
    var cols = nonzeroCols(H.v.concat([outVec]));
    var out = H.v.map(function (vec, j) {
      return numRow(keyLabel(v, j), [fmt(v.weights[j], 3)].concat(cols.map(function (c) { return u.short(vec[c], PREC.vectors); })), v.masked[j] ? "is-masked" : null);
    });
    box.appendChild(numTable("Values, weighted", ["value", "weight"].concat(cols.map(function (c) { return m.v_dims[c]; })), out,
      [numRow("output", ["Σ"].concat(cols.map(function (c) { return fmt(outVec[c], 3); })))]));
  }

  /* ---------- events ---------- */

  el.queries.addEventListener("click", function (ev) {
    var b = ev.target.closest("button.word");
    if (b) update({ q: +b.getAttribute("data-index") }, "push");
  });
  u.roving(el.queries, "button.word", function (to, item) {
    update({ q: +item.getAttribute("data-index") }, "key");
    item.focus();
  }, "x");
  el.sentence.addEventListener("change", function () {
    var S = sentences[el.sentence.value];
    var d = data["default"] || {};
    var keepHead = S && S.heads[state.h] ? state.h : (realOf(el.sentence.value) && parseReal(state.h) ? state.h : "");
    update({ s: el.sentence.value, h: keepHead, q: el.sentence.value === d.sentence ? d.query : 0 }, "push");
  });
  el.head.addEventListener("change", function () { selectHead(el.head.value); });
  el.scale.addEventListener("change", function () { update({ scale: el.scale.checked }, "push"); });
  el.special.addEventListener("change", function () { update({ hide: el.special.checked }, "push"); });
  el.multiples.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-head]");
    if (b) selectHead(b.getAttribute("data-head"));
  });
  el.grid.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-head]");
    if (b) { selectHead(b.getAttribute("data-head")); u.setTabStop(cells.map(function (c) { return c.button; }), b); }
  });
  el.finder.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-head]");
    if (b) selectHead(b.getAttribute("data-head"));
  });
  u.roving(el.grid, "button.sl-cell", function (to, item) {
    u.setTabStop(cells.map(function (c) { return c.button; }), item);
    item.focus();
  }, "grid", function () { return real ? real.heads : 1; });

  /** Switch head, carrying the query across between teaching words and model tokens. */
  function selectHead(id) {
    var wasReal = !!parseReal(state.h), isReal = !!parseReal(id), q = state.q;
    if (realOf(state.s)) {
      if (!wasReal && isReal) q = toReal(q);
      else if (wasReal && !isReal) q = toTeach(q);
    }
    update({ h: id, q: q }, "push");
  }

  el.steps.addEventListener("click", function (ev) {
    var b = ev.target.closest("button[data-step]");
    if (b) { state.step = +b.getAttribute("data-step"); paint(); }
  });
  el.prevStep.addEventListener("click", function () { goStep(state.step - 1); });
  el.nextStep.addEventListener("click", function () { goStep(state.step + 1); });
  function goStep(s) {
    state.step = Math.max(0, Math.min(3, s));
    paint();
    if (state.step === 0 || state.step === 3) el.step.focus(); // the pressed button just became disabled
  }

  function fromLocation(scroll) {
    clearTimeout(hashTimer);
    hashTimer = 0;
    var p = parseHash();
    if (!p) return false;
    p.step = state.step;
    var next = valid(p);
    if (next.s !== state.s || next.h !== state.h || next.q !== state.q || next.scale !== state.scale || next.hide !== state.hide) {
      state = next;
      render();
      announce();
    }
    if (scroll) {
      var r = el.stage.getBoundingClientRect();
      if (r.top < 0 || r.bottom > window.innerHeight) {
        root.scrollIntoView({ block: "start", behavior: u.reducedMotion.matches ? "auto" : "smooth" });
      }
    }
    return true;
  }
  window.addEventListener("popstate", function () { fromLocation(false); });
  window.addEventListener("hashchange", function () { fromLocation(true); });

  var pending = 0;
  function remeasure() {
    if (pending) return;
    pending = requestAnimationFrame(function () { pending = 0; if (built) { measure(); paint(); } });
  }
  if (window.ResizeObserver) new ResizeObserver(remeasure).observe(el.queries);
  else window.addEventListener("resize", remeasure);
  if (window.matchMedia) {
    var dark = window.matchMedia("(prefers-color-scheme: dark)");
    if (dark.addEventListener) dark.addEventListener("change", remeasure);
  }
  var printing = false;
  window.addEventListener("beforeprint", function () { printing = true; paint(); });
  window.addEventListener("afterprint", function () { printing = false; paint(); });

  /* ---------- start ---------- */

  if (noJs) noJs.remove();
  Array.prototype.forEach.call(root.querySelectorAll(".sl-controls, .sl-stage, .sl-panels, .sl-hood"), function (x) { x.hidden = false; });
  fillSentenceSelect();
  var d0 = data["default"] || {}, start = parseHash();
  state = valid(start || { s: d0.sentence, h: d0.head, q: d0.query, scale: true, hide: false });
  render();
  if (start) requestAnimationFrame(function () { fromLocation(true); });

  Labs.spotlight = {
    state: function () { return valid(state); },
    set: function (patch) { update(patch, "push"); },
    hash: function () { return hashOf(state); }
  };
})();
