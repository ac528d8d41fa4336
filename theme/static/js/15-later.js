/* Parts of a page kept out of the DOM until they are needed: <noscript data-later> (the `later`
   filter of the templates). Without JavaScript a <noscript> is ordinary HTML, so the page reads
   as it is; with it, the browser holds the part as text (no elements, no style, no layout) and
   this script makes it elements when it comes within a screen of the view, when a link or the
   address names an id inside it, when Tab or Shift+Tab would pass over it (its first or last
   stop then takes the focus), on Ctrl/⌘+F, Ctrl/⌘+G or F3 (find in page), and before printing.
   Labs.later.when(id, fn) runs fn(element) once #id is in the page (at once if it is);
   Labs.later.show(element) makes the parts inside it elements, Labs.later.all() every part. */
(() => {
  "use strict";
  const Labs = window.Labs, u = Labs.util, root = document.documentElement;
  const waiting = u.all("noscript[data-later]"), wanted = [];
  const before = (a, b) => !!(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);

  /** Runs `change` (which makes `box` grow or shrink) so that what is on screen stays where it is:
      a box that starts above the view grows upwards. The browser's own scroll anchoring would
      not do it: it holds still what is at the top of the view, and that may be the placeholder,
      or the section around the box, whose top does not move as the box grows. */
  function keep(box, change) {
    const above = box.getBoundingClientRect().top < 0, height = root.scrollHeight;
    root.style.overflowAnchor = "none";
    try {
      change();
      if (above) scrollBy(0, root.scrollHeight - height);
    } finally {
      root.style.overflowAnchor = "";
    }
  }

  function show(part) {
    const at = waiting.indexOf(part);
    if (at < 0) return;
    waiting.splice(at, 1);
    load(part);
    const box = part.parentNode, t = document.createElement("template");
    t.innerHTML = part.textContent;
    keep(box, () => {
      part.replaceWith(t.content);
      box.classList.remove("is-later");
      u.fileLinks(box);
      found();
    });
    if (near && !waiting.some(p => p.parentNode === box)) near.unobserve(box);
    requestAnimationFrame(() => u.focusableScrollers(box));
  }
  /** The part's own script (data-script: the quiz's code), added once; settles when it has run
      or failed (the part comes in either way). */
  const load = part => part.dataset.script && u.load(part.dataset.script).catch(() => {});
  const showIn = el => waiting.filter(p => el.contains(p)).forEach(show);
  const showAll = () => waiting.slice().forEach(show);

  function found() {
    for (const w of wanted.slice()) {
      const el = document.getElementById(w[0]);
      if (el) wanted.splice(wanted.indexOf(w), 1), w[1](el);
    }
  }
  function when(id, fn) {
    wanted.push([id, fn]);
    // A part's script that runs once its part is in (it was shown before the script came: by
    // print, find in page, Tab, a link) changes the part's height as the view stands: kept.
    const el = document.getElementById(id);
    if (el) keep(el, found);
  }

  let moves = 0; // the learner's own: keys, pointer, wheel
  for (const type of ["keydown", "pointerdown", "wheel"]) addEventListener(type, () => moves++, { capture: true, passive: true });
  /** Show the part holding the id that `hash` ("#faq-x") names; whether there was one. Its script
      (the quiz's) may move what is above the target when it runs: unless the learner has moved
      meanwhile, the browser is then sent to the target again. */
  function reveal(hash) {
    let id = "";
    try { id = decodeURIComponent(hash.slice(1)); } catch { /* not an id */ }
    const part = id && waiting.find(p => p.textContent.includes(` id="${id}"`)), at = moves;
    if (!part) return false;
    show(part);
    // Sent there again once the page has loaded and settled (the parts around it come in, and
    // the browser's anchoring moves the view as they do), unless the learner has moved.
    const pin = () => moves === at && location.hash === hash && document.getElementById(id)?.scrollIntoView();
    if (document.readyState !== "complete") addEventListener("load", () => requestAnimationFrame(() => requestAnimationFrame(pin)), { once: true });
    load(part)?.then(pin); // its script (the quiz's) may move what is above the target as it runs
    return true;
  }

  // Until it is drawn a part holds about the height it will take (.is-later::after, a box that is
  // no ancestor of what the browser keeps in place when a part above comes in), so that the parts
  // further down stay out of reach: its text (less what closed <details> hide) in lines of the
  // column's width, and its lines of HTML (blocks, code), without asking for a layout (fitted on
  // lab 07 and the sampling lab at 335–696 px: within a quarter, code blocks aside).
  function reserve(part) {
    const box = part.parentNode, html = part.textContent.replace(/<\/summary>[^]*?<\/details>/g, "");
    if (box.tagName === "DETAILS") return; // closed: nothing to hold
    const text = html.replace(/<[^>]*>/g, "").length, width = Math.min(innerWidth, 736) - 40;
    box.style.setProperty("--later", Math.round(text * 232 / width + html.split("\n").length * 7 + 190) + "px");
    box.classList.add("is-later");
  }

  // Near the view, a part with a script comes in once that has run: all at once, and in place.
  const near = "IntersectionObserver" in window && new IntersectionObserver(entries => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      for (const part of waiting.filter(p => e.target.contains(p))) Promise.resolve(load(part)).then(() => show(part));
    }
  }, { rootMargin: "100% 0px" });
  if (!near) showAll();
  else for (const part of waiting) reserve(part), near.observe(part.parentNode);
  reveal(location.hash);

  // A link into a part: shown before the browser looks for its target. The address changed by
  // hand or by Back: shown, then the browser is sent to it again.
  document.addEventListener("click", ev => {
    const a = ev.target.closest && ev.target.closest("a[href*='#']");
    if (a && a.href.split("#")[0] === location.href.split("#")[0]) reveal(a.hash);
  }, true);
  addEventListener("hashchange", () => { if (reveal(location.hash)) location.replace(location.hash); });

  let tabbing = 0;
  addEventListener("keydown", ev => {
    if (ev.key === "Tab") {
      tabbing = ev.shiftKey ? -1 : 1;
      setTimeout(() => { tabbing = 0; });
    } else if ((ev.ctrlKey || ev.metaKey) && /^[fg]$/i.test(ev.key) || ev.key === "F3") showAll();
  }, true);
  // Tab moved the focus past parts that are not elements yet: they become elements, and the
  // first of their stops (the last, going back) takes the focus, as if they had been there.
  addEventListener("focusin", ev => {
    const from = ev.relatedTarget, to = ev.target;
    if (!tabbing || !(from instanceof Node)) return;
    const [a, b] = tabbing > 0 ? [from, to] : [to, from];
    const passed = waiting.filter(p => before(a, p) && before(p, b)).map(p => p.parentNode);
    if (!passed.length) return;
    passed.forEach(showIn);
    const stops = passed.flatMap(box => u.all("a[href], button, input, select, textarea, summary, [tabindex]", box))
      .filter(el => el.tabIndex >= 0 && !el.disabled && el.getClientRects().length);
    const stop = tabbing > 0 ? stops[0] : stops[stops.length - 1];
    if (stop) stop.focus();
  });

  // Print: every part, and every closed <details> (FAQ, answers) opened; closed again after.
  let reopened = [];
  addEventListener("beforeprint", () => {
    showAll();
    reopened = u.all("details:not([open])").filter(d => !d.hidden);
    for (const d of reopened) d.open = true;
  });
  addEventListener("afterprint", () => { for (const d of reopened) d.open = false; });

  Labs.later = { when, show: showIn, all: showAll };
})();
