/* The tokens widget (#tokens). The build drew the starting text's pieces, the step by step and
   compare (widget.html, from wordpiece.py). When the learner first focuses or types in "Your text"
   or "Word", this script adds the runtime's code (Labs.runtime.WordPiece, static/wordpiece.js of
   generator/runtime) and the model's vocabulary script, both classic scripts from
   assets/runtime/<bundle id>/, then draws the same markup for what the learner typed.
   State in the URL hash: #text=<your text>&word=<word>, each only where it differs from the built one. */
(() => {
  "use strict";
  const root = document.getElementById("tokens");
  if (!root) return;
  const Labs = window.Labs, u = Labs.util, { h } = u;
  const data = u.readJSON("lab-data");
  const $ = id => document.getElementById(id);
  const text = $("tk-text"), word = $("tk-word"), list = $("tk-tokens"), status = $("tk-status");
  const special = $("tk-special"), stepBox = $("tk-step-box");
  if (!data || !data.runtime) { status.textContent = "The widget's data is missing from this page."; return; }
  const rt = data.runtime, unk = data.special.unk;
  let wp = null, loading = null;
  // blame the connection only when the browser says it is down (a file:// page needs none)
  const offline = () => /^https?:$/.test(location.protocol) && navigator.onLine === false;

  function addScript(src) {
    return new Promise((resolve, reject) => {
      const s = h("script", { src });
      s.onload = () => resolve();
      s.onerror = () => reject(new Error(src));
      document.head.append(s);
    });
  }

  /** Loads the tokenizer's code and the vocabulary once; resolves with the tokenizer. */
  function load() {
    if (!loading) {
      root.dataset.vocab = "loading";
      status.textContent = "Loading the vocabulary (" + Math.round(rt.vocab_bytes / 1000) + " KB)…";
      const key = rt.vocab.split("/").pop();
      const code = Labs.runtime && Labs.runtime.WordPiece ? Promise.resolve() : addScript(rt.code);
      loading = Promise.all([code, addScript(rt.vocab)]).then(() => {
        const vocab = Labs.runtimeData && Labs.runtimeData[key];
        if (!vocab || !Labs.runtime || !Labs.runtime.WordPiece) throw new Error("no vocabulary");
        wp = Labs.runtime.WordPiece(vocab);
        root.dataset.vocab = "ready";
        status.textContent = "Vocabulary loaded: " + wp.size.toLocaleString("en") + " pieces. The pieces now follow what you type, up to "
          + text.maxLength.toLocaleString("en") + " characters.";
        $("tk-load-hint").hidden = true;  // "computed when the page was built" is no longer true
        return wp;
      }).catch(() => {
        root.dataset.vocab = "failed";
        status.textContent = (offline() ? "This device is offline, so the vocabulary could not be loaded"
          : "The vocabulary's file could not be loaded") + ": the pieces shown are the ones computed for the starting text.";
        loading = null;
        throw new Error("not loaded");
      });
    }
    return loading;
  }

  const pieceItem = (p, id, cls) => h("li", {
    class: "tk-piece" + (p.startsWith("##") ? " tk-cont" : "") + (p === unk ? " tk-unk" : "") + (cls || ""),
    "data-id": id
  }, [h("span", { class: "tk-p" }, [p]), h("span", { class: "tk-id" }, [String(id)])]);

  function words(s) {  // whitespace-separated words after cleaning, as Python's clean_text(s).split()
    let n = 0, inWord = false;
    for (const ch of wp.clean(s)) {
      const space = wp.chars.isSpace(ch.codePointAt(0));
      if (!space && !inWord) n++;
      inWord = !space;
    }
    return n;
  }

  function showSpecial() {
    for (const li of list.querySelectorAll(".tk-special")) li.hidden = !special.checked;
  }

  function drawText() {
    if (!wp) return;
    const enc = wp.encode(text.value);
    const items = enc.tokens.map((p, i) => pieceItem(p, enc.ids[i], i === 0 || i === enc.tokens.length - 1 ? " tk-special" : ""));
    list.replaceChildren(...items);
    showSpecial();
    const n = { chars: Array.from(text.value).length, words: words(text.value), pieces: enc.tokens.length - 2 };
    for (const k in n) root.querySelector('[data-count="' + k + '"]').textContent = String(n[k]);
    $("tk-live").textContent = n.pieces + " pieces";
  }

  function code(s) { return h("code", { class: "tk-w" }, [s]); }
  function step(label, kids) { return h("li", null, [h("span", { class: "tk-step" }, [label]), " ", ...kids]); }
  const spaced = nodes => nodes.flatMap((n, i) => i ? [" ", n] : [n]);

  function drawSteps() {
    if (!wp) return;
    const st = wp.steps(word.value);
    const ws = st.words;
    const rows = [
      step("Written", [code(word.value.trim())]),
      step("Lower-cased", [code(st.lowered.join(" "))]),
      step("Accents stripped", [code(st.normalised.join(" "))]),
      step("Split at punctuation", ws.length ? spaced(ws.map(code)) : [h("em", null, ["no word left"])])
    ];
    for (const w of ws) {
      const s = wp.search(w);
      const kids = [h("span", { class: "tk-step" }, ["Longest match first in ", h("code", null, [w])])];
      if (s.tooLong) kids.push(h("p", { class: "tk-hint" }, ["Over " + rt.max_chars + " characters: the whole word becomes [UNK] without a search."]));
      else {
        const rounds = h("ol", { class: "tk-rounds" }), byStart = new Map();
        for (const t of s.tries) {
          if (!byStart.has(t.start)) {
            const tries = h("span", { class: "tk-tries" });
            byStart.set(t.start, tries);
            rounds.append(h("li", null, [h("span", { class: "tk-from" }, ["From character " + (t.start + 1) + ":"]), " ", tries]));
          }
          byStart.get(t.start).append(h("span", { class: "tk-try " + (t.found ? "tk-hit" : "tk-miss") }, [t.piece,
            h("span", { class: "visually-hidden" }, [t.found ? " (in the vocabulary)" : " (not in the vocabulary)"])]), " ");
        }
        kids.push(rounds);
      }
      const result = h("p", { class: "tk-result" });
      if (s.unknown) result.append("No piece of the vocabulary starts the rest, so the whole word is ", h("code", null, ["[UNK]"]), ".");
      else {
        result.append("Pieces: ", ...spaced(s.pieces.map(p => h("code", null, [p]))));
        if (s.pieces.length > 1 && !s.tooLong) result.append(" — every piece after the first starts with ", h("code", null, ["##"]), ": it continues the word.");
      }
      kids.push(result);
      rows.push(h("li", null, kids));
    }
    stepBox.replaceChildren(h("ol", { class: "tk-steps", id: "tk-steps" }, rows));
  }

  // What the learner typed is kept in the address with replaceState (no history entry per
  // keystroke), so a reload or a shared link opens on the same text and word; the built ones leave
  // it bare. It is written as they type, whether or not the vocabulary has loaded.
  const built = { text: text.value, word: word.value };
  function keep() {
    const p = new URLSearchParams();
    if (text.value !== built.text) p.set("text", text.value);
    if (word.value !== built.word) p.set("word", word.value);
    const target = p.toString() ? "#" + p : "", ours = /^#(text|word)=/.test(location.hash);
    try {
      if ((target || ours) && target !== location.hash) history.replaceState(null, "", target || location.pathname + location.search);
    } catch { /* an odd file:// policy: the text is still on the page */ }
  }
  // An address's text longer than the box takes is cut as typing would cut it (no half of a pair).
  const fit = (s, box) => s.length > box.maxLength ? s.slice(0, box.maxLength).replace(/[\uD800-\uDBFF]$/, "") : s;
  const saved = new URLSearchParams(location.hash.slice(1));
  if (saved.has("text")) text.value = fit(saved.get("text"), text);
  if (saved.has("word")) word.value = fit(saved.get("word"), word);

  const later = fn => () => load().then(fn, () => {});
  text.addEventListener("focus", later(() => {}));
  word.addEventListener("focus", later(() => {}));
  text.addEventListener("input", later(drawText));
  word.addEventListener("input", later(drawSteps));
  text.addEventListener("input", keep);
  word.addEventListener("input", keep);
  special.addEventListener("change", showSpecial);
  const bpeButton = $("tk-bpe-load");  // BPE beside WordPiece: its code (static/later/) and data load on this press
  if (bpeButton) bpeButton.addEventListener("click", () => {
    bpeButton.disabled = true;
    load().then(drawText, () => {});
    u.load(data.bpe.later).then(() => Labs.tokensBPE(data.bpe, text, rt.code), () => {
      bpeButton.disabled = false;
      $("tk-bpe-status").textContent = "The comparison's code could not be loaded" + (offline() ? ": this device is offline." : ".");
    });
  });
  showSpecial();
  $("tk-nojs").remove();
  $("tk-load-hint").removeAttribute("data-off");
  // A text or word from the address is split as soon as the vocabulary is in.
  if (text.value !== built.text || word.value !== built.word) {
    later(() => { if (text.value !== built.text) drawText(); if (word.value !== built.word) drawSteps(); })();
  }
  root.dataset.ready = "true";
})();
