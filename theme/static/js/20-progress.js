/* Progress: which labs are done, kept in localStorage under site-data's "storage" key as
   {"done": [slug, ...]}. Updates every "N / M labs done", every done mark, the toggle.
   A page knows only the number of labs (site-data "total"), never the other labs' slugs, so it
   weighs the same at 1 lab or 1,000; the index, which shows every lab, forgets marks of labs
   that no longer exist.
   Save / load: every key of this site's namespace (done marks, each quiz's answers) as one JSON
   file {"format": "attention-labs/progress", "version": 1, "items": {key: value}}; a file that is
   not one is refused with the reason, and nothing changes. */
(() => {
  "use strict";
  const u = window.Labs.util, site = u.readJSON("site-data");
  if (!site?.storage) return;
  const key = site.storage, total = Number(site.total) || 0;
  const namespace = key.split(":")[0] + ":";
  const FORMAT = "attention-labs/progress", MAX_BYTES = 1 << 20;

  function done() {
    const list = u.store.get(key)?.done;
    return Array.isArray(list) ? [...new Set(list.filter(slug => typeof slug === "string"))] : [];
  }

  if (document.body.classList.contains("page-index")) { // every lab has a card here
    const known = new Set(u.all("[data-lab]").map(el => el.dataset.lab)), list = done();
    if (list.some(slug => !known.has(slug))) u.store.set(key, { done: list.filter(slug => known.has(slug)) });
  }

  function render() {
    const list = done();
    for (const el of u.all("[data-progress-done]")) el.textContent = Math.min(list.length, total);
    for (const el of u.all("[data-progress-total]")) el.textContent = total;
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

  /* ---------- save and load ---------- */
  function ours() {
    const items = {};
    try {
      for (let i = 0; i < localStorage.length; i++) {
        const k = localStorage.key(i);
        if (k.startsWith(namespace)) items[k] = u.store.get(k);
      }
    } catch { /* storage unavailable: an empty file */ }
    return items;
  }
  const strings = a => Array.isArray(a) && a.every(x => typeof x === "string");
  const answerMap = m => m == null || (typeof m === "object" && !Array.isArray(m) && Object.values(m).every(strings));

  /** The reason `data` is not a progress file of this site, or "". */
  function problem(data) {
    if (!data || typeof data !== "object" || Array.isArray(data)) return "it is not a JSON object";
    if (data.format !== FORMAT) return `it is not a progress file (its "format" is not "${FORMAT}")`;
    if (data.version !== 1) return `it is version ${JSON.stringify(data.version)}; this site reads version 1`;
    if (!data.items || typeof data.items !== "object" || Array.isArray(data.items)) return `it has no "items" object`;
    for (const [k, v] of Object.entries(data.items)) {
      if (!k.startsWith(namespace)) return `the entry "${k.slice(0, 60)}" does not belong to this site`;
      if (k === key ? !(v && strings(v.done)) : !(v && typeof v === "object" && answerMap(v.answers) && answerMap(v.first)))
        return `the entry "${k.slice(0, 60)}" is not in the expected shape`;
    }
    return "";
  }

  for (const tools of u.all("[data-progress-tools]")) {
    const message = tools.querySelector("[data-progress-message]"), file = tools.querySelector("[data-progress-file]");
    const say = (text, bad) => { message.textContent = text; message.classList.toggle("is-error", !!bad); };
    tools.removeAttribute("data-off");
    tools.querySelector("[data-progress-export]").addEventListener("click", () => {
      const items = ours(), blob = new Blob([JSON.stringify({ format: FORMAT, version: 1, items }, null, 1)], { type: "application/json" });
      const a = u.h("a", { href: URL.createObjectURL(blob), download: "attention-labs-progress.json" });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      const n = Object.keys(items).length;
      say(`Saved ${n} record${n === 1 ? "" : "s"} (done marks and quiz answers) to attention-labs-progress.json.`);
    });
    tools.querySelector("[data-progress-load]").addEventListener("click", () => file.click());
    file.addEventListener("change", async () => {
      const chosen = file.files[0];
      file.value = "";
      if (!chosen) return;
      if (chosen.size > MAX_BYTES) return say(`Not loaded: ${chosen.name} is larger than 1 MB, so it is not a progress file. Nothing changed.`, true);
      let data;
      try { data = JSON.parse(await chosen.text()); } catch { return say(`Not loaded: ${chosen.name} is not valid JSON. Nothing changed.`, true); }
      const why = problem(data);
      if (why) return say(`Not loaded: ${chosen.name} — ${why}. Nothing changed.`, true);
      const before = {};
      try {
        for (const [k, v] of Object.entries(data.items)) {
          before[k] = localStorage.getItem(k);
          localStorage.setItem(k, JSON.stringify(v));
        }
      } catch {
        try { // put back what was written before the failure
          for (const [k, v] of Object.entries(before)) v === null ? localStorage.removeItem(k) : localStorage.setItem(k, v);
        } catch { /* storage gone */ }
        return say("Not loaded: this browser does not let the page store it all. Nothing changed.", true);
      }
      const n = Object.keys(data.items).length;
      say(`Loaded ${n} record${n === 1 ? "" : "s"}. Showing them…`);
      setTimeout(() => location.reload(), 400); // every widget and quiz reads its state afresh
    });
  }

  document.addEventListener("click", ev => {
    const btn = ev.target.closest("[data-progress-toggle]");
    if (btn) toggle(btn.dataset.lab);
  });
  addEventListener("storage", ev => { if (ev.key === key) render(); });
  render();
})();
