/* The model view's parts of the spotlight's later code: bundled after spotlight-more.js into the
   same script (attention/__init__.py _more_script), and added to what it registers:
   Labs.code.spotlightMore.{ opening(real, found), align(queries, real), grid(real, current, cells), mark(select, reports),
     fillFinder(el, reports, label), drawGrid(cells, real, rq, px, colors, bars) } */
(() => {
  "use strict";
  const { h } = window.Labs.util;
  const button = (attrs, kids) => h("button", { type: "button", ...attrs }, kids);

  /** The view a sentence with the model's attention only opens on (R: its real part): the head
      finder's best head (found: real.found in #lab-data, best first; layer 0, head 0 without one),
      on the word that gives the most weight to another word in it, so the head shows what it does. */
  function opening(R, found) {
    const id = found?.[0]?.head || "L0H0", [l, hd] = id.slice(1).split("H").map(Number);
    let q = Math.max(0, R.special.indexOf(false)), most = -1;
    R.attention[l][hd].forEach((row, i) => R.special[i] || row.forEach((w, j) => {
      if (j !== i && !R.special[j] && w > most) [most, q] = [w, i];
    }));
    return { h: id, q };
  }

  /** Each teaching word's index among the model's tokens ([CLS] the cat … [SEP]; R: {words,
      special}): its first word piece ("didn't" → didn ' t). */
  function align(queries, { words, special }) {
    const map = [];
    let p = 0;
    for (const w of queries) {
      while (p < words.length - 1 && special[p]) p++;
      map.push(p);
      for (let got = ""; p < words.length && !special[p] && got.length < w.length;) got += words[p++].replace(/^##/, "");
    }
    return map;
  }

  /** The model view's thumbnails: a label per layer, a button per head (onto `cells`: {id, L, H, canvas, button}). */
  function grid(real, current, cells) {
    const nodes = [];
    for (let L = 0; L < real.layers; L++) nodes.push(h("span", { "aria-hidden": "true" }, ["L" + L]), ...Array.from({ length: real.heads }, (_, H) => {
      const id = `L${L}H${H}`, canvas = h("canvas", { "aria-hidden": "true" });
      cells.push({ id, L, H, canvas, button: button({ class: "sl-cell", "data-head": id, "aria-label": `layer ${L}, head ${H}`,
        "aria-pressed": id === current, tabindex: cells.length ? -1 : 0 }, [canvas]) });
      return cells.at(-1).button;
    }));
    return nodes;
  }

  /** The head finder's heads (reports: its report, finder.js) marked in the Head select with what
      they find: "layer 3, head 1 — finder: coreference". Once per option. */
  function mark(select, reports) {
    for (const f of reports.filter(r => r.head)) {
      const o = select.querySelector(`option[value="L${f.head.layer}H${f.head.head}"]`);
      if (o && !o.text.includes(f.relation)) o.text += (o.text.includes(" — finder: ") ? ", " : " — finder: ") + f.relation;
    }
  }

  /** The head finder's report under the grid (el: the spotlight's elements; label(sentence id)), its
      introduction above it, and its heads marked in the Head list: once. */
  function fillFinder(el, reports, label) {
    if (el.finder.firstChild) return;
    const more = window.Labs.code.spotlightMore;
    mark(el.head, reports);
    el.finder.replaceChildren(...more.finder(reports, label));
    if (!el.finder.previousElementSibling.matches(".sl-hint")) el.finder.before(more.finderIntro());
  }

  /** Each thumbnail (cells, from grid()) drawn px square: where the model's word rq looks in that head (R: the attention, per mille). */
  function drawGrid(cells, R, rq, px, colors, bars) {
    for (const c of cells) {
      if (c.canvas.width !== px) c.canvas.width = c.canvas.height = px; // a new size lays the page out again
      bars(c.canvas, R.attention[c.L][c.H][rq].map(x => x / 1000), rq, colors);
    }
  }

  Object.assign(window.Labs.code.spotlightMore, { opening, align, grid, mark, fillFinder, drawGrid });
})();
