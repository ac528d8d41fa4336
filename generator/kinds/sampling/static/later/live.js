/* "Your prompt" in the sampling lab: SmolLM2 in the page (Labs.runtime, the page files of the GGUF
   whose stored scores the dial shows), loaded on the learner's first click; this file itself loads
   only then (live.py). The prompt's forward pass runs while the learner types: model.prefill on
   every keystroke keeps the tokens already run and replaces a run the next keystroke makes stale.
   "Next token" lists the likeliest tokens under the dial's temperature, top-k and top-p: the
   model's probabilities p raised to 1/T (softmax(z/T)), the k likeliest kept, then the likeliest
   while those above hold less than p of the total, renormalised (the cut of Labs.code.sampling).
   "Generate" is model.generate with the dial's settings and seed, which draws as
   generator/models/sampling.py does: the same seed gives the same text. */
(() => {
  "use strict";
  const Labs = window.Labs, u = Labs.util, { h } = u, dial = Labs.code.samplingDial;
  const { el } = dial, TOP = 10, MAX_N = 200, utf8 = new TextDecoder("utf-8", { fatal: true });
  let model = null, loading = null, probs = null, order = null, ids = [], asked = 0;
  const test = (Labs.test.samplingLive = { ids: () => ids.slice() });

  const count = n => n.toLocaleString("en");
  const pct = x => (100 * x).toFixed(x >= 0.001 || x === 0 ? 1 : 3) + "%";
  // A token as the dial writes one: a space as ␣, a newline as ↵, bytes that are not text as <0x..>.
  function tokenText(id) {
    const bytes = model.tokenizer.tokenBytes(id);
    try { return utf8.decode(bytes).replace(/ /g, "␣").replace(/\n/g, "↵"); } catch {
      return [...bytes].map(b => `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`).join("");
    }
  }

  function ui() {
    const input = h("textarea", { id: "sa-own-input", rows: "2", maxlength: "1000", autocomplete: "off", spellcheck: "false",
      "aria-describedby": "sa-own-state" });
    const n = h("input", { type: "number", id: "sa-own-n", min: "1", max: String(MAX_N), step: "1", value: "20", inputmode: "numeric" });
    el.ownApp.replaceChildren(
      h("div", { class: "sa-field" }, [h("label", { for: "sa-own-input" }, ["Your prompt"]), input]),
      h("p", { class: "sa-hint", id: "sa-own-state" }, ["Type a prompt: the model reads it as you type."]),
      h("p", { class: "sa-own-label", id: "sa-own-next-label" }, ["Next token"]),
      h("ol", { class: "sa-own-next", id: "sa-own-next", "aria-labelledby": "sa-own-next-label" }, []),
      h("p", { class: "sa-hint", id: "sa-own-cut" }, []),
      h("div", { class: "sa-sampler" }, [
        h("div", { class: "sa-field sa-seed" }, [h("label", { for: "sa-own-n" }, ["Tokens"]), n]),
        h("button", { type: "button", class: "btn btn-primary", id: "sa-own-generate", "aria-describedby": "sa-own-gen-hint" }, ["Generate"])]),
      h("p", { class: "sa-hint", id: "sa-own-gen-hint" }, ["Generate continues your prompt token by token, each drawn with the dial's temperature, top-k, top-p and seed."]),
      h("p", { class: "sa-own-text", id: "sa-own-text" }, []),
      h("ol", { class: "sa-own-steps", id: "sa-own-steps", "aria-label": "Generated tokens, each with its chance when it was drawn" }, []));
    input.addEventListener("input", () => run(input.value));
    el.ownApp.querySelector("#sa-own-generate").addEventListener("click", () => generate(n));
    el.ownApp.hidden = false;
    el.ownApp.closest(".sampling").classList.add("is-live");
    dial.onChange(paint);
    input.focus();
  }

  /* The prompt's next-token distribution, as the learner types. */
  async function run(text) {
    const mine = ++asked, state = el.ownApp.querySelector("#sa-own-state");
    ids = text ? model.tokenizer.encode(text).ids : [];
    el.ownApp.querySelector("#sa-own-next").dataset.ready = "false";
    if (!ids.length) { probs = null; paint(); state.textContent = "Type a prompt: the model reads it as you type."; return; }
    state.textContent = `Reading ${count(ids.length)} token${ids.length === 1 ? "" : "s"}…`;
    try {
      await model.prefill(ids);
      if (mine !== asked) return;
      const p = await model.next();
      if (mine !== asked) return;
      probs = p;
      order = Array.from(p.keys()).sort((a, b) => p[b] - p[a] || a - b);
      state.textContent = `${count(ids.length)} token${ids.length === 1 ? "" : "s"}: ${ids.map(tokenText).join(" · ")}`;
      paint();
      // Said once the learner pauses (the dial's live region), not at every keystroke.
      const items = [...el.ownApp.querySelectorAll("#sa-own-next li")].slice(0, 3);
      dial.say("Next token: " + items.map(li => li.firstChild.textContent + " " + li.lastChild.textContent).join(", ") + ".", true);
    } catch (err) {
      if (mine === asked && err?.name !== "AbortError") state.textContent = `The model failed: ${err?.message || err}`;
    }
  }

  /* The list under the dial's settings: softmax(z/T) = p^(1/T) renormalised, then top-k, then top-p. */
  function paint() {
    const list = el.ownApp.querySelector("#sa-own-next"), cut = el.ownApp.querySelector("#sa-own-cut");
    if (!probs) { list.replaceChildren(); cut.textContent = ""; return; }
    const s = dial.state(), inv = 1 / s.T, top = Math.log(probs[order[0]]);
    const w = order.map(j => probs[j] > 0 ? Math.exp((Math.log(probs[j]) - top) * inv) : 0);
    const total = u.sum(w);
    let kept = s.k > 0 ? Math.min(s.k, w.length) : w.length, before = 0;
    if (s.p < 100) {
      let i = 0;
      while (i < kept && 100 * before < s.p * total) before += w[i++];
      kept = i;
    } else before = u.sum(w.slice(0, kept));
    const rows = order.slice(0, Math.min(TOP, kept)).map((j, i) => {
      const share = w[i] / before, fill = h("span", { class: "sa-fill" });
      fill.style.width = (100 * share).toFixed(2) + "%";
      return h("li", { "data-token-id": String(j), "data-prob": String(share) }, [
        h("span", { class: "sa-own-tok" }, [tokenText(j)]),
        h("span", { class: "sa-track", "aria-hidden": "true" }, [fill]),
        h("span", { class: "sa-own-pct" }, [pct(share)])]);
    });
    list.replaceChildren(...rows);
    list.dataset.ready = "true";
    const T = String(+s.T.toFixed(4)), settings = `T = ${T}` + (s.k ? `, top-k ${s.k}` : "") + (s.p < 100 ? `, top-p ${(s.p / 100).toFixed(2)}` : "");
    // (no template literal inside another: the minifier would take the inner one's spaces out)
    const rest = kept > TOP ? "; the " + count(kept - TOP) + " not listed hold " + pct(1 - u.sum(w.slice(0, TOP)) / total) : "";
    cut.textContent = kept < w.length ? `${settings}: ${count(kept)} of ${count(w.length)} tokens stay in; their chances are renormalised to add up to 100%.`
      : `${settings}: all ${count(w.length)} tokens stay in${rest}.`;
  }

  /* Tokens drawn one by one with the dial's settings and seed, each stepped into the sequence. */
  async function generate(nInput) {
    const button = el.ownApp.querySelector("#sa-own-generate"), text = el.ownApp.querySelector("#sa-own-text");
    const steps = el.ownApp.querySelector("#sa-own-steps"), n = Number(nInput.value), s = dial.state();
    if (!ids.length) { text.textContent = "Type a prompt first."; return; }
    if (!(Number.isInteger(n) && n >= 1 && n <= MAX_N)) { text.textContent = `Generate makes 1 to ${MAX_N} tokens.`; return; }
    const prompt = ids.slice(), settings = { n, temperature: s.T, topK: s.k, topP: s.p, seed: s.seed };
    button.disabled = true;
    steps.dataset.done = "false";
    steps.replaceChildren();
    text.textContent = "Generating…";
    const promptText = model.tokenizer.decode(prompt);
    try {
      await model.prefill(prompt);
      const out = await model.generate(settings, t => {
        steps.append(h("li", { "data-token-id": String(t.id), "data-prob": String(t.share), "data-model-prob": String(t.probability) },
          [h("span", { class: "sa-own-tok" }, [tokenText(t.id)]), " ", h("span", { class: "sa-own-pct" }, [pct(t.share)])]));
        text.replaceChildren(promptText, h("mark", {}, [t.text]));
      });
      const why = out.stopped === "length" ? "" : out.stopped === "context" ? " It stopped at the model's length limit." : ` It stopped at ${out.stopped}, a token that ends a text.`;
      steps.dataset.text = out.text;
      dial.say(`Generated ${out.ids.length} tokens with seed ${s.seed}: ${out.text}`);
      text.append(h("span", { class: "sa-hint" }, [` (${out.ids.length} tokens at T = ${+s.T.toFixed(4)}` + (s.k ? `, top-k ${s.k}` : "") +
        (s.p < 100 ? `, top-p ${(s.p / 100).toFixed(2)}` : "") + `, seed ${s.seed}: the same settings and seed give the same text.${why})`]));
    } catch (err) {
      text.textContent = `Generating failed: ${err?.message || err}`;
    } finally {
      button.disabled = false;
      steps.dataset.done = "true";
    }
  }

  /* The model, once: the runtime's code, then its files with byte progress and Cancel. */
  Labs.code.samplingLive = live => loading ||= (async () => {
    const status = el.ownStatus, still = "The prompts above still work.";
    try { await Promise.all([u.load(live.code), u.load(live.css)]); } catch { status.textContent = `The model's code could not be loaded. ${still}`; return null; }
    model = await Labs.runtime.loadShown({ load: el.ownLoad, cancel: el.ownCancel, bar: el.ownBar, status, still },
      { manifestSrc: live.manifest });
    if (!model) return (loading = null);
    status.textContent = `The model is ready, running ${model.mode === "worker" ? "in a Worker" : "on this page's main thread"}.`;
    ui();
    test.model = model;
    return model;
  })();
})();
