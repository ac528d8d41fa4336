/* The spotlight's code that its first paint does not need; spotlight.js adds this script
   (data.more.src, one of the kind's shared files) the first time a learner opens or scrolls near
   the four moves, opens the model view, downloads the view, or starts a module that sets "your
   sentence". Functions of what they are given (a view: what spotlight.js's view() returns), which
   return nodes, a figure or a sentence and change nothing of the spotlight's, but paintHood, which
   spotlight.js's paint() calls to write the four moves' part.
   Labs.code.spotlightMore = { hood(view, step), paintHood(el, steps, view, real, printing, ready), figure(view, caption, label), download(view, caption, type, done),
     realHead(view, model), modelIntro(model, read, inBrowser), finder(reports, label), finderIntro(),
     ownSentence(sentence, pageHeads, model) }, and the model view's parts (spotlight-model.js, bundled after it). */
(() => {
  "use strict";
  const u = window.Labs.util, { h, fmt, sum } = u;
  const button = (attrs, kids) => h("button", { type: "button", ...attrs }, kids);

  /** Step s (0–3) for the view's word: a paragraph or two and a table of the numbers (a designed head's view). */
  function hood(v, s) {
    const { H, m, S, q } = v, d = m.q_dims.length, kd = m.k_dims || m.q_dims, bias = H.bias;
    const vec = x => u.short(x, v.precision.vectors), p = (...kids) => h("p", null, kids);
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
    const score = j => H.scores[q][j] === null ? null : v.scale ? H.scaled[q][j] : H.scores[q][j] + (bias ? bias[q][j] : 0);

    if (s === 0) {
      const c = cols([H.q[q], ...H.k]), left = d - c.length;
      return [p("Project: multiply each word's vector by this head's W_Q, W_K and W_V. The query is what the word scores others " +
        "with, the key is what others' queries are scored against, and the value is what the word passes on if it gets weight. " +
        "A trained model learns these matrices; ours are written by hand, so every dimension has a name. This head's queries and keys have d", h("sub", null, ["k"]),
        ` = ${d} dimensions. “${v.word}” asks with its query; every ` +
        `${v.cross ? "word of the " + (S.key_label || "other sentence") : "word"} answers with its key.`),
      table("Query and keys" + (left ? ` (${left} all-zero dimension${left > 1 ? "s" : ""} left out)` : ""),
        ["vector", ...c.map(i => kd[i] === m.q_dims[i] ? kd[i] : h("span", null, [m.q_dims[i], h("br"), "× " + kd[i]]))],
        [row("q  " + v.word, c.map(i => vec(H.q[q][i])), "is-q"), ...H.k.map((k, j) => row("k  " + key(j), c.map(i => vec(k[i])), v.masked[j] ? "is-masked" : null))])];
    }
    if (s === 1) {
      const head = ["key", "q·k", ...(v.scale ? ["÷ √" + d] : []), ...(bias ? ["+ bias"] : []), "= score"];
      return [p("Compare: each score is the dot product q·k — multiply matching dimensions and add. The better a key matches " +
        "the query, the higher its score. " + (v.scale
          ? `Then divide by √d = √${d} = ${fmt(Math.sqrt(d), 2)}, as the original Transformer and most models since do: dot products of longer vectors ` +
            "spread wider, and the division keeps the scores in the same range whatever d is."
          : "The ÷√d switch is off, so the raw scores go straight to the softmax.")),
      bias && p("This head also adds a fixed bias B to every score, after the division — softmax(QKᵀ/√d + B)V. Real models " +
        "do this too (T5 and ALiBi add position biases). Here: " + m.bias),
      // The scaled column is the build's score less the bias, so each row adds up as printed.
      table(`Scores for “${v.word}”`, head, rowsFor(j => H.scores[q][j] === null ? ["masked", ...head.slice(2).map(() => "–")]
        : [vec(H.scores[q][j]), ...(v.scale ? [vec(H.scaled[q][j] - (bias ? bias[q][j] : 0))] : []), ...(bias ? [vec(bias[q][j])] : []), vec(score(j))]))];
    }
    if (s === 2) {
      const scores = v.keys.map((k, j) => score(j)), max = Math.max(...scores.filter(x => x !== null));
      const ex = scores.map(x => x === null ? 0 : Math.exp(x - max)), total = sum(ex);
      return [p(`Normalise: the softmax turns scores into weights. Subtract the largest score (${fmt(max, 3)}) so nothing overflows, take e to ` +
        `the power of each, then divide by their sum (${fmt(total, 3)}). The weights are never negative and add up to 1` +
        (S.kind === "causal" ? "; masked words count as −∞, so they get exactly 0." : ".")),
      table(`Softmax for “${v.word}”`, ["key", "score", "e^(score − max)", "weight", "%"], rowsFor(j => scores[j] === null
        ? ["−∞", "0", fmt(0, 4), "0%"] : [vec(scores[j]), fmt(ex[j], 3), fmt(v.weights[j], v.precision.weights), v.pct[j] + "%"]),
      row("sum", ["", fmt(total, 3), fmt(sum(v.weights), 2), sum(v.pct) + "%"]))];
    }
    const out = v.scale ? H.out[q] : H.v[0].map((x, c) => sum(H.v.map((r, j) => v.weights[j] * r[c])));
    const c = cols([...H.v, out]);
    return [p(`Mix: multiply each word's value vector by its weight and add them up. This designed head has its own W_V, so its ` +
      `values carry only what it passes on (${m.v_dims.join(", ")}); a word with more weight contributes more to the mix.` +
      (v.scale ? "" : " (With ÷√d off, this mix is recomputed here from the weights shown.)")),
    table("Values, weighted", ["value", "weight", ...c.map(i => m.v_dims[i])], rowsFor(j => [fmt(v.weights[j], 3), ...c.map(i => vec(H.v[j][i]))]),
      row("mix", ["Σ", ...c.map(i => fmt(out[i], 3))])),
    ...residual(v)];
  }

  /** The rest of move 4: the blend through W_O, added to the word's own vector (built with ÷√d, all heads). */
  function residual(v) {
    const { S, m, H, q, residualDims: dims } = v, R = S.residual || S.heads[v.heads[0].id]?.residual, p = (...kids) => h("p", null, kids);
    if (!R || !H.o) return [];
    const shown = v.heads, before = dims.map((d, i) => R.before[q][i] ?? 0), after = R.after[q];
    const mine = dims.map(d => { const i = m.o_dims.indexOf(d); return i < 0 ? 0 : H.o[q][i]; });
    const others = dims.map((d, i) => after[i] - before[i] - mine[i]);
    const rowsShown = dims.map((d, i) => i).filter(i => before[i] || mine[i] || Math.abs(others[i]) >= 0.05);
    const left = dims.filter((d, i) => others[i] && Math.abs(others[i]) < 0.05).length;
    const widths = shown.map(x => x.o_dims.length);
    const cell = x => x ? u.short(x, 3) : "0", nRoles = dims.indexOf("subject");
    const role = dims[before.findIndex((x, i) => i < nRoles && x === 1)] || "its role";
    return [p(`Then add: the mix does not replace “${v.word}”. In a real layer each head's mix is multiplied by its block of the ` +
      "output matrix W_O and the result is added to the word's own vector, the residual stream: x + concat(" +
      shown.map(x => x.name.toLowerCase()).join(", ") + `)·W_O. Here the ${shown.length} heads' mixes (${widths.join(" + ")} = ` +
      `${sum(widths)} numbers, one W_V per head) are joined and projected by one W_O.`),
    p(`Our W_O simply copies each head's mix into slots of its own (${m.o_dims.slice(0, 2).join(", ")}…), so you can ` +
      `read what got added; a trained W_O mixes all heads into every dimension. So “${v.word}” keeps ${role} = 1 — it does ` +
      "not turn into what it looked at — and gains what its heads found." + (v.scale ? "" : " This table shows the layer as built, with ÷√d.")),
    h("div", { class: "sl-scroll", tabindex: 0, role: "region", "aria-label": `“${v.word}” before and after` }, [h("table", { class: "sl-num" }, [
      h("caption", null, [`“${v.word}” before → after the layer`]),
      h("thead", null, [h("tr", null, ["dimension", "before", `+ ${m.name}`, "+ other heads", "= after"].map(x => h("th", { scope: "col" }, [x])))]),
      h("tbody", null, rowsShown.map(i => h("tr", { class: mine[i] ? "is-q" : null }, [h("th", { scope: "row" }, [dims[i]]),
        ...[before[i], mine[i], others[i], after[i]].map(x => h("td", { class: x ? null : "z" }, [cell(x)]))])))])]),
    left ? p(`${left} smaller entr${left === 1 ? "y" : "ies"} from the other heads (under 0.05) left out.`) : null].filter(Boolean);
  }

  /** Why "not shown" is not "shown not to": the sign test counts only the pairs where head and rule disagree. */
  function weakTest(versus) {
    const said = versus.filter(v => v.p >= 0.05 && v.wins + v.losses).map(v => `against the ${v.baseline} rule ` + (v.needed === null
      ? `only ${v.wins + v.losses} ${v.wins + v.losses === 1 ? "pair differs" : "pairs differ"}, too few for any result to pass`
      : `it would need ${v.needed} wins of those ${v.wins + v.losses}`));
    return said.length ? ` The sign test counts only the held-out pairs where the head and a rule disagree, so at this size ` +
      `it is weak: ${said.join("; ")}.` : "";
  }

  /** One relation of the head finder: the head picked on one half, its held-out score, the baselines,
      links to examples (`label(sentence id)`: the sentence's name). */
  function finderItem(f, label) {
    const b = f.head, pc = x => Math.round(x * 100) + "%", s = n => n === 1 ? "" : "s";
    const [off, tag] = f.baselines, away = Math.abs(off.offset), [vOff, vTag] = f.versus;
    const link = (ex, text) => ex && h("a", { href: `#s=${encodeURIComponent(ex.sentence)}&h=L${b.layer}H${b.head}&q=${ex.q}&scale=1&special=1` },
      [`${text}: “${ex.word}” → “${ex.target}” in “${label(ex.sentence)}”`]);
    const verdict = f.beats_baseline ? "Beats both rules on the held-out pairs."
      : !vOff.wins && !vOff.losses && !vTag.wins && !vTag.losses ? "It agrees with both rules on every held-out pair, so these pairs do not show it doing more than they do."
      : `Not shown to beat both rules on these held-out pairs (against the offset rule ${vOff.wins} won, ${vOff.losses} lost; ` +
        `against the tag rule ${vTag.wins} won, ${vTag.losses} lost).` + weakTest([vOff, vTag]);
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


  /* ---------- the figure: the current view as SVG or PNG, for slides ---------- */

  const FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
  const C = { bg: "#ffffff", text: "#1f1c17", muted: "#5b554b", border: "#dcd3c4", strong: "#8c8272", accent: "#e08600",
    shade: "#ffb13d", qbg: "#1f1c17", qtext: "#ffd27a", track: "#f2ede4" };
  const hex = c => [1, 3, 5].map(i => parseInt(c.slice(i, i + 2), 16));
  /** The colour a fraction w of the way from b to a, as the page's color-mix() shading does. */
  const mix = (a, b, w) => "#" + hex(a).map((x, i) => Math.round(x * w + hex(b)[i] * (1 - w)).toString(16).padStart(2, "0")).join("");
  const esc = s => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  const ruler = document.createElement("canvas").getContext("2d");
  const width = (s, size, weight) => { ruler.font = `${weight} ${size}px ${FONT}`; return ruler.measureText(s).width; };
  /** `s` in lines no wider than `max` at that font, broken between words (a word longer than a line stays whole). */
  function wrap(s, max, size, weight) {
    const lines = [""];
    for (const w of String(s).trim().split(/\s+/)) {
      const next = lines.at(-1) ? lines.at(-1) + " " + w : w;
      if (lines.at(-1) && width(next, size, weight) > max) lines.push(w);
      else lines[lines.length - 1] = next;
    }
    return lines;
  }

  /** The view `v` (spotlight.js's view()) as drawing primitives, then as SVG text or on a 2D canvas:
      title, sentence, the words shaded by weight with the query marked, the links, and a legend of
      every key with its percentage. A light palette whatever the page's, as a slide wants. */
  function figure(v, caption, sentenceLabel) {
    const items = [], PAD = 32, GAP = 8, SIZE = 20, WH = 40, q = v.q, cross = !!v.cross;
    const rect = (x, y, w, hh, fill, stroke, dash) => items.push({ t: "rect", x, y, w, h: hh, fill, stroke, dash });
    const text = (s, x, y, size, fill, weight = 400, anchor = "start") => items.push({ t: "text", s, x, y, size, fill, weight, anchor });
    const shown = j => !v.hidden[j];
    const boxes = words => words.map((w, j) => ({ w: shown(j) ? Math.ceil(width(w, SIZE, 600)) + 22 : 0 }));
    const qBoxes = boxes(v.queries), kBoxes = cross ? boxes(v.keys) : qBoxes;
    const rowW = bs => sum(bs.map(b => b.w)) + GAP * (bs.filter(b => b.w).length - 1);
    const W = Math.round(Math.min(1200, Math.max(720, Math.max(rowW(qBoxes), rowW(kBoxes)) + 2 * PAD)));
    /** Place boxes in centred rows no wider than the figure; the number of rows. */
    function place(bs, top) {
      const lines = [[]];
      let used = 0;
      for (const b of bs) {
        if (!b.w) continue;
        if (used && used + GAP + b.w > W - 2 * PAD) { lines.push([]); used = 0; }
        used += (used ? GAP : 0) + b.w;
        lines.at(-1).push(b);
      }
      lines.forEach((line, r) => {
        let x = (W - (sum(line.map(b => b.w)) + GAP * (line.length - 1))) / 2;
        for (const b of line) { b.x = x; b.y = top + r * (WH + GAP); x += b.w + GAP; }
      });
      return lines.length;
    }
    let y = PAD;
    // The title in as many lines as it takes at the figure's width (a long caption is never cut).
    for (const line of wrap(caption, W - 2 * PAD, 22, 700)) { text(line, PAD, y + 22, 22, C.text, 700); y += 28; }
    text(sentenceLabel, PAD, y + 22, 15, C.muted);
    y += 44;
    const arcH = 96, bandH = 72;
    const qTop = y + (cross ? 0 : arcH), qRows = place(qBoxes, qTop);
    let kTop = cross ? qTop + qRows * (WH + GAP) + bandH : qTop;
    const kRows = cross ? place(kBoxes, kTop) : qRows;
    const oneRow = qRows === 1 && kRows === 1;
    if (cross && !oneRow) { // no links between the rows: no empty band for them either
      kTop -= bandH - 2 * GAP;
      kBoxes.forEach(b => { if (b.w) b.y -= bandH - 2 * GAP; });
    }
    // Links first, under the words: as on the page, width and opacity grow with the weight.
    if (oneRow) {
      const from = qBoxes[q], fx = from.x + from.w / 2;
      v.keys.forEach((k, j) => {
        const w = v.weights[j], to = kBoxes[j];
        if (!shown(j) || v.masked[j] || !(w > 0.004) || !to.w) return;
        const tx = to.x + to.w / 2, base = qTop - 2;
        const d = cross ? `M${fx.toFixed(1)} ${qTop + WH + 2}C${fx.toFixed(1)} ${qTop + WH + 38} ${tx.toFixed(1)} ${kTop - 38} ${tx.toFixed(1)} ${kTop - 2}`
          : j === q ? `M${fx - 7} ${base}C${fx - 15} ${base - 34} ${fx + 15} ${base - 34} ${fx + 7} ${base}`
          : `M${fx.toFixed(1)} ${base}C${fx.toFixed(1)} ${(base - Math.min(arcH - 6, 16 + Math.abs(tx - fx) * 0.32) * 4 / 3).toFixed(1)} ${tx.toFixed(1)} ${(base - Math.min(arcH - 6, 16 + Math.abs(tx - fx) * 0.32) * 4 / 3).toFixed(1)} ${tx.toFixed(1)} ${base}`;
        items.push({ t: "path", d, stroke: C.accent, width: +(0.75 + 11 * w).toFixed(2), opacity: +Math.min(1, 0.12 + 1.6 * w).toFixed(3) });
      });
    }
    const word = (b, s, fill, color, stroke, dash, weight) => {
      rect(b.x, b.y, b.w, WH, fill, stroke, dash);
      text(s, b.x + b.w / 2, b.y + 27, SIZE, color, weight, "middle");
    };
    v.queries.forEach((s, i) => {
      if (!qBoxes[i].w) return;
      if (i === q) return word(qBoxes[i], s, C.qbg, C.qtext, C.accent, false, 700);
      if (cross) return word(qBoxes[i], s, C.bg, C.text, C.border, false, 500);
      word(qBoxes[i], s, v.masked[i] ? C.bg : mix(C.shade, C.bg, v.weights[i]), v.masked[i] ? C.muted : C.text, C.border, !!v.masked[i], 500);
    });
    if (cross) v.keys.forEach((s, j) => kBoxes[j].w && word(kBoxes[j], s, mix(C.shade, C.bg, v.weights[j]), C.text, C.border, false, 500));
    y = kTop + kRows * (WH + GAP) + 8;
    if (!oneRow) { text("The sentence wraps, so the links are left out: the shading and the legend show the weights.", PAD, y + 14, 13, C.muted); y += 22; }
    // The legend: every key, a bar and its percentage, in columns.
    y += 16;
    text("Weights (softmax shares of 100%)", PAD, y + 14, 15, C.text, 700);
    y += 28;
    const keys = v.keys.map((k, j) => j).filter(shown), COL = 330, cols = Math.max(1, Math.floor((W - 2 * PAD + 24) / COL));
    const per = Math.ceil(keys.length / cols), LH = 26;
    keys.forEach((j, n) => {
      const x = PAD + Math.floor(n / per) * COL, yy = y + (n % per) * LH, self = !cross && j === q;
      text(v.keys[j] + (v.masked[j] ? " (masked)" : self ? " (itself)" : ""), x, yy + 17, 15, v.masked[j] ? C.muted : C.text, self ? 700 : 500);
      rect(x + 150, yy + 7, 110, 10, C.track);
      if (v.weights[j] > 0) rect(x + 150, yy + 7, Math.max(1, 110 * v.weights[j]), 10, C.accent);
      text(v.pct[j] + "%", x + 310, yy + 17, 15, C.text, 600, "end");
    });
    y += per * LH + 12;
    const total = sum(keys.map(j => v.pct[j]));
    text(`Total ${total}%` + (keys.length < v.keys.length ? ` of the shown words (hidden: ${100 - total}%)` : ""), PAD, y + 14, 14, C.text, 700);
    const mine = v.s === "own" || !!(v.S && v.S.own); // "Your sentence": computed here, never at build
    text("Attention Labs — every weight computed " + (mine ? "in your browser" : "when the site was built"), W - PAD, y + 14, 13, C.muted, 400, "end");
    const H = Math.round(y + 14 + PAD);

    const svg = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="${esc(FONT)}">`,
      `<title>${esc(caption)}</title>`, `<rect width="${W}" height="${H}" fill="${C.bg}"/>`];
    for (const it of items) {
      if (it.t === "rect") svg.push(`<rect x="${+it.x.toFixed(1)}" y="${+it.y.toFixed(1)}" width="${+it.w.toFixed(1)}" height="${it.h}" rx="${it.h > 12 ? 8 : 5}" fill="${it.fill}"` +
        (it.stroke ? ` stroke="${it.stroke}"${it.dash ? ' stroke-dasharray="4 3"' : ""}` : "") + "/>");
      else if (it.t === "path") svg.push(`<path d="${it.d}" fill="none" stroke="${it.stroke}" stroke-width="${it.width}" stroke-linecap="round" opacity="${it.opacity}"/>`);
      else svg.push(`<text x="${+it.x.toFixed(1)}" y="${+it.y.toFixed(1)}" font-size="${it.size}" font-weight="${it.weight}" fill="${it.fill}"` +
        (it.anchor !== "start" ? ` text-anchor="${it.anchor}"` : "") + `>${esc(it.s)}</text>`);
    }
    svg.push("</svg>");

    /** The same figure on a canvas, `scale` pixels per unit. */
    function draw(canvas, scale) {
      canvas.width = W * scale;
      canvas.height = H * scale;
      const g = canvas.getContext("2d");
      g.scale(scale, scale);
      g.fillStyle = C.bg;
      g.fillRect(0, 0, W, H);
      for (const it of items) {
        if (it.t === "rect") {
          g.beginPath();
          g.roundRect(it.x, it.y, it.w, it.h, it.h > 12 ? 8 : 5);
          g.fillStyle = it.fill;
          g.fill();
          if (it.stroke) { g.setLineDash(it.dash ? [4, 3] : []); g.strokeStyle = it.stroke; g.lineWidth = 1; g.stroke(); g.setLineDash([]); }
        } else if (it.t === "path") {
          g.globalAlpha = it.opacity;
          g.strokeStyle = it.stroke;
          g.lineWidth = it.width;
          g.lineCap = "round";
          g.stroke(new Path2D(it.d));
          g.globalAlpha = 1;
        } else {
          g.font = `${it.weight} ${it.size}px ${FONT}`;
          g.fillStyle = it.fill;
          g.textAlign = it.anchor === "middle" ? "center" : it.anchor === "end" ? "right" : "left";
          g.fillText(it.s, it.x, it.y);
        }
      }
    }
    return { svg: svg.join("\n") + "\n", width: W, height: H, draw };
  }

  /** Save the view as a figure: "svg", or "png" at twice the size; done(file name) once saved. */
  function download(v, caption, type, done) {
    const f = figure(v, caption, v.S.label), slug = x => String(x).replace(/[^\w-]+/g, "_");
    const name = `attention-${slug(v.s)}-${slug(v.h)}-${slug(v.word)}.${type}`;
    const save = blob => {
      const a = h("a", { href: URL.createObjectURL(blob), download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
      done(name);
    };
    if (type === "svg") return save(new Blob([f.svg], { type: "image/svg+xml" }));
    const canvas = document.createElement("canvas");
    f.draw(canvas, 2);
    canvas.toBlob(save, "image/png");
  }

  /* ---------- "your sentence": a sentence made in the browser, checked before the spotlight takes it ---------- */

  /** S completed as the page's sentences are, with `extra`: the descriptions of its designed heads
      the page lacks. S brings designed heads' numbers (S.heads, each described by the page — its
      ids are `pageHeads` — or by S.head_meta), the model's attention (S.real, as
      Labs.data.realHeads[id]: words, special, attention[layers][heads][n][n] per mille; `model`:
      {name, layers, heads} of the page's model, null without one), or both. Throws an Error that
      says what is wrong. */
  function ownSentence(S, pageHeads, model) {
    const fail = why => { throw new Error(`setOwnSentence: ${why}`); };
    if (!S || typeof S !== "object") fail("give a sentence object");
    const kind = S.kind || "self", heads = S.heads || {}, R = S.real || null, ids = Object.keys(heads);
    if (!["self", "causal", "cross"].includes(kind)) fail(`kind is "${kind}", not "self", "causal" or "cross"`);
    const extra = (S.head_meta || []).filter(m => !pageHeads.includes(m.id) && ids.includes(m.id));
    const unknown = ids.filter(id => !pageHeads.includes(id) && !extra.some(m => m.id === id));
    if (unknown.length) fail(`head ${unknown.join(", ")} has no description (give it in head_meta)`);
    if (R) {
      if (!model) fail("this lab has no model, so a sentence cannot bring the model's attention");
      if (kind === "cross") fail(`${model.name} reads one sentence at a time: no model attention for a cross sentence`);
      const n = R.words?.length, square = A => A.length === n && A.every(row => row.length === n && row.every(x => x >= 0));
      if (!n || R.special?.length !== n) fail("real.words and real.special must be lists of the same length");
      if (!(R.attention?.length === model.layers && R.attention.every(layer => layer.length === model.heads && layer.every(square))))
        fail(`real.attention must be [${model.layers}][${model.heads}][${n}][${n}] weights per mille`);
    } else if (!ids.length) fail("it has neither designed heads nor the model's attention");
    const queries = S.queries || R.words.filter((w, i) => !R.special[i]), keys = S.keys || queries;
    for (const id of ids) {
      if (heads[id].weights?.length !== queries.length || heads[id].weights.some(row => row.length !== keys.length))
        fail(`head ${id}'s weights must be [${queries.length}][${keys.length}]`);
    }
    return { label: "Your sentence", note: "", key_label: "", own: "", ...S, id: "own", kind, heads, real: R, queries, keys, extra };
  }

  /** The four moves' part of the spotlight for view v (el: its elements, steps: the four move
      buttons): the title, the move shown (v.step; all four when printing) with this word's numbers
      once they are here (ready), or for a real head the paragraph `real` instead. */
  function paintHood(el, steps, v, real, printing, ready) {
    const title = `Step by step: the numbers for “${v.word}”`;
    if (el.hoodTitle.textContent !== title) el.hoodTitle.textContent = title;
    if (el.steps.hidden !== !!real) el.steps.hidden = el.prevStep.parentNode.hidden = !!real;
    steps.forEach((b, i) => i === v.step ? b.setAttribute("aria-current", "step") : b.removeAttribute("aria-current"));
    el.prevStep.disabled = v.step === 0;
    el.nextStep.disabled = v.step === 3;
    if (real) return el.step.textContent !== real.textContent && el.step.replaceChildren(real); // the same words for every word
    el.step.replaceChildren(...!ready ? [h("p", { class: "sl-hint" }, ["Loading the numbers…"])] : (printing ? [0, 1, 2, 3] : [v.step])
      .map(s => h("div", { "data-step": s }, [h("h4", null, [`${s + 1}. ${steps[s].textContent}`]), ...hood(v, s)])));
  }

  /* ---------- the model's heads ---------- */

  /** What the spotlight says of the real head the view v shows (model: {name, layers, heads}):
      {desc, note, hidden, cost, hood}: the head's description, the notes under the sentence (what
      hiding [CLS]/[SEP] leaves out, when they are hidden), the quadratic cost, and the paragraph
      that stands for the four moves. */
  function realHead(v, model) {
    const n2 = v.queries.length * v.keys.length, all = model.layers * model.heads, gone = j => v.hidden[j];
    return {
      hidden: v.hide ? `Hiding ${[...new Set(v.keys.filter((k, j) => gone(j)))].join("/")}: ${sum(v.pct.filter((x, j) => gone(j)))}% of this row. ` +
        "The other weights are not renormalised." : "",
      desc: `A real head of ${model.name.split("/").pop()} (${v.name}). Its weights come from the pretrained model; the ÷√d switch applies to the teaching heads only.`,
      note: v.S.kind === "causal" ? "This model is an encoder: it reads the whole sentence at once, with no causal mask." : v.S.note,
      cost: `${v.queries.length} tokens (with ${v.special.filter(Boolean).length} special) → ${n2} scores per head; this model's ${all} heads compute ${(n2 * all).toLocaleString("en")}. At 2× the tokens, 4× the scores.`,
      hood: h("p", null, ["This is a real head, so its queries and keys live in the model's learned dimensions, which the page " +
        "does not embed. What it does carry is the result of the first three moves: the softmax weights in the table, each row adding up to 100%."])
    };
  }

  /** The model view's introduction: for a sentence the model has read (`read`), its attention computed at build or `inBrowser`. */
  function modelIntro(model, read, inBrowser) {
    return !read
      ? `${model.name} is an encoder with self-attention only: it has no cross-attention to show here. Pick another sentence to see its real heads.`
      : `The real attention weights of ${model.name} (${model.layers} layers × ${model.heads} heads) for this sentence, computed ` +
        (inBrowser ? "in your browser from its published weights" : "by our NumPy forward pass of its published weights") +
        ": nobody designed them. Each square shows where the current word looks in one head; layers and heads count from 0.";
  }

  /** The head finder's report as list items, one per relation type it found a head for. */
  const finder = (reports, label) => reports.filter(f => f.head).map(f => finderItem(f, label));

  /** What the head finder did, above its report (the model view). */
  const finderIntro = () => h("p", { class: "sl-hint" }, ["For each kind of link between words, we labelled pairs in the sentences above and in more sentences of our own, and split the sentences in two halves. The head is picked on one half and scored on the other, held-out half, which it never saw. A hit: the head’s strongest weight, leaving out [CLS], [SEP] and the word itself, lands on the labelled word. Two simple rules are scored on the same pairs: look a fixed number of words away, and look at the nearest word with the right tag. We say a head beats them only if it finds at least 60% of the held-out pairs and wins clearly against both (a sign test, p < 0.05). The pattern view can name another head for the same job, and both are right: it picks the head whose whole rows agree best with a designed head’s, the finder the one whose strongest weight most often lands on the labelled word."]);

  window.Labs.code.spotlightMore = { hood, paintHood, figure, download, realHead, modelIntro, finder, finderIntro, ownSentence };
})();
