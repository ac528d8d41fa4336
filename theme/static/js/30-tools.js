/* Two tools whose code a page adds on first use, so that a plain visit carries only these lines:
   the header's search box ([data-search]: "/" outside a text field focuses it; its first focus
   adds js/later/search.js and its styles) and a lab page's "Copy embed code" ([data-embed-code]:
   its first click adds js/later/embed-code.js, which copies). */
(() => {
  "use strict";
  const u = Labs.util, box = document.querySelector("[data-search]"), copy = document.querySelector("[data-embed-code]");
  if (box) {
    const input = box.firstChild;
    box.removeAttribute("data-off");
    input.addEventListener("focus", () => box.dataset.search.split(" ").map(src => u.load(src).catch(() => {})), { once: true });
    addEventListener("keydown", ev => {
      const t = ev.target;
      if (ev.key == "/" && !(ev.ctrlKey || ev.metaKey || ev.altKey || t.isContentEditable || t.matches("input,textarea,select"))) ev.preventDefault(), input.focus();
    });
  }
  if (copy) (copy.hidden = false), copy.addEventListener("click", () => u.load(copy.dataset.embedCode).then(() => Labs.code.copyEmbed(copy), () => {}));
})();
