/* The spotlight's pictures and the texts it computes: pure functions of numbers and sizes, with
   no state and no page of their own. spotlight.js keeps the state and calls these from paint()
   (its writes) and announce(). Bundled before it (file-name order): Labs.code.spotlightDraw. */
(() => {
  "use strict";
  const set = (node, attr, value) => node.setAttribute(attr, value);

  /** The `n` largest shares, as "cat 41%, mat 28%, on 12%" (ties: the larger weight, then the earlier word). */
  function top(keys, pct, n, weights = pct, skip = []) {
    return keys.map((k, j) => j).filter(j => !skip[j] && pct[j] > 0)
      .sort((a, b) => pct[b] - pct[a] || weights[b] - weights[a] || a - b)
      .slice(0, n).map(j => `${keys[j]} ${pct[j]}%`).join(", ");
  }

  /** A link from x1 to x2: an arc above the row of height H (a loop for the word itself), or a band down to the keys. */
  function linkPath(x1, x2, cross, self, H) {
    const top = (H - Math.min(H - 6, 16 + Math.abs(x2 - x1) * 0.32) * 4 / 3).toFixed(1);
    if (self) return `M${x1 - 7} ${H}C${x1 - 15} ${H - 34} ${x1 + 15} ${H - 34} ${x1 + 7} ${H}`;
    [x1, x2] = [x1.toFixed(1), x2.toFixed(1)];
    return cross ? `M${x1} 0C${x1} 36 ${x2} 36 ${x2} 72` : `M${x1} ${H}C${x1} ${top} ${x2} ${top} ${x2} ${H}`;
  }

  /** One bar per key, as tall as its weight, on a canvas; the query's own bar in the focus colour
      (qi = -1: none). colors: [accent, track, query], the page's CSS colours. */
  function bars(canvas, weights, qi, colors) {
    const ctx = canvas.getContext("2d"), [accent, track, query] = colors, W = canvas.width, H = canvas.height;
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

  /** A link on a sentence that wraps (geo.wrapped): from and to are [x, top, bottom] of the two words.
      In one row, an arc above it at most `lift` high; to another row, from the nearer edge of the
      query down (or up) to the key's near edge; a cross sentence's keys sit below its queries. */
  function wrappedPath(a, b, self, cross, lift) {
    if (self) return linkPath(a[0], a[0], false, true, a[1]); // the loop over the word, as on one line
    const x1 = a[0].toFixed(1), x2 = b[0].toFixed(1), down = cross || b[1] > a[1];
    if (!cross && Math.abs(a[1] - b[1]) < 2) {
      const top = (a[1] - Math.min(lift, 10 + Math.abs(b[0] - a[0]) * 0.2) * 4 / 3).toFixed(1);
      return `M${x1} ${a[1]}C${x1} ${top} ${x2} ${top} ${x2} ${b[1]}`;
    }
    const y1 = down ? a[2] : a[1], y2 = down ? b[1] : b[2], m = ((y1 + y2) / 2).toFixed(1);
    return `M${x1} ${y1}C${x1} ${m} ${x2} ${m} ${x2} ${y2}`;
  }

  /** The links from the query (view v: its q, weights, masked and hidden keys) to its keys, on the
      paths made for them; geo: the words' centres (qc, kc: [x, top, bottom]) and the arcs' height
      (arcH), or on a wrapped sentence the room for an arc between rows (lift). A link's width and
      opacity grow with its weight; a masked, hidden or near-zero one is not drawn. */
  function links(paths, v, geo) {
    const from = geo.qc[v.q];
    paths.forEach((p, j) => {
      const to = geo.kc[j], w = v.weights[j], show = from && to && !v.masked[j] && !v.hidden[j] && w > 0.004;
      const self = !v.cross && j === v.q;
      if (!show) return p.getAttribute("d") && set(p, "d", ""); // not drawn, as before: nothing to write
      set(p, "d", geo.wrapped ? wrappedPath(from, to, self, v.cross, geo.lift) : linkPath(from[0], to[0], v.cross, self, geo.arcH));
      set(p, "stroke-width", (0.75 + 11 * w).toFixed(2));
      set(p, "opacity", Math.min(1, 0.12 + 1.6 * w).toFixed(3));
    });
  }

  /** On a wrapped sentence, each key's percentage under its word (texts: one <text> per key), so
      every weight reads on screen whatever row it is in; none for a masked or hidden key. */
  function labels(texts, v, geo) {
    texts.forEach((t, j) => {
      const at = geo.wrapped && geo.kc[j], text = at && !v.masked[j] && !v.hidden[j] ? v.pct[j] + "%" : "";
      if (t.textContent !== text) t.textContent = text;
      if (at && t.getAttribute("x") !== String(at[0])) set(t, "x", at[0]), set(t, "y", at[2] + 13);
    });
  }

  /** The words for view v: the query pressed (was: the one pressed before; -1, just built: every
      button then gets its Tab stop), masked future words, keys shaded by weight. Only what changed
      is written: a click on a long sentence must not restyle all of it. */
  function words(qButtons, kWords, v, was) {
    const q = v.q;
    for (const [i, on] of [[was, false], [q, true]]) if (qButtons[i]) set(qButtons[i], "aria-pressed", on), qButtons[i].tabIndex = on ? 0 : -1;
    if (was < 0) qButtons.forEach((b, i) => { b.tabIndex = i === q ? 0 : -1; }); // one Tab stop
    qButtons.forEach((b, i) => b.classList.contains("is-masked") !== !!v.masked[i] && b.classList.toggle("is-masked"));
    kWords.forEach((w, j) => {
      const x = String(v.masked[j] ? 0 : v.weights[j]);
      if (w.style.getPropertyValue("--w") !== x) w.style.setProperty("--w", x);
    });
  }

  /** The readout table for view v: its caption, a row per key ({tr, pct, fill, tag}) and the
      footer (the total, and what the hidden special tokens take when they are hidden). Only what
      changed is written (a row remembers what it shows), so a click on a long sentence stays cheap. */
  function readout(caption, rows, foot, v) {
    const { h, sum } = window.Labs.util, q = v.q;
    caption.textContent = `Where “${v.word}” looks — ${v.name}` + (v.cross ? ", in the " + (v.S.key_label || "other sentence") : "") +
      (v.real || v.scale ? "" : " (no ÷√d)");
    rows.forEach((r, j) => {
      const self = !v.cross && j === q, shown = [v.pct[j], v.weights[j], self, !!v.masked[j]].join();
      if (r.shown === shown) return;
      r.shown = shown;
      r.pct.textContent = v.pct[j] + "%";
      r.fill.style.transform = `scaleX(${v.weights[j].toFixed(3)})`; // scaled, not sized: nothing is laid out again
      r.tr.classList.toggle("is-query", self);
      r.tr.classList.toggle("is-masked", !!v.masked[j]);
      r.tag.textContent = v.masked[j] ? "masked" : self ? "itself" : "";
    });
    const hiddenNames = [...new Set(v.keys.filter((k, j) => v.hidden[j]))], hiddenPct = sum(v.pct.filter((p, j) => v.hidden[j]));
    const said = [hiddenNames, hiddenPct, sum(v.pct)].join("|");
    if (foot.said === said) return;
    foot.said = said;
    const row = (label, pct, cls) => h("tr", { class: cls }, [h("th", { scope: "row" }, [label]), h("td", { class: "sl-pct" }, [pct + "%"]), h("td")]);
    foot.replaceChildren(...(hiddenNames.length ? [row("Shown", 100 - hiddenPct), row("Hidden " + hiddenNames.join(", "), hiddenPct, "sl-hidden-row")] : []),
      row("Total", sum(v.pct), "sl-total"));
  }

  /** The quadratic cost of a designed head's sentence: nq queries over nk keys. */
  function cost(nq, nk, cross, causal) {
    const n2 = nq * nk;
    return cross ? `${nq} queries × ${nk} keys → ${n2} scores; double both and it's 4× the scores (${4 * n2}).`
      : `${nq} words → ${n2} scores; at 2× the words (${2 * nq}), 4× the scores (${4 * n2}).` +
        (causal ? ` The causal mask keeps ${nq * (nq + 1) / 2} of them; the rest are never used.` : "");
  }

  ((window.Labs ||= {}).code ||= {}).spotlightDraw = Object.freeze({ top, linkPath, wrappedPath, links, labels, words, bars, readout, cost });
})();
