/* The causal attention grid of the next-token lab: one query head of one layer over an authored
   text, from the text's script beside the page (compute.read_attention: lower triangles in whole
   thousandths, [layer][head], row i holding keys 0 … i), loaded when the grid comes into view. */
(() => {
  "use strict";
  const NT = window.Labs.code?.nextToken, box = document.getElementById("nt-att-box");
  if (!NT || !box || !NT.data.attention_files) return;
  const u = window.Labs.util, { h } = u, { data, shown } = NT;
  const $ = id => document.getElementById(id);
  const controls = $("nt-att-controls"), textSel = $("nt-att-text"), layerSel = $("nt-att-layer"), headSel = $("nt-att-head");
  controls.hidden = false;

  async function draw() {
    const t = Number(textSel.value), layer = Number(layerSel.value), head = Number(headSel.value);
    try { await u.load(data.attention_files[t]); } catch { box.textContent = "The attention file could not be loaded."; return; }
    const W = window.Labs.data[`nextTokenAttention${t}`][layer][head], T = data.texts[t];
    const words = T.ids.map(j => shown(data.tok[String(j)] ?? "?")), m = words.length;
    const rows = [];
    for (let i = 0, at = 0; i < m; i++) {
      const row = W.slice(at, at + i + 1), pct = u.roundShares(row, 100);  // whole percents adding up to 100
      at += i + 1;
      const cells = [h("th", { scope: "row", class: "nt-mono" }, [words[i]])];
      for (let k = 0; k < m; k++) {
        if (k > i) { cells.push(h("td", { class: "nt-masked" }, [])); continue; }
        const cell = h("td", { class: "nt-w", "data-w": String(row[k]) }, [String(pct[k])]);
        cell.style.setProperty("--w", String(row[k] / 1000));  // CSSOM, which the site's CSP allows (a style attribute it refuses)
        cells.push(cell);
      }
      rows.push(h("tr", {}, cells));
    }
    box.replaceChildren(h("table", { class: "nt-att", "data-shows": `${t}:${layer}:${head}` }, [
      h("caption", {}, [`Layer ${layer}, query head ${head}: each row's weights in whole percent; blank cells are later tokens, masked.`]),
      h("thead", {}, [h("tr", {}, [h("td", {}, []), ...words.map(w => h("th", { scope: "col", class: "nt-mono" }, [w]))])]),
      h("tbody", {}, rows)]));
  }
  for (const s of [textSel, layerSel, headSel]) s.addEventListener("change", draw);
  // The text's file (every head of every layer) is fetched when the grid comes near the screen, not
  // on the first visit.
  if (!("IntersectionObserver" in window)) draw();
  else new IntersectionObserver((seen, watcher) => {
    if (seen.some(e => e.isIntersecting)) { watcher.disconnect(); draw(); }
  }, { rootMargin: "200px" }).observe(box);
})();
