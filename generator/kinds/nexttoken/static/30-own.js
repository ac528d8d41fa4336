/* "Your text" in the next-token lab: the decoder (Labs.runtime, the page files of the same GGUF the
   build ran) is downloaded only when the learner asks, then scores a typed text the way the build
   scored the authored ones: read after <|endoftext|>, position k's next-token distribution gives
   the probability of token k + 1. Each position is one more token through the KV cache
   (model.prefill keeps the common prefix), so a text of n tokens costs n + 1 steps. */
(() => {
  "use strict";
  const root = document.getElementById("next-token"), own = document.getElementById("nt-own");
  const NT = window.Labs.code?.nextToken;
  if (!root || !own || !NT || !NT.data.live) return;  // the lab does not offer it (`your-text`)
  const u = window.Labs.util, { h } = u, { data } = NT, live = data.live;
  const $ = id => document.getElementById(id);
  const status = $("nt-own-status"), load = $("nt-own-load"), cancel = $("nt-own-cancel"), bar = $("nt-own-bar");
  const form = $("nt-own-form"), input = $("nt-own-input"), out = $("nt-own-out");
  const timing = $("nt-timing"), timingRun = $("nt-timing-run"), timingOut = $("nt-timing-out");
  const TOP = 5, utf8 = new TextDecoder("utf-8", { fatal: true });
  own.hidden = false;
  if (!live.manifest) {
    status.textContent = live.reason || "The model is not part of this copy of the site.";
    load.hidden = true;
    return;
  }
  let model = null;
  load.textContent = `Load the model (${Math.round(live.download_bytes / 1e6)} MB)`;
  status.textContent = `Score a text of your own with ${live.model}, in this page. Nothing is downloaded until you ask.`;

  const tokenText = id => {
    const bytes = model.tokenizer.tokenBytes(id);
    try { return utf8.decode(bytes); } catch { return [...bytes].map(b => `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`).join(""); }
  };
  const top = probs => {  // the TOP likeliest ids, ties to the lower id, as the build's argsort
    const best = [];
    for (let j = 0; j < probs.length; j++) {
      if (best.length === TOP && probs[j] <= probs[best[TOP - 1]]) continue;
      let i = best.length < TOP ? best.length : TOP - 1;
      while (i > 0 && probs[best[i - 1]] < probs[j]) { best[i] = best[i - 1]; i--; }
      best[i] = j;
    }
    return best.map(j => [j, probs[j]]);
  };

  load.addEventListener("click", async () => {
    const ui = { load, cancel, bar, status, still: "The texts above still work." };
    try { await u.load(live.code); } catch { status.textContent = `The model's code could not be loaded. ${ui.still}`; return; }
    model = await window.Labs.runtime.loadShown(ui, { manifestSrc: live.manifest });
    if (!model) return;
    status.textContent = "The model is ready: type a text and press Enter.";
    form.hidden = false;
    timing.hidden = false;
    input.focus();
  });

  /* The logit lens of the own text at `at`, as the build's compute.read_text reads it: per reading
     (the embeddings, then each layer) the top token, its probability and the target's — the text's
     next token, or after the text the model's own top guess. model.lens replays the position. */
  NT.liveLens = async (textIndex, at) => {
    const T = data.texts[textIndex];
    if (!model || T?.id !== "own") return null;
    await model.prefill(T.ids);
    const r = await model.lens(at), V = r.vocab, P = r.probabilities, rows = [];
    const argmax = l => { let b = 0; for (let j = 1; j < V; j++) if (P[l * V + j] > P[l * V + b]) b = j; return b; };
    const target = at < T.ids.length - 1 ? T.ids[at + 1] : argmax(r.layers - 1);
    for (let l = 0; l < r.layers; l++) {
      const j = argmax(l);
      data.tok[String(j)] ??= tokenText(j);
      rows.push([j, P[l * V + j], P[l * V + target]]);
    }
    return rows;
  };

  /* One token timed both ways on the cache part's prompt: step() through the cache, then the same
     sequence run from an empty cache (reset, then prefill of every token). Wall time in this tab, so
     the sentence says where it ran. */
  timingRun.addEventListener("click", async () => {
    if (!model) return;
    const prompt = data.texts[data.cache.text], next = data.cache.new[0][0];
    timingRun.disabled = true;
    timingOut.textContent = "Timing…";
    try {
      await model.reset();
      await model.prefill(prompt.ids);
      let t = performance.now();
      await model.step(next);
      await model.next();
      const cached = performance.now() - t;
      await model.reset();
      t = performance.now();
      await model.prefill([...prompt.ids, next]);
      await model.next();
      const full = performance.now() - t, n = prompt.ids.length + 1;
      timingOut.replaceChildren(
        h("span", { "data-cached-ms": String(Math.round(cached)), "data-full-ms": String(Math.round(full)) }, [
          `Token ${n} of “${prompt.text}”: ${Math.round(cached)} ms with the cache (1 token run), ${Math.round(full)} ms `
          + `without it (all ${n} tokens run again), ${(full / cached).toFixed(1)} times as long. Measured just now in `
          + `this browser, the model ${model.mode === "worker" ? "in a Worker" : "on the page's main thread"}, `
          + `${navigator.hardwareConcurrency || "an unknown number of"} logical cores reported; other tabs and programs `
          + `share them. The longer the prompt, the bigger the gap.`]));
    } catch (err) {
      timingOut.textContent = `Timing failed: ${err?.message || err}`;
    } finally {
      timingRun.disabled = false;
    }
  });

  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const text = input.value;
    if (!text.trim() || !model) return;
    const bpe = model.tokenizer, ids = [bpe.id("<|endoftext|>"), ...bpe.encode(text, { special: false }).ids];
    const n = ids.length - 1, p = [], tops = [];
    out.replaceChildren();
    try {
      for (let k = 0; k <= n; k++) {
        status.textContent = `Scoring token ${Math.min(k + 1, n)} of ${n}…`;
        await model.prefill(ids.slice(0, k + 1));
        const probs = await model.next();
        if (k < n) p.push(probs[ids[k + 1]]);
        tops.push(top(probs));
      }
    } catch (err) {
      status.textContent = `Scoring failed: ${err?.message || err}`;
      return;
    }
    for (const j of new Set([...ids, ...tops.flat().map(([j]) => j)])) data.tok[String(j)] ??= tokenText(j);
    const T = { id: "own", text, ids, p, top: tops };
    data.texts = data.texts.filter(t => t.id !== "own").concat([T]);
    const index = data.texts.length - 1, bits = p.map(x => -Math.log2(Math.max(x, 1e-300)));
    const ce = bits.reduce((s, b) => s + b, 0) / n, ppl = 2 ** ce;
    const band = x => x >= 0.5 ? 0 : x >= 0.05 ? 1 : x >= 0.005 ? 2 : 3;
    const buttons = ids.slice(1).map((j, k) => h("button", {
      type: "button", class: `nt-tok nt-b${band(p[k])}`, "data-prob": String(+p[k].toPrecision(4)), "data-at": String(k),
      "aria-label": `${data.tok[String(j)].trim() || "space"}: ${NT.pct(p[k])}`,
    }, [data.tok[String(j)].replace(/\n/g, "↵")]));
    buttons.push(h("button", { type: "button", class: "nt-tok nt-next", "data-at": String(n), "aria-label": "What comes next?" }, ["…?"]));
    out.append(h("div", { class: "nt-text", "data-text": String(index) }, [
      h("p", { class: "nt-tokens", role: "group", "aria-label": `Tokens of your text` }, buttons),
      h("p", { class: "nt-summary" }, [`${n} tokens. Cross-entropy: `, h("strong", {}, [`${ce.toFixed(2)} bits`]),
        " per token. Perplexity: ", h("strong", {}, [ppl.toFixed(1)]),
        ` — on average the model was as unsure as if it were choosing evenly among ${ppl.toFixed(1)} tokens.`])]));
    status.textContent = `Scored in this page by ${live.model}: click a token for its detail.`;
    out.dataset.ready = "true";
  });
})();
