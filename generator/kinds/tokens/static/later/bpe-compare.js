/* Byte-level BPE beside WordPiece in the tokens widget (#tk-bpe), loaded only when the learner
   presses "Compare with BPE": static/20-tokens.js adds this script, then calls
   Labs.tokensBPE(ref, textBox, runtimeCode). It loads the runtime's code if the page has none yet and the
   decoder's tokenizer alone (Labs.runtime.tokenizer: the manifest and the tokenizer's data, no
   weights), then lists the BPE tokens of what is in "Your text" as the learner types.
   A token is written as generator/models/bpe.py's visible() writes it: a space ␣, a newline ↵,
   and a byte that is not a whole UTF-8 character <0xF0>. */
(() => {
  "use strict";
  const Labs = window.Labs, u = Labs.util, { h } = u;
  const SHOWN = { " ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍" };
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  const hex = b => b.toString(16).padStart(2, "0");
  // Python's str.isprintable() is false for these categories (the space is handled before)
  const UNPRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

  function escaped(ch) {  // Python's unicode_escape of one character
    const c = ch.codePointAt(0);
    return c < 0x100 ? "\\x" + hex(c) : c < 0x10000 ? "\\u" + c.toString(16).padStart(4, "0") : "\\U" + c.toString(16).padStart(8, "0");
  }

  /** A token's bytes as text a reader can see: bpe.py's visible(), the same string for the same bytes. */
  function visible(bytes) {
    let out = "", at = 0;
    while (at < bytes.length) {
      let ch = null, size = 1;
      for (; size <= 4; size++) {  // the shortest valid UTF-8 character starting here
        try { ch = utf8.decode(bytes.subarray(at, at + size)); break; } catch (e) { ch = null; }
      }
      if (ch === null) { out += "<0x" + hex(bytes[at]).toUpperCase() + ">"; at += 1; continue; }
      out += SHOWN[ch] || (UNPRINTABLE.test(ch) ? escaped(ch) : ch);
      at += size;
    }
    return out;
  }

  function why(err) {  // the runtime's errors carry a code: blame the connection only when it is the cause
    if (err && err.code === "offline") return "This device is offline, so the BPE tokenizer could not be loaded. Try again once it is back online.";
    if (err && (err.code === "missing" || err.code === "corrupt")) return "The BPE tokenizer could not be loaded: " + err.message;
    return "The BPE tokenizer could not be loaded" + (err && err.message ? ": " + err.message : ".");
  }

  Labs.tokensBPE = (ref, text, code) => {  // code: the runtime's script, as WordPiece loads it
    const $ = id => document.getElementById(id);
    const box = $("tk-bpe"), status = $("tk-bpe-status"), list = $("tk-bpe-tokens"), counts = $("tk-bpe-counts");
    const button = $("tk-bpe-load");
    box.dataset.state = "loading";
    status.textContent = "Loading " + ref.model + "'s tokenizer (" + Math.round(ref.gzip / 1000) + " KB compressed)…";
    return (Labs.runtime && Labs.runtime.tokenizer ? Promise.resolve() : u.load(code)).then(() => Labs.runtime.tokenizer({ manifestSrc: ref.manifest })).then(bpe => {
      const draw = () => {
        const enc = bpe.encode(text.value, { special: false });
        const shown = enc.ids.map(id => visible(bpe.tokenBytes(id)));
        list.replaceChildren(...shown.map((p, i) => h("li", {
          class: "tk-piece" + (p.startsWith("␣") ? " tk-space" : "") + (p.includes("<0x") ? " tk-byte" : ""),
          "data-id": enc.ids[i]
        }, [h("span", { class: "tk-p" }, [p]), h("span", { class: "tk-id" }, [String(enc.ids[i])])])));
        const bytes = shown.filter(p => p.includes("<0x")).length;
        counts.textContent = enc.ids.length + " BPE tokens" + (bytes ? ", " + bytes + " of them holding bytes of a character split across tokens" : "")
          + (enc.dropped ? "; " + enc.dropped + " bytes this vocabulary has no token for were dropped" : "") + ".";
      };
      text.addEventListener("input", draw);
      draw();
      button.hidden = true;
      list.hidden = counts.hidden = false;
      box.dataset.state = "ready";
      status.textContent = "BPE loaded: " + bpe.size.toLocaleString("en") + " tokens. Both lists now follow what you type.";
      $("tk-bpe-hint").textContent = "BPE keeps case and accents, makes a leading space (␣) part of the token after it, and never "
        + "gives [UNK]: a character it has no token for is spelt in its UTF-8 bytes, so one emoji can take several tokens "
        + "(shown <0xF0>: a byte that is not a whole character).";
    }, err => {
      box.dataset.state = "failed";
      button.disabled = false;
      status.textContent = why(err);
    });
  };
  Labs.tokensBPE.visible = visible;
})();
