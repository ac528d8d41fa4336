/* Progress: which labs are done, kept in localStorage under site-data's "storage" key as
   {"done": [slug, ...]}. Updates every "N / M labs done", every done mark, the toggle. */
(() => {
  "use strict";
  const u = window.Labs.util, site = u.readJSON("site-data");
  if (!site?.storage) return;
  const key = site.storage, known = site.labs || [];

  function done() {
    const list = u.store.get(key)?.done;
    return Array.isArray(list) ? list.filter(slug => known.includes(slug)) : [];
  }

  function render() {
    const list = done();
    for (const el of u.all("[data-progress-done]")) el.textContent = list.length;
    for (const el of u.all("[data-progress-total]")) el.textContent = known.length;
    for (const mark of u.all("[data-lab] [data-done-mark]")) mark.hidden = !list.includes(mark.closest("[data-lab]").dataset.lab);
    for (const btn of u.all("[data-progress-toggle]")) {
      btn.hidden = false;
      btn.setAttribute("aria-pressed", list.includes(btn.dataset.lab));
    }
  }

  function toggle(slug) {
    const list = done(), at = list.indexOf(slug);
    if (at >= 0) list.splice(at, 1); else list.push(slug);
    u.store.set(key, { done: list });
    render();
  }

  document.addEventListener("click", ev => {
    const btn = ev.target.closest("[data-progress-toggle]");
    if (btn) toggle(btn.dataset.lab);
  });
  addEventListener("storage", ev => { if (ev.key === key) render(); });
  render();
})();
