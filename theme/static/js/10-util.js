/* Shared helpers for every widget: DOM building, safe storage, rounding, roving focus, and the
   one loader of scripts and stylesheets added on demand. Classic script (no modules: pages must
   also work from file://). It makes window.Labs and its parts: Labs.util (this), Labs.code (the
   functions a script shares with others), Labs.data (the numbers scripts beside a page bring),
   Labs.test (what the tests read); docs/spotlight-data.md lists every name. */
(() => {
  "use strict";
  const Labs = (window.Labs = window.Labs || {});
  for (const part of ["code", "data", "test"]) Labs[part] ||= {};
  const all = (sel, root = document) => [...root.querySelectorAll(sel)];

  /** h("td", {class: "x", "data-i": 2}, ["text", node]) → element. Null and false attributes and children are skipped. */
  function h(tag, attrs, kids, ns) {
    const el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const k in attrs) if (attrs[k] != null && attrs[k] !== false) el.setAttribute(k, attrs[k]);
    if (kids) el.append(...kids.filter(c => c != null));
    return el;
  }

  /** JSON from a <script type="application/json" id=...>, or null. */
  function readJSON(id) {
    try { return JSON.parse(document.getElementById(id).textContent); } catch { return null; }
  }

  /** localStorage that never throws (private mode, file:// quirks, quota). */
  const store = {
    get(key) { try { return JSON.parse(localStorage.getItem(key)); } catch { return null; } },
    set(key, value) { try { localStorage.setItem(key, JSON.stringify(value)); } catch { /* not kept */ } }
  };

  const sum = a => a.reduce((s, x) => s + x, 0);

  /** Integer shares of `total` proportional to `values`, largest remainder: they add up exactly. */
  function roundShares(values, total) {
    const whole = sum(values);
    if (!(whole > 0)) return values.map(() => 0);
    const raw = values.map(v => v / whole * total), out = raw.map(Math.floor);
    const order = raw.map((r, j) => j).sort((a, b) => raw[b] - out[b] - (raw[a] - out[a]) || a - b);
    for (let i = 0, left = total - sum(out); i < left; i++) out[order[i]]++;
    return out;
  }

  const minus = s => s.replace(/^-/, "\u2212");
  /** A number with a real minus sign: fmt(-0.5, 2) → "−0.50" (never "−0.00"). */
  const fmt = (x, digits) => x == null ? "–" : minus(Number(x).toFixed(digits).replace(/^-(?=0\.?0*$)/, ""));
  /** Shortest form, as the data has it: short(2) → "2", short(-0.5) → "−0.5". */
  const short = (x, digits) => minus(String(+Number(x).toFixed(digits)));

  /** Make `active` the one Tab stop among `items`. */
  function setTabStop(items, active) {
    for (const it of items) it.tabIndex = it === active ? 0 : -1;
  }

  /**
   * Roving focus over the items of a box: one Tab stop; Left/Right/Home/End move, and Up/Down
   * by `cols()` in a grid. `onMove(item)` (optional) acts first, then the item takes the focus.
   */
  function roving(box, selector, onMove, cols) {
    box.addEventListener("keydown", ev => {
      const items = all(selector, box).filter(el => !el.hidden && !el.disabled);
      const at = items.indexOf(document.activeElement), step = cols ? cols() : 0;
      const to = { ArrowLeft: at - 1, ArrowRight: at + 1, ArrowUp: step ? at - step : -1, ArrowDown: step ? at + step : -1,
        Home: 0, End: items.length - 1 }[ev.key];
      if (at < 0 || to === undefined) return;
      ev.preventDefault();
      const item = items[to];
      if (!item) return;
      if (onMove) onMove(item);
      setTabStop(items, item);
      item.focus();
    });
  }

  const reducedMotion = matchMedia("(prefers-reduced-motion: reduce)");

  // From file:// a link to "labs/x/" opens a folder listing, not the page: point such links at
  // the folder's index.html. Served over http(s) the clean URLs stay as they are.
  function fileLinks(root) {
    if (location.protocol !== "file:") return;
    for (const a of all("a[href]", root)) {
      const m = /^([^#?:]*\/|\.\.?)([?#].*)?$/.exec(a.getAttribute("href"));
      if (m) a.setAttribute("href", m[1].replace(/\.$/, "./") + "index.html" + (m[2] || ""));
    }
  }
  fileLinks();

  // A box that scrolls sideways (code on a phone) must be reachable by keyboard to be scrolled:
  // it becomes a named, focusable region once it overflows (and stays one).
  function focusableScrollers(root) {
    for (const box of all(".codehilite, .prose table", root)) {
      if (box.scrollWidth > box.clientWidth + 1 && !box.hasAttribute("tabindex")) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", (box.tagName === "TABLE" ? "Table" : "Code") + " (scrolls sideways)");
      }
    }
  }
  focusableScrollers();
  let scrollerTimer = 0;
  addEventListener("resize", () => { clearTimeout(scrollerTimer); scrollerTimer = setTimeout(() => focusableScrollers(), 200); });

  /* ---------- files added on demand ---------- */

  const loads = new Map(); // absolute URL → its Promise, while it loads and once it has

  /**
   * Add the classic script at `src` (a stylesheet if the URL ends in .css), resolved against the
   * page, once: a Promise that resolves when it has run and rejects if it could not be fetched.
   * Every ask for the same URL gets the same Promise; after a failure the tag goes and the next
   * ask tries again. A <script src> loads from file:// too, where fetch() is refused.
   */
  function load(src) {
    const url = new URL(src, document.baseURI).href;
    if (!loads.has(url)) loads.set(url, new Promise((resolve, reject) => {
      const tag = /\.css$/.test(url) ? h("link", { rel: "stylesheet", href: url }) : h("script", { src: url });
      tag.onload = resolve;
      tag.onerror = () => {
        tag.remove();
        loads.delete(url);
        reject();
      };
      document.head.append(tag);
    }));
    return loads.get(url);
  }

  Labs.util = { h, all, readJSON, store, sum, roundShares, fmt, short, roving, setTabStop, reducedMotion,
    fileLinks, focusableScrollers, load, SVG: "http://www.w3.org/2000/svg" };
})();
