/* The next-token lab (#next-token). The page is rendered whole by the build (widget.html): every
   token is a button carrying its probability (data-prob) and its position (data-at). This script
   shows a clicked token's detail from #lab-data (payload.py): its probability, its surprise in
   bits (−log₂ p) and the model's five likeliest tokens at that position. */
(() => {
  "use strict";
  const root = document.getElementById("next-token");
  if (!root) return;
  const u = window.Labs.util, { h } = u;
  const data = u.readJSON("lab-data");
  const detail = document.getElementById("nt-detail");
  if (!data?.texts?.length || !detail) return;

  const shown = t => t.replace(/ /g, "␣").replace(/\n/g, "↵");
  const pct = p => p >= 0.0001 ? String(+(100 * p).toPrecision(3)) + "%" : "under 0.01%";
  const bits = p => -Math.log2(Math.max(p, 1e-300));
  const word = id => data.tok[String(id)] ?? "?";

  function show(textIndex, at) {
    const T = data.texts[textIndex], n = T.ids.length - 1, before = T.ids.slice(1, at + 1).map(word).join("");
    const parts = [];
    if (at < n) {
      const p = T.p[at];
      parts.push(h("p", { class: "nt-detail-head" }, [
        "After “", before, "”, the model gave ", h("strong", { class: "nt-mono" }, [shown(word(T.ids[at + 1]))]),
        " a probability of ", h("strong", {}, [pct(p)]), ": ", h("strong", {}, [bits(p).toFixed(2) + " bits"]),
        " of surprise."]));
    } else {
      parts.push(h("p", { class: "nt-detail-head" }, ["After the whole text, the model's likeliest next tokens:"]));
    }
    const rows = T.top[at].map(([j, q]) => h("tr", { class: at < n && j === T.ids[at + 1] ? "is-actual" : "" }, [
      h("th", { scope: "row", class: "nt-mono" }, [shown(word(j))]), h("td", {}, [pct(q)]),
      h("td", {}, [bits(q).toFixed(2)])]));
    parts.push(h("table", { class: "nt-top" }, [
      h("caption", {}, ["The five likeliest tokens there"]),
      h("thead", {}, [h("tr", {}, [h("th", { scope: "col" }, ["Token"]), h("th", { scope: "col" }, ["Probability"]),
        h("th", { scope: "col" }, ["Surprise (bits)"])])]),
      h("tbody", {}, rows)]));
    detail.replaceChildren(...parts);
    for (const b of root.querySelectorAll(".nt-tok[aria-pressed]")) b.removeAttribute("aria-pressed");
    root.querySelector(`.nt-text[data-text="${textIndex}"] .nt-tok[data-at="${at}"]`)?.setAttribute("aria-pressed", "true");
  }

  /* The logit lens where token `at` of text `textIndex` was predicted: an authored text's from the
     script beside the page (payload.lens_file), loaded on the first click on that text. */
  const lensBody = document.getElementById("nt-lens-body"), lensWhere = document.getElementById("nt-lens-where");
  const pctCell = p => p >= 0.0001 ? String(+(100 * p).toPrecision(3)) + "%" : "under 0.01%";
  async function lens(textIndex, at) {
    const src = data.lens_files?.[textIndex], T = data.texts[textIndex], n = T.ids.length - 1;
    if (!lensBody) return;
    let rows, names = {};
    if (src) {
      try { await u.load(src); } catch { return; }
      const L = window.Labs.data[`nextTokenLens${textIndex}`];
      if (!L) return;
      rows = L.lens[at], names = L.tok;
    } else if (NT.liveLens) {  // the learner's own text: read in the page (30-own.js)
      rows = await NT.liveLens(textIndex, at);
      if (!rows) return;
    } else return;
    const word = id => names[String(id)] ?? data.tok[String(id)] ?? "?";
    lensBody.replaceChildren(...rows.map(([j, p, t], l) => h("tr", {}, [
      h("th", { scope: "row" }, [l === 0 ? "embeddings" : String(l)]), h("td", { class: "nt-mono" }, [shown(word(j))]),
      h("td", {}, [pctCell(p)]), h("td", {}, [pctCell(t)])])));
    const before = T.ids.slice(1, at + 1).map(word).join("");
    lensWhere.textContent = at < n
      ? `Here: after “${before}”, where the text goes on with “${word(T.ids[at + 1])}” (the target).`
      : `Here: after “${before}”, reading the model's own top guess as the target.`;
    lensBody.closest("table").dataset.at = `${textIndex}:${at}`;
  }

  root.addEventListener("click", ev => {
    const b = ev.target.closest(".nt-tok");
    if (!b) return;
    const textIndex = Number(b.closest(".nt-text").dataset.text), at = Number(b.dataset.at);
    show(textIndex, at);
    lens(textIndex, at);
  });
  // The learner's own text (30-own.js) joins data.texts and is shown through the same detail.
  window.Labs.code = window.Labs.code || {};
  const NT = window.Labs.code.nextToken = { data, show, shown, pct, liveLens: null };
  const T0 = data.start.text, at0 = data.start.position;
  show(T0, Math.min(at0, data.texts[T0].ids.length - 1));
  root.dataset.ready = "true";
})();
