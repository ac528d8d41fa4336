/* The ÷√d demo (#sqrt-demo, kinds/attention/sqrt.html): loaded on demand by static/70-sqrt.js,
   in one script with its numbers (Labs.data.sqrtDemo, computed at build by
   generator/kinds/attention/scaling.py; see generator/kinds/attention/sqrtdemo.py). It only shows the
   size the d slider picks: one typical draw's weights without and with ÷√d, and the averages
   over all draws. It shares nothing with spotlight.js. */
(() => {
  "use strict";
  const root = document.getElementById("sqrt-demo"), data = window.Labs?.data?.sqrtDemo;
  if (!root || !data || !data.sizes || !data.sizes.length) return;
  window.Labs.later?.show(root); // the table below, if it is not in the page yet
  // The slider and the two panels exist only with this script (the table below needs none).
  const panel = (side, title) => `<div class="sq-panel sq-${side}"><table class="sq-bars" id="sq-bars-${side}">
<caption><strong>${title}</strong><br><span class="sq-hint">One typical draw, keys strongest first</span></caption>
<thead><tr><th scope="col">Key</th><th scope="col">Score</th><th scope="col" class="sq-bar-col"><span class="visually-hidden">Bar</span></th><th scope="col">Weight</th></tr></thead>
<tbody></tbody></table><dl class="sq-nums" id="sq-nums-${side}"></dl></div>`;
  root.querySelector(".sq-app").innerHTML = `<div class="sq-field"><label for="sq-d">Key length d = <output id="sq-d-out" for="sq-d">${data.sizes[0].d}</output></label>
<input type="range" id="sq-d" min="0" max="${data.sizes.length - 1}" step="1" value="0" aria-describedby="sq-d-hint">
<span class="sq-hint" id="sq-d-hint">${data.sizes.map(s => s.d).join(", ")} numbers in every query and key.</span></div>
<div class="sq-panels">${panel("raw", "Without ÷√d: softmax(q·k)")}${panel("scaled", "With ÷√d: softmax(q·k / √d)")}</div>
<p class="sq-hint">Averages over ${data.draws} seeded draws. Entropy is ${Math.round(data.max_entropy)} bits when the weights are even and 0 when one key takes everything. The gradient size is how much the weights move when the scores move (the norm of the softmax’s Jacobian); near one-hot it goes to 0, and learning through that softmax slows sharply.</p>
<div class="visually-hidden" id="sq-live" aria-live="polite"></div>`;
  const $ = id => document.getElementById("sq-" + id);
  const slider = $("d"), sizes = data.sizes;
  const pct = x => Math.round(100 * x) + "%";
  const fix = (x, n) => (Number(x).toFixed(n) * 1 || 0).toFixed(n);  // no "-0.0"

  function cell(tag, text, cls) {
    const c = document.createElement(tag);
    if (cls) c.className = cls;
    if (text !== undefined) c.textContent = text;
    return c;
  }
  function bars(side, s, scaled) {
    const w = scaled ? s.pct_scaled : s.pct, root = Math.sqrt(s.d);
    $("bars-" + side).tBodies[0].replaceChildren(...s.scores.map((score, i) => {
      const tr = cell("tr"), th = cell("th", "k" + (i + 1)), fill = cell("span"), track = cell("span", undefined, "sq-track");
      th.scope = "row";
      fill.style.width = w[i] + "%";
      track.append(fill);
      const bar = cell("td", undefined, "sq-bar-cell");
      bar.setAttribute("aria-hidden", "true");
      bar.append(track);
      tr.append(th, cell("td", fix(scaled ? score / root : score, 1)), bar, cell("td", w[i] + "%", "sq-pct"));
      return tr;
    }));
  }
  function numbers(side, s, scaled) {
    const k = scaled ? "_scaled" : "";
    const rows = [["Spread of the scores", fix(s["spread" + k], 1)], ["Average top weight", pct(s["top" + k])],
      ["Average entropy", fix(s["entropy" + k], 2) + " of " + data.max_entropy + " bits"],
      ["Average gradient size", fix(s["slope" + k], 2)]];
    $("nums-" + side).replaceChildren(...rows.flatMap(([t, v]) => [cell("dt", t), cell("dd", v)]));
  }
  function show(i, announce) {
    const s = sizes[i];
    slider.value = String(i);
    slider.setAttribute("aria-valuetext", "d = " + s.d);
    $("d-out").textContent = String(s.d);
    bars("raw", s, false); bars("scaled", s, true);
    numbers("raw", s, false); numbers("scaled", s, true);
    for (const tr of $("table").tBodies[0].rows) tr.classList.toggle("is-current", tr.dataset.d === String(s.d));
    if (announce) {
      $("live").textContent = "d = " + s.d + ": without ÷√d the top weight averages " + pct(s.top) +
        ", with ÷√d " + pct(s.top_scaled) + ".";
    }
  }
  slider.max = String(sizes.length - 1);
  slider.addEventListener("input", () => show(Number(slider.value), true));
  show(0, false);
  root.querySelector(".sq-nojs").hidden = true;
  root.querySelector(".sq-app").hidden = false;
  root.dataset.ready = "true";
})();
