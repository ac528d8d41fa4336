/* labs serve: live reload and the build-error overlay. Never part of a built site. */
(function () {
  "use strict";
  var script = document.currentScript;
  var etag = (script && script.getAttribute("data-etag")) || "";
  var OVERLAY_ID = "labs-error-overlay";

  function el(tag, text, css) {
    var node = document.createElement(tag);
    if (text) node.textContent = text;
    for (var name in css || {}) node.style[name] = css[name];
    return node;
  }

  function where(error) {
    var at = error.path || "";
    if (error.line > 0) at += ":" + error.line + (error.column > 0 ? ":" + error.column : "");
    return at;
  }

  function draw(errors) {
    var old = document.getElementById(OVERLAY_ID);
    if (old) old.remove();
    if (!errors.length) return;
    var box = el("section", "", {
      position: "fixed", top: "0", left: "0", right: "0", maxHeight: "70vh", overflow: "auto",
      zIndex: "2147483647", boxSizing: "border-box", padding: "1rem 1.25rem",
      background: "#1d1f24", color: "#f3f3f3", borderBottom: "4px solid #e5484d",
      font: "14px/1.5 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
      boxShadow: "0 6px 24px rgba(0,0,0,.35)", textAlign: "left"
    });
    box.id = OVERLAY_ID;
    box.setAttribute("role", "alert");
    box.setAttribute("aria-label", "Build errors");
    var n = errors.reduce(function (sum, error) { return sum + (error.more || 1); }, 0);
    var head = el("h2", n + (n === 1 ? " error" : " errors") + " in the last build", {
      margin: "0 0 .25rem", font: "bold 16px/1.4 system-ui, sans-serif", color: "#ff8a8e"
    });
    var note = el("p", "The page shows the last good build. Fix the file and this goes away by itself.", {
      margin: "0 0 .75rem", font: "13px/1.4 system-ui, sans-serif", color: "#c9c9c9"
    });
    var hide = el("button", "Hide", {
      float: "right", font: "13px system-ui, sans-serif", padding: ".25rem .75rem", cursor: "pointer"
    });
    hide.type = "button";
    hide.addEventListener("click", function () { box.remove(); });
    box.appendChild(hide);
    box.appendChild(head);
    box.appendChild(note);
    var list = el("ol", "", { margin: "0", padding: "0", listStyle: "none" });
    errors.forEach(function (error) {
      var item = el("li", "", { margin: "0 0 .75rem" });
      item.className = "labs-error";
      var loc = el("div", where(error), { color: "#7cc7ff", fontWeight: "bold" });
      loc.className = "labs-error-where";
      item.appendChild(loc);
      var message = el("div", error.message, { whiteSpace: "pre-wrap" });
      message.className = "labs-error-message";
      item.appendChild(message);
      if (error.source_line) {
        // Keep tabs in the caret's indent so it lines up under the column however tabs render.
        var indent = error.source_line.slice(0, Math.max(0, error.column - 1)).replace(/[^\t]/g, " ");
        var caret = error.column > 0 ? "\n" + indent + "^" : "";
        var code = el("pre", error.source_line + caret, {
          margin: ".25rem 0 0", padding: ".4rem .6rem", background: "#2a2d34", overflow: "auto",
          whiteSpace: "pre", font: "inherit"
        });
        code.className = "labs-error-source";
        item.appendChild(code);
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    document.body.appendChild(box);
  }

  // Where the reader was, kept across a live reload: the last element with an id (a heading, a
  // section) whose top is in the upper third of the view, and how far down the view it sat. After
  // the reload it is put back there, and held there while the parts around it come in and grow,
  // until the reader moves. A page with no such element gets its scrollY back.
  var KEY = "labs-serve-place";
  function remember() {
    var mark = null, line = window.innerHeight / 3;
    var ids = document.querySelectorAll("main [id], h1[id], h2[id], h3[id], section[id]");
    for (var i = 0; i < ids.length; i++) {
      var box = ids[i].getBoundingClientRect();
      if (box.height > 0 && box.top <= line) mark = { id: ids[i].id, top: box.top };
    }
    try {
      sessionStorage.setItem(KEY, JSON.stringify({
        path: location.pathname, y: window.scrollY, id: mark && mark.id, top: mark ? mark.top : 0 }));
    } catch (e) { /* storage off: the browser's own restoring only */ }
    if ("scrollRestoration" in history) history.scrollRestoration = "manual";
  }
  function restore() {
    var saved = null;
    try {
      saved = JSON.parse(sessionStorage.getItem(KEY) || "null");
      sessionStorage.removeItem(KEY);
    } catch (e) { return; }
    if (!saved || saved.path !== location.pathname) return;
    var held = true, moves = ["keydown", "pointerdown", "wheel", "touchstart"];
    function place() {
      if (!held) return;
      var el = saved.id && document.getElementById(saved.id);
      if (!el && saved.id && window.Labs && Labs.later) { // in a part that comes in late: bring it in now
        var parts = document.querySelectorAll("noscript[data-later]");
        for (var i = 0; i < parts.length; i++) {
          if (parts[i].textContent.indexOf(' id="' + saved.id + '"') >= 0) Labs.later.show(parts[i].parentNode);
        }
        el = document.getElementById(saved.id);
      }
      if (!el) return window.scrollTo(0, saved.y);
      var off = el.getBoundingClientRect().top - saved.top;
      if (Math.abs(off) >= 1) window.scrollBy(0, off);
    }
    function release() {
      if (!held) return;
      held = false;
      moves.forEach(function (type) { removeEventListener(type, release, true); });
      if (watch) watch.disconnect();
      if ("scrollRestoration" in history) history.scrollRestoration = "auto";
    }
    moves.forEach(function (type) { addEventListener(type, release, true); });
    // Parts of the page come in late (and an element named by the id may be one of them): each
    // change of the page's size puts the place back.
    var watch = window.ResizeObserver && new ResizeObserver(place);
    if (watch) watch.observe(document.documentElement);
    place();
    // Held until the reader moves (key, pointer, wheel, touch), or for 15 s after the load at
    // most: a slow part (the spotlight fetching its files) may grow well after the load event.
    addEventListener("load", function () {
      place();
      setTimeout(release, 15000);
    });
  }
  restore();

  if (!window.EventSource) return;
  function listen() {
    var source = new EventSource("/__labs__/events?path=" + encodeURIComponent(location.pathname) +
                                 "&etag=" + encodeURIComponent(etag));
    source.onmessage = function (event) {
      var state;
      try { state = JSON.parse(event.data); } catch (e) { return; }
      if (state.reload) {
        source.close();
        remember();
        location.reload();
        return;
      }
      draw(state.errors || []);
    };
    source.onerror = function () {
      // Refused (the server keeps a limited number of pages listening): ask again in a while.
      // A dropped connection is retried by the browser itself.
      if (source.readyState === EventSource.CLOSED) setTimeout(listen, 3000);
    };
  }
  listen();
})();
