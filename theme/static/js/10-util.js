/* Shared helpers for every widget: DOM building, safe storage, rounding, roving focus.
   Classic script (no modules: pages must also work from file://); shares window.Labs. */
(function () {
  "use strict";
  var Labs = (window.Labs = window.Labs || {});

  /** h("td", {class: "x", "data-i": 2}, ["text", node]) → element. Text children are text nodes. */
  function h(tag, attrs, children, ns) {
    var el = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) continue;
        if (k === "text") el.textContent = attrs[k];
        else el.setAttribute(k, attrs[k] === true ? "" : attrs[k]);
      }
    }
    if (children) {
      for (var i = 0; i < children.length; i++) {
        var c = children[i];
        if (c === null || c === undefined) continue;
        el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
      }
    }
    return el;
  }

  /** JSON from a <script type="application/json" id=...>, or null. */
  function readJSON(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }

  /** localStorage that never throws (private mode, file:// quirks, quota). */
  var store = {
    get: function (key) {
      try { var s = window.localStorage.getItem(key); return s ? JSON.parse(s) : null; } catch (e) { return null; }
    },
    set: function (key, value) {
      try { window.localStorage.setItem(key, JSON.stringify(value)); return true; } catch (e) { return false; }
    },
    remove: function (key) {
      try { window.localStorage.removeItem(key); } catch (e) { /* ignore */ }
    }
  };

  /** Integer shares of `total` proportional to `values`, largest remainder: they add up exactly. */
  function roundShares(values, total) {
    var sum = 0, i;
    for (i = 0; i < values.length; i++) sum += values[i];
    if (!(sum > 0)) return values.map(function () { return 0; });
    var raw = values.map(function (v) { return (v / sum) * total; });
    var out = raw.map(Math.floor);
    var left = total - out.reduce(function (a, b) { return a + b; }, 0);
    var order = raw.map(function (r, j) { return j; })
      .sort(function (a, b) { return (raw[b] - out[b]) - (raw[a] - out[a]) || a - b; });
    for (i = 0; i < left; i++) out[order[i]] += 1;
    return out;
  }

  /** A number with a real minus sign: fmt(-0.5, 2) → "−0.50". */
  function fmt(x, digits) {
    if (x === null || x === undefined) return "–";
    var s = Number(x).toFixed(digits);
    if (/^-0\.?0*$/.test(s)) s = s.slice(1);
    return s.charAt(0) === "-" ? "\u2212" + s.slice(1) : s;
  }

  /** Shortest form, as the data has it: short(2) → "2", short(-0.5) → "−0.5". */
  function short(x, digits) {
    var s = String(Number(Number(x).toFixed(digits)));
    return s.charAt(0) === "-" ? "\u2212" + s.slice(1) : s;
  }

  /**
   * Roving focus over the items of a container: one Tab stop, arrows/Home/End move.
   * `onMove(index, item, event)` is called; it decides what moving means. `axis` is
   * "x" (Left/Right) or "grid" (also Up/Down by `cols()`).
   */
  function roving(container, selector, onMove, axis, cols) {
    container.addEventListener("keydown", function (ev) {
      var items = Array.prototype.slice.call(container.querySelectorAll(selector))
        .filter(function (el) { return !el.hidden && !el.disabled; });
      var at = items.indexOf(document.activeElement);
      if (at < 0) return;
      var to = -1, step = axis === "grid" && cols ? cols() : 0;
      switch (ev.key) {
        case "ArrowLeft": to = at - 1; break;
        case "ArrowRight": to = at + 1; break;
        case "ArrowUp": if (step) to = at - step; break;
        case "ArrowDown": if (step) to = at + step; break;
        case "Home": to = 0; break;
        case "End": to = items.length - 1; break;
        default: return;
      }
      ev.preventDefault();
      if (to < 0 || to >= items.length) return;
      onMove(to, items[to], ev);
    });
  }
  /** Make `active` the one Tab stop among `items`. */
  function setTabStop(items, active) {
    for (var i = 0; i < items.length; i++) items[i].tabIndex = items[i] === active ? 0 : -1;
  }

  var reducedMotion = window.matchMedia ? window.matchMedia("(prefers-reduced-motion: reduce)") : { matches: false };

  // Print: open the FAQ and any other <details> so the handout has everything; restore after.
  var reopened = [];
  window.addEventListener("beforeprint", function () {
    reopened = Array.prototype.filter.call(document.querySelectorAll("details:not([open])"), function (d) {
      return !d.hidden;
    });
    reopened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    reopened.forEach(function (d) { d.open = false; });
    reopened = [];
  });

  // From file:// a link to "labs/x/" opens a folder listing, not the page: point such links at
  // the folder's index.html. Served over http(s) the clean URLs stay as they are.
  if (location.protocol === "file:") {
    Array.prototype.forEach.call(document.querySelectorAll("a[href]"), function (a) {
      var href = a.getAttribute("href");
      var m = /^([^#?:]*\/|\.\/?|\.\.\/?|)([?#].*)?$/.exec(href);
      if (m && !/^[a-z]+:/i.test(href) && href.charAt(0) !== "#") {
        var path = m[1] || "";
        if (path === "." || path === "..") path += "/";
        if (path) a.setAttribute("href", path + "index.html" + (m[2] || ""));
      }
    });
  }

  // A box that scrolls sideways (code on a phone) must be reachable by keyboard to be scrolled.
  function focusableScrollers() {
    Array.prototype.forEach.call(document.querySelectorAll(".codehilite, .prose table"), function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.tabIndex = 0;
        box.setAttribute("role", "region");
        box.setAttribute("aria-label", box.tagName === "TABLE" ? "Table (scrolls sideways)" : "Code (scrolls sideways)");
      } else if (!scrolls && box.getAttribute("tabindex") === "0") {
        box.removeAttribute("tabindex");
        box.removeAttribute("role");
        box.removeAttribute("aria-label");
      }
    });
  }
  focusableScrollers();
  var scrollerTimer = 0;
  window.addEventListener("resize", function () {
    clearTimeout(scrollerTimer);
    scrollerTimer = setTimeout(focusableScrollers, 200);
  });

  Labs.util = { h: h, readJSON: readJSON, store: store, roundShares: roundShares, fmt: fmt, short: short,
    roving: roving, setTabStop: setTabStop, reducedMotion: reducedMotion, SVG: "http://www.w3.org/2000/svg" };
})();
