/* The ÷√d demo's loader (#sqrt-demo, kinds/attention/sqrt.html). The demo's code and numbers are
   one script beside the page ("sqrt": {"src", "css"} in #lab-data: static/later/sqrt-demo.js + the
   numbers of generator/kinds/attention/scaling.py), added when the demo comes near the screen or gets
   the focus, so a first visit does not pay for it. Without it the table has every number. */
(() => {
  "use strict";
  const root = document.getElementById("sqrt-demo");
  if (!root) return;
  const u = window.Labs.util;
  let asked = false;
  function load() {
    if (asked) return;
    asked = true;
    const files = u.readJSON("lab-data")?.sqrt;
    if (!files) return;
    u.load(files.css).catch(() => {}); // its styles, also beside the page: the first visit pays for neither
    u.load(files.src).catch(() => {
      root.querySelector(".sq-nojs").textContent = "The slider could not be loaded; the table below has every number.";
    });
  }
  root.addEventListener("focusin", load);
  if (!("IntersectionObserver" in window)) return load();
  const near = new IntersectionObserver(entries => {
    if (entries.some(e => e.isIntersecting)) { near.disconnect(); load(); }
  }, { rootMargin: "200px 0px" });
  near.observe(root);
})();
