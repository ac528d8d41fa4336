/* The dot-product widget (#dot in widget.html). The learner moves one number of a; the page
   recomputes a · b, |a|, |b| and the cosine. The vectors, the build's numbers and the slider's
   range come from the page's #lab-data (DotKind.compute). Classic script, no inline code: the
   page runs under a strict CSP and from file://. Labs.util is the theme's (10-util.js). */
(() => {
  "use strict";
  const root = document.getElementById("dot");
  const data = root && window.Labs && Labs.util.readJSON("lab-data");
  if (!data) return;
  const { h, fmt } = Labs.util;
  const $ = id => document.getElementById(id);
  const which = $("dot-which"), range = $("dot-range"), value = $("dot-value"), readout = $("dot-readout");

  const state = { a: data.a.slice(), moving: 0 };  // the one thing that changes; render() draws it

  const dot = (u, v) => u.reduce((s, x, i) => s + x * v[i], 0);
  const norm = v => Math.sqrt(dot(v, v));

  const rows = data.b.map((x, i) => h("tr", {}, [h("th", { scope: "row" }, [String(i + 1)]), h("td"), h("td"), h("td")]));
  $("dot-rows").append(...rows);
  which.append(...data.a.map((x, i) => h("option", { value: i }, [`Number ${i + 1}`])));
  for (const el of [range, value]) { el.min = data.range.min; el.max = data.range.max; }
  range.step = data.range.step;

  function render() {
    const a = state.a, b = data.b, d = dot(a, b), na = norm(a), nb = norm(b);
    rows.forEach((tr, i) => {
      tr.classList.toggle("is-moving", i === state.moving);
      tr.cells[1].textContent = fmt(a[i], 2);
      tr.cells[2].textContent = fmt(b[i], 2);
      tr.cells[3].textContent = fmt(a[i] * b[i], 2);
    });
    which.value = String(state.moving);
    range.value = a[state.moving];
    if (document.activeElement !== value) value.value = a[state.moving];
    const cosine = na > 0 ? `cosine = ${fmt(d / (na * nb), 3)}` : "no cosine: a is all zeros";
    const moved = a.some((x, i) => x !== data.a[i]) ? ` (it started at ${fmt(data.dot, 2)} and ${fmt(data.cosine, 3)})` : "";
    readout.textContent = `a · b = ${fmt(d, 2)}, |a| = ${fmt(na, 2)}, |b| = ${fmt(nb, 2)}, ${cosine}${moved}`;
  }

  function move(x) {
    if (!Number.isFinite(x)) return;  // a half-typed number such as "-"
    state.a[state.moving] = x;
    render();
  }

  which.addEventListener("change", () => { state.moving = Number(which.value); render(); });
  range.addEventListener("input", () => move(range.valueAsNumber));
  value.addEventListener("input", () => move(value.valueAsNumber));  // render() leaves the box being typed in alone
  $("dot-reset").addEventListener("click", () => { state.a = data.a.slice(); render(); });

  render();
  root.querySelector(".dot-nojs").hidden = true;
  root.querySelector(".dot-app").hidden = false;
})();
