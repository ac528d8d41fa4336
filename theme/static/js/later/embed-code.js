/* "Copy embed code" on a lab page (partials/embed_code.html), added by its first click
   (js/30-tools.js): Labs.code.copyEmbed(button) puts an <iframe> of the lab's embed page on the
   clipboard — the published address when the site has a base_url (the page's canonical link),
   else this copy's; sandboxed — and says so; where the clipboard is refused, the code is shown
   in a box, selected, to copy by hand. */
(() => {
  "use strict";
  const u = Labs.util, h = u.h, esc = s => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
  // What the frame may do, and no more (docs/embedding.md): run its scripts as its own origin
  // (its files, its progress in localStorage) and open "Open the full lab" in a new tab that is
  // not sandboxed; never navigate the host's page, submit forms or open dialogs.
  const SANDBOX = "allow-scripts allow-same-origin allow-popups allow-popups-to-escape-sandbox";
  Labs.code.copyEmbed = button => {
    let said = button.nextElementSibling;
    if (!said?.matches("[role=status]")) button.after(" ", said = h("span", { role: "status" }));
    const page = document.querySelector("link[rel=canonical]")?.href || location.href;
    const src = new URL("embed.html", page).href, title = document.title.split(" | ")[0];
    const code = `<iframe src="${esc(src)}" title="${esc(title)}" width="100%" height="640" loading="lazy" sandbox="${SANDBOX}"></iframe>`;
    const copied = navigator.clipboard ? navigator.clipboard.writeText(code) : Promise.reject();
    return copied.then(() => { said.textContent = "Copied. Paste it into your page."; }, () => {
      let box = said.nextElementSibling;
      if (!box?.matches("textarea")) said.after(box = h("textarea", { readonly: "", rows: 3, "aria-label": "Embed code", class: "embed-code-text" }));
      box.value = code;
      box.select();
      said.textContent = "Select the code below and copy it.";
    });
  };
})();
