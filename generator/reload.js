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

  if (!window.EventSource) return;
  function listen() {
    var source = new EventSource("/__labs__/events?path=" + encodeURIComponent(location.pathname) +
                                 "&etag=" + encodeURIComponent(etag));
    source.onmessage = function (event) {
      var state;
      try { state = JSON.parse(event.data); } catch (e) { return; }
      if (state.reload) {
        source.close();
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
