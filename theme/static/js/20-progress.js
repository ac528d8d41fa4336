/* Progress: which labs are done, kept in localStorage under site-data's "storage" key as
   {"done": [slug, ...]}. Updates every "N / M labs done", every done mark, the toggle. */
(function () {
  "use strict";
  var Labs = (window.Labs = window.Labs || {});
  var u = Labs.util;
  var site = u.readJSON("site-data");
  if (!site || !site.storage) return;
  var key = site.storage;
  var known = site.labs || [];

  function done() {
    var saved = u.store.get(key);
    var list = saved && Array.isArray(saved.done) ? saved.done : [];
    return list.filter(function (slug) { return known.indexOf(slug) >= 0; });
  }

  function render() {
    var list = done();
    Array.prototype.forEach.call(document.querySelectorAll("[data-progress-done]"), function (el) {
      el.textContent = String(list.length);
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-progress-total]"), function (el) {
      if (!el.textContent.trim()) el.textContent = String(known.length);
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-lab] [data-done-mark]"), function (mark) {
      var slug = mark.closest("[data-lab]").getAttribute("data-lab");
      mark.hidden = list.indexOf(slug) < 0;
    });
    Array.prototype.forEach.call(document.querySelectorAll("[data-progress-toggle]"), function (btn) {
      btn.hidden = false;
      btn.setAttribute("aria-pressed", String(list.indexOf(btn.getAttribute("data-lab")) >= 0));
    });
  }

  function toggle(slug) {
    var list = done();
    var at = list.indexOf(slug);
    if (at >= 0) list.splice(at, 1); else list.push(slug);
    u.store.set(key, { done: list });
    render();
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest && ev.target.closest("[data-progress-toggle]");
    if (btn) toggle(btn.getAttribute("data-lab"));
  });
  window.addEventListener("storage", function (ev) { if (ev.key === key) render(); });
  render();
  Labs.progress = { done: done, toggle: toggle, render: render };
})();
