/* A lab's embed page (labs/<slug>/embed.html; docs/embedding.md), run before its body is drawn:
   - ?scheme=dark or ?scheme=light takes the page that frames it at its word, whatever the
     reader's system prefers (css/10-base.css: :root[data-scheme]);
   - it tells that page its height whenever it changes, by postMessage, so the <iframe> can fit it:
     {type: "attention-labs:height", lab: "<slug>", height: <CSS pixels, a whole number>};
   - "Open the full lab" opens the lab page at the state the widget shows (its URL hash). */
(() => {
  "use strict";
  const root = document.documentElement, scheme = new URLSearchParams(location.search).get("scheme");
  if (scheme === "dark" || scheme === "light") root.dataset.scheme = scheme;
  addEventListener("DOMContentLoaded", () => {
    const lab = document.querySelector("[data-lab]")?.dataset.lab, open = document.querySelector("[data-embed-open]");
    let told = -1;
    new ResizeObserver(() => {
      const height = Math.ceil(document.body.getBoundingClientRect().height);
      if (height !== told && parent !== window) parent.postMessage({ type: "attention-labs:height", lab, height }, "*");
      told = height;
    }).observe(document.body);
    open?.addEventListener("click", () => {
      open.href = new URL(location.protocol === "file:" ? "index.html" : "./", location.href).href + location.hash;
    });
  });
})();
