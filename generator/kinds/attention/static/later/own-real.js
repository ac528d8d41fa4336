/* "Your sentence" through the real model: the bundle's runtime (Labs.runtime, generator/runtime)
   runs MiniLM in the page. Loaded by own-ui.js (Labs.util.load) only when the learner picks the
   real model; it loads the runtime's code the same way, and the weights only when asked to show a
   sentence (with a progress bar of bytes and a Cancel button), and every word's part of it when the
   learner asks to keep it for offline use.
   Labs.code.ownReal = { start(info, panel, say, back), offer(), sentence(text) → Promise<S | null>,
                         merge(encoding, attentions, layers, heads), loaded(), size(), watch(fn) }
   info is Labs.data.ownRealModel, loaded with this script from data.own.model_src (inpage.page_part): code, manifest, license, download_bytes,
   model, shown (this lab's largest change in points, rounded up), sentences, and expect (bundle.json's figures on generated
   sentences: worst, p99, median, same_top_key, count, seed, words, heads; null when the bundle carries none). */
(() => {
  "use strict";
  const Labs = window.Labs, u = Labs.util, h = (...a) => u.h(...a);
  const MAX_PIECES = 128; // the spotlight shows every word: longer inputs are refused (the model reads 512)
  let info = null, panel = null, say = null, about = null, bar = null, amount = null, cancel = null, licence = null;
  let offline = null, keep = null, back = null, runtimeP = null, modelP = null, keepP = null, control = null, described = null;
  const watchers = new Set(); // who else shows the download's progress (the stage, for a link)

  const mb = bytes => (bytes / 1e6).toLocaleString("en", { maximumFractionDigits: 1 }) + " MB";

  /** Into `where`: what the model is and costs, a progress bar, Cancel (focus then goes to `back`, the
      Show it button) and what works offline. say(text, progress): the box's message line. */
  function start(modelInfo, where, sayFn, backTo) {
    info = modelInfo;
    panel = where;
    say = sayFn;
    back = backTo;
    about = h("p", { class: "sl-hint" });
    bar = h("progress", { max: 1, value: 0, "aria-label": "Loading the real model" });
    amount = h("span", { class: "sl-own-mb" }); // the bytes so far, as text: what the bar shows
    cancel = h("button", { type: "button", class: "btn" }, ["Cancel"]);
    cancel.addEventListener("click", () => { control?.abort(); back?.focus(); }); // the button goes: focus where it came from
    licence = h("a", { href: info.license }, ["licence (Apache-2.0)"]);
    offline = h("span");
    keep = h("button", { type: "button", class: "btn" });
    keep.addEventListener("click", keepAll);
    panel.replaceChildren(about, ...expectation(), h("p", { class: "sl-own-load", hidden: "" }, [bar, " ", amount, " ", cancel]),
      h("p", { class: "sl-hint sl-own-offline" }, [offline, " ", keep]));
    panel.hidden = false;
    aboutText();
    offlineText();
  }

  /** What works without a connection, as it stands (the Keep button when there is more to keep). */
  function offlineText() {
    const M = kept(), rest = described?.restBytes;
    const fromDisk = location.protocol === "file:";
    offline.textContent = fromDisk ? "Opened from your disk: every part of the model is there too, so it works without a connection."
      : M ? "Kept: every part of the model is loaded in this page, so any sentence works without a connection while the page stays open."
      : "Offline, sentences work only if the model is loaded and their words were read before: each new word needs a small part " +
        "of the model" + (described?.shardCount ? ` (about ${Math.round(rest / described.shardCount / 1e3)} KB for ${described.shardRows} ` +
        "words of its vocabulary)" : "") + ". Keep every part, and any sentence works without a connection while this page stays open.";
    keep.hidden = fromDisk || M;
    keep.textContent = "Keep for offline use" + (rest ? ` (up to ${mb(rest + (modelP ? 0 : described.totalBytes))})` : "");
  }
  const kept = () => !!keepP?.done;

  function aboutText(total) {
    const size = total || described?.totalBytes || info.download_bytes;
    about.replaceChildren(`${info.model.split("/").pop()} runs in this page: about ${mb(size)} to download the first time` +
      ", a few seconds to run. The model's ", licence, ".");
  }

  // A bound is rounded up and a share down, so that what the page says stays true of the figures.
  const up = x => (Math.ceil(x * 10 - 1e-9) / 10).toFixed(1), down = x => (Math.floor(x * 1000 + 1e-9) / 10).toFixed(1);

  /** What a learner's sentence can expect of the 8-bit model: the bundle's figures on generated
      sentences (bundle.json "accuracy", measured when it was exported), this lab's own in the detail. */
  function expectation() {
    const e = info.expect, lab = `On this lab's own ${info.sentences} sentences the largest change is ${up(info.shown)} points.`;
    if (!e) return [h("p", { class: "sl-hint sl-own-expect" }, ["8-bit weights: not measured on sentences of your own. " + lab])];
    return [h("p", { class: "sl-hint sl-own-expect" }, [`8-bit weights: in our tests on ${e.count} sentences, a sentence's ` +
      `largest change from the full model was about ${e.median.toFixed(1)} points typically, at worst ${up(e.worst)}; the same ` +
      `key got the most weight in ${down(e.same_top_key)}% of rows.`]),
    h("p", { class: "sl-hint sl-own-detail" }, [
      `How this was measured: when the model was packed for the page, ${e.count} generated sentences of ${e.words[0]} to ${e.words[1]} words (seed ` +
      `${e.seed}) went through the 8-bit model and the full one, and every weight of all ${e.heads} heads was compared: a sentence's largest ` +
      `change is at most ${up(e.p99)} points for 99 in 100 of them. A weight is a share of the row, so 1 point is 1% of ` +
      `a word's attention. ${lab}`])];
  }

  /** The runtime's code (a classic script), once. */
  function runtime() {
    runtimeP ||= u.load(info.code).then(() => {
      if (!Labs.runtime?.load) throw Error("The model's code did not start.");
      return Labs.runtime;
    });
    runtimeP.catch(() => { runtimeP = null; });
    return runtimeP;
  }

  /** The learner picked the real model: the download's size, from the manifest (describe()). */
  function offer() {
    return runtime().then(R => R.describe(info.manifest)).then(d => { described = d; aboutText(d.totalBytes); offlineText(); },
      err => say(plain(err)));
  }

  /** What went wrong, for the learner: the connection when it is the cause, never a file's name. */
  function plain(err, keeping) {
    const still = " The designed heads still work.";
    if (err?.name === "AbortError") return "Loading the real model was cancelled; the designed heads still work.";
    if (err?.code === "offline" || (!err?.code && navigator.onLine === false)) {
      return (keeping ? "You are offline, so the rest of the model could not be kept." : modelP ? "You are offline, and this " +
        "sentence has words whose part of the model is not loaded yet: sentences of words already read still work."
        : "You are offline, so the real model could not be loaded.") + still + " Try again once you are back online.";
    }
    if (err?.code === "missing") return "Part of the real model is missing from this site, so it could not be loaded." + still;
    if (err?.code === "corrupt") return "Part of the real model arrived damaged (it is not what the site was built with), so it was not used." + still;
    return (err?.file ? "The real model could not be loaded." : err?.message || "The real model could not be loaded.") + still;
  }

  /** Bytes so far, on the bar, as text and to whoever watches. */
  function progress(loaded, total) {
    bar.max = total;
    bar.value = loaded;
    amount.textContent = `${mb(loaded)} of ${mb(total)}`;
    bar.setAttribute("aria-valuetext", amount.textContent);
    for (const fn of watchers) fn(loaded, total);
  }
  /** While `work(signal)` runs: the bar, its text and Cancel shown, `text` said; a Promise of its result. */
  function busy(text, work) {
    control = new AbortController();
    bar.parentNode.hidden = false;
    bar.value = 0;
    amount.textContent = "";
    say(text, true);
    const done = work(control.signal);
    done.finally(() => {
      bar.parentNode.hidden = true;
      control = null;
      offlineText();
    }).catch(() => {});
    return done;
  }

  /** The model, loaded once with a progress bar and a Cancel button; a failure or a cancel can be tried again. */
  function model() {
    if (modelP) return modelP;
    modelP = busy("Loading the real model…", signal => runtime().then(R => R.load({ manifestSrc: info.manifest, onProgress: progress, signal })));
    modelP.then(() => say(""), () => { modelP = null; });
    return modelP;
  }

  /** "Keep for offline use": the model and every word's part of it, so that any sentence runs without a connection. */
  function keepAll() {
    keepP ||= model().then(M => busy("Keeping the real model for offline use…", signal => M.loadAll({ onProgress: progress, signal })));
    const focused = document.activeElement === keep;
    keepP.then(() => {
      keepP.done = true;
      say("");
      offlineText(); // the button goes: focus to Show it
      if (focused) back?.focus();
    }, err => { keepP = null; say(plain(err, true)); offlineText(); });
    return keepP;
  }

  /** Pieces merged into words as the build merges them (realheads.piece_word_index, merge_pieces):
      a word receives the sum of its pieces' columns and sends the mean of their rows. A word the
      model could not read at all (its one piece is the unknown token) is shown as that token.
      → {words, special, attention: Float64Array [((l·H + h)·n + i)·n + j]} */
  function merge(enc, att, layers, heads, unk = "[UNK]") {
    const p = enc.ids.length, pieces = w => enc.tokens.filter((t, i) => enc.wordIds[i] === w);
    const read = enc.sourceWords.map((word, w) => pieces(w).join() === unk ? unk : word);
    const words = [enc.tokens[0], ...read, enc.tokens[p - 1]], n = words.length;
    const owner = enc.wordIds.map((w, i) => i === 0 ? 0 : w === null ? n - 1 : w + 1), count = new Float64Array(n);
    for (const w of owner) count[w]++;
    const out = new Float64Array(layers * heads * n * n);
    for (let m = 0; m < layers * heads; m++)
      for (let i = 0; i < p; i++)
        for (let j = 0; j < p; j++) out[(m * n + owner[i]) * n + owner[j]] += att[(m * p + i) * p + j] / count[owner[i]];
    return { words, special: words.map((w, i) => i === 0 || i === n - 1), attention: out };
  }

  /** Hamilton's method, as realheads.largest_remainder_array: integers summing to `total`. */
  function perMille(row, total) {
    const sum = row.reduce((a, b) => a + b, 0), quota = row.map(x => sum > 0 ? x * total / sum : 0), base = quota.map(Math.floor);
    let short = sum > 0 ? Math.min(row.length, Math.max(0, Math.round(total - base.reduce((a, b) => a + b, 0)))) : 0;
    const order = quota.map((q, i) => [row[i] > 0 ? q - base[i] : -1, i]).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    for (const [, i] of order) if (short-- > 0) base[i]++;
    return base;
  }

  /** `text` through the real model as a sentence for the door (S.real), or null and a message. */
  async function sentence(text, maxWords) {
    try {
      const M = await model(), enc = M.tokenizer.encode(text);
      if (!enc.sourceWords.length) { say("Type a sentence first."); return null; }
      if (enc.sourceWords.length > maxWords || enc.ids.length > MAX_PIECES) {
        say(`The real model here reads at most ${maxWords} words (${MAX_PIECES} word pieces); this sentence has ` +
          `${enc.sourceWords.length} words in ${enc.ids.length} pieces. Try a shorter one.`);
        return null;
      }
      const run = await M.run(enc.ids), W = merge(enc, run.attentions, run.layers, run.heads, M.tokenizer.settings?.unk_token), n = W.words.length;
      const attention = [];
      for (let l = 0; l < run.layers; l++) {
        const layer = [];
        for (let hd = 0; hd < run.heads; hd++) {
          const rows = [];
          for (let i = 0; i < n; i++) rows.push(perMille(Array.from(W.attention.subarray(((l * run.heads + hd) * n + i) * n, ((l * run.heads + hd) * n + i + 1) * n)), 1000));
          layer.push(rows);
        }
        attention.push(layer);
      }
      Labs.code.ownReal.last = { ...W, perMille: attention }; // for the tests: the merged weights, before and after rounding
      const plainText = W.words.slice(1, -1).join(" ");
      say("");
      return {
        own: new URLSearchParams({ t: text, m: "real" }).toString(),
        label: "Your sentence: " + (plainText.length > 40 ? plainText.slice(0, 39) + "…" : plainText),
        note: `Your sentence, run through ${info.model.split("/").pop()} in your browser with 8-bit weights ` +
          (info.expect ? `(a sentence's largest change from the full model: about ${info.expect.median.toFixed(1)} points ` +
            `typically, at worst ${up(info.expect.worst)} in our tests).` : "(not measured on sentences of your own)."),
        real: { words: W.words, special: W.special, attention }
      };
    } catch (err) {
      say(plain(err));
      return null;
    }
  }

  /** Whether the model is here already (a link to a real sentence then shows at once). */
  const loaded = () => !!modelP;
  /** The download Show it starts, as said to the learner ("about 16.5 MB"). */
  const size = () => "about " + mb(described?.totalBytes || info.download_bytes);
  /** fn(loaded, total) hears the download's progress too; watch(fn, false) stops it. */
  const watch = (fn, on = true) => on ? watchers.add(fn) : watchers.delete(fn);
  /** Cancel the download under way, if any. */
  const stop = () => control?.abort();

  (Labs.code ||= {}).ownReal = { start, offer, sentence, merge, loaded, size, watch, stop };
})();
