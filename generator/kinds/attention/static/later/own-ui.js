/* "Your sentence": the learner's sentence becomes the spotlight's sentence "own", through the
   spotlight's door (setOwnSentence). Loaded by the spotlight the first time the box is used
   (data.own.src); computed by own-model.js (Labs.code.ownModel).
   The spotlight calls Labs.code.own.start(door) once, submit() on Enter or the button, and
   restore(hash) → the sentence, for a link or Back/Forward to #s=own&…&t=<text>[&src=<source>][&c=1].
   With "the real model" chosen, the sentence goes through MiniLM in the page (own-real.js, loaded
   on that choice) and its hash is #s=own&…&t=<text>&m=real. A link or reload with m=real fills the
   box, picks the real model and says in the stage that Show it loads it (nothing heavy loads
   unasked); at once if it is loaded already. A sentence shown is brought into view (reveal). */
(() => {
  "use strict";
  const Labs = window.Labs, M = Labs.code.ownModel, T = Labs.data.ownTables, h = (...a) => Labs.util.h(...a);
  const CHIP_TAGS = [...M.roles.slice(0, 2), "PROPN", ...M.roles.slice(2)];
  const LIMIT_CHARS = 2000;
  // Every designed head's description: a lab may show fewer heads than your sentence is computed with.
  const HEAD_META = T.heads.map(hd => ({ id: hd.id, name: hd.name, description: hd.description, bias: hd.bias, cross: hd.cross,
    q_dims: hd.q_dims, k_dims: hd.k_dims, v_dims: hd.v_dims, o_dims: hd.o_dims }));
  const ui = {}; // the form's choice of model (ownDesigned, ownReal, in the page) and what this module adds: the real model's panel (ownLoad)
  let door = null, box = null, msg = null, chips = null, current = null, files = null, realP = null;

  function start(d, f) {
    door = d;
    files = f || {};
    const { el } = door;
    // The choice is in the page (the learner may pick before this code is here); the real model's panel is made here, off the first visit.
    ui.ownDesigned = el.ownDesigned;
    ui.ownReal = el.ownReal;
    ui.ownLoad = h("div", { class: "sl-own-more", id: "sl-own-load", hidden: "" });
    el.ownGo.after(ui.ownLoad);
    msg = h("p", { class: "sl-own-msg", role: "status" });
    chips = h("div", { class: "sl-own-chips", role: "group", "aria-label": "Tags of your words" });
    box = h("div", null, [msg, chips, h("p", { class: "sl-hint" }, [
      "Computed in your browser by the same designed model as the sentences above; the author's build-time checks do not cover " +
      "your sentence. The heads see only each word's tag and position, not its meaning, so they will go wrong on some " +
      "sentences — that is what they can and cannot know. Words the model does not know get a guessed tag (a leading digit: NUM; " +
      "a capital mid-sentence: PROPN, a noun; -ly: ADV; -ing, -ed: VERB; -ous, -ful, -ive, -able, -ible, -less, -ish: ADJ; " +
      `else NOUN): change any tag below, or type word/TAG. At most ${M.maxWords} words.`])]);
    el.ownMore.replaceChildren(box);
    el.ownSource.addEventListener("input", syncCausal);
    el.ownCausal.addEventListener("change", syncCausal);
    const why = files.model?.reason;
    if (why) { // the page offers no real model: say why, once, where the choice is
      ui.ownReal.disabled = true;
      ui.ownDesigned.checked = true;
      ui.ownLoad.replaceChildren(h("p", { class: "sl-hint" }, [`The real model is not offered here: ${why}.`]));
      ui.ownLoad.hidden = false;
    }
    for (const r of [ui.ownReal, ui.ownDesigned]) r.addEventListener("change", choose);
    if (isReal()) choose(); // picked while this code was loading
    syncCausal();
  }
  const isReal = () => !!ui.ownReal.checked && !ui.ownReal.disabled;
  /** The learner picked a model: the real one loads its code and says its download size. */
  function choose() {
    syncCausal();
    for (const x of box.children) if (x !== msg) x.hidden = isReal(); // tags and the designed model's hint
    if (isReal()) {
      ui.ownLoad.hidden = false;
      real().then(R => R.offer(), () => {});
    }
    else if (!files.model?.reason) ui.ownLoad.hidden = true;
  }
  /** own-real.js (Labs.code.ownReal), loaded and started once. */
  function real() {
    realP ||= Promise.all([Labs.util.load(files.real_src), Labs.util.load(files.model_src)]).then(() => {
      Labs.code.ownReal.start(Labs.data.ownRealModel, ui.ownLoad, say, door.el.ownGo);
      return Labs.code.ownReal;
    });
    realP.catch(() => {
      realP = null;
      say(navigator.onLine ? "Could not load the real model's page code: the site did not send it. Pick it again, or reload the page."
        : "You are offline, so the real model's page code could not be loaded. Once you are back online, pick it again.");
    });
    return realP;
  }
  function syncCausal() {
    const { el } = door, cross = !!el.ownSource.value.trim(), one = isReal();
    el.ownSource.disabled = one; // MiniLM reads one sentence, both ways
    if (one) el.ownCausal.checked = false;
    el.ownCausal.disabled = cross || one;
    if (cross) el.ownCausal.checked = false;
    el.ownCausal.setAttribute("aria-checked", el.ownCausal.checked);
  }

  function say(text, progress) {
    msg.textContent = text;
    msg.classList.toggle("is-error", !!text && !progress);
  }

  /** The problems of a parse, as the learner reads them (at most three); words the model cannot
      read (emoji, say) are one problem, said once of them all. */
  function problemsText(what, problems) {
    const UNREADABLE = /^“([^”]*)” is not a word the model can read/, unreadable = problems.filter(p => UNREADABLE.test(p.message));
    const said = problems.filter(p => p === unreadable[0] || !unreadable.includes(p)).map(p => p !== unreadable[0] || unreadable.length < 2
      ? p.message : p.message.replace(UNREADABLE, unreadable.map(x => `“${UNREADABLE.exec(x.message)[1]}”`).join(", ") + " are not words the model can read"));
    return said.slice(0, 3).map(m => `${what}: ${m}.`).join(" ") + (said.length > 3 ? ` (${said.length - 3} more.)` : "");
  }

  /** `text` (and `source`) computed as a sentence for the spotlight; null (and a message) if it cannot be read. */
  function compute(text, source, causal) {
    if (text.length > LIMIT_CHARS || source.length > LIMIT_CHARS) {
      say(`That is ${Math.max(text.length, source.length).toLocaleString("en")} characters: a sentence here may have at most ` +
        `${M.maxWords} words. Try a shorter one.`);
      return null;
    }
    const q = M.parse(text, true), k = source.trim() ? M.parse(source, true) : null;
    if (q.problems.length || k?.problems.length) {
      say([q.problems.length && problemsText("Your sentence", q.problems), k?.problems.length && problemsText("Source", k.problems)]
        .filter(Boolean).join(" "));
      return null;
    }
    const kind = k ? "cross" : causal ? "causal" : "self", ids = k ? T.heads.map(x => x.id) : T.default_heads;
    const rq = q.words.map(w => w.role), rk = k ? k.words.map(w => w.role) : rq, results = M.compute(rq, k && rk, kind, ids);
    const [before, after] = M.residual(rq, results), heads = {};
    for (const id of ids) {
      const r = results[id], hd = M.heads.get(id), at = hd.o_dims.map(d => T.residual_dims.indexOf(d));
      const masked = rows => rows.map((row, i) => row.map((x, j) => r.mask[i][j] ? x : null));
      const pct = w => w.map((row, i) => M.percentages(row.map((x, j) => r.mask[i][j] ? x : 0), 100));
      heads[id] = { q: r.q, k: r.k, v: r.v, scores: masked(r.scores), bias: r.bias, scaled: masked(r.scaled),
        weights: r.weights, weights_unscaled: r.weights_unscaled, pct: pct(r.weights), pct_unscaled: pct(r.weights_unscaled),
        out: r.out, o: r.written.map(row => at.map(c => row[c])) };
    }
    const params = new URLSearchParams({ t: text });
    if (k) params.set("src", source);
    else if (causal) params.set("c", "1");
    const foreign = [...q.words, ...(k?.words || [])].some(w => w.guessed && !/\p{Script=Latin}/u.test(w.text));
    say(foreign ? "Words in a script the model's word list does not cover got the guessed tag NOUN: set their tags below." : "");
    current = { text, source, causal, q, k };
    const plain = q.words.map(w => w.text).join(" ");
    return {
      id: "own", own: params.toString(), label: "Your sentence: " + (plain.length > 40 ? plain.slice(0, 39) + "…" : plain), kind,
      note: "Your sentence, computed in your browser by the same designed model; the build-time checks do not cover it.",
      queries: q.words.map(w => w.text), keys: (k || q).words.map(w => w.text), key_label: k ? "source" : "", // "…, in the source"
      roles_k: rk, residual: { before: before.map(x => x.slice(0, T.embedding_dims.length)), after }, heads, head_meta: HEAD_META
    };
  }

  /** One tag chip (a select) per word; changing one rewrites that word as word/TAG and recomputes. */
  function drawChips() {
    const focused = chips.contains(document.activeElement) && document.activeElement.dataset.chip;
    const list = (words, which) => words.map((w, i) => h("span", { class: w.guessed ? "sl-chip is-guessed" : "sl-chip" }, [
      h("span", { "aria-hidden": "true", title: w.guessed ? "Tag guessed from the spelling: check it" : null }, [w.text + (w.guessed ? " ?" : "")]),
      h("select", { "data-chip": `${which}${i}`, "aria-label": `Tag of “${w.text}”, ${which === "q" ? "" : "source "}word ${i + 1}` +
        (w.guessed ? " (guessed)" : "") }, CHIP_TAGS.map(t => h("option", { value: t, selected: t === w.tag ? "" : null }, [t])))]));
    chips.replaceChildren(...list(current.q.words, "q"), ...(current.k ? [h("span", { class: "sl-hint" }, ["Source:"]), ...list(current.k.words, "k")] : []));
    for (const s of chips.querySelectorAll("select")) {
      s.value = current[s.dataset.chip[0]].words[+s.dataset.chip.slice(1)].tag;
      s.addEventListener("change", () => retag(s.dataset.chip, s.value));
    }
    if (focused) chips.querySelector(`[data-chip="${focused}"]`)?.focus();
  }

  function retag(chip, tag) {
    const which = chip[0], w = current[which].words[+chip.slice(1)], input = which === "q" ? door.el.ownText : door.el.ownSource;
    const text = which === "q" ? current.text : current.source;
    input.value = text.slice(0, w.start) + `${w.text}/${tag}` + text.slice(w.start + w.written.length);
    submit();
  }

  /** Enter or the button: the box's sentence becomes the spotlight's. */
  function submit() {
    const { el } = door;
    if (isReal()) return submitReal(el.ownText.value);
    say("");
    try {
      const S = compute(el.ownText.value, el.ownSource.value, el.ownCausal.checked);
      if (!S) return;
      const st = door.state();
      door.setOwnSentence(S, { q: st.s === "own" && st.q < S.queries.length ? st.q : 0 });
      reveal();
      drawChips();
    } catch (err) {
      say(`This sentence could not be computed (${err.message}).`);
    }
  }

  /** The sentence through the real model, shown once it is computed (a later learner action wins):
      on the head and word a link names (view: {h, q}), else where the spotlight opens it (the head
      finder's best head). */
  let asked = 0;
  function submitReal(text, view) {
    const mine = ++asked;
    if (text.length > LIMIT_CHARS) return Promise.resolve(say(`That is ${text.length.toLocaleString("en")} characters: try a shorter sentence.`));
    return real().then(R => R.sentence(text, M.maxWords)).then(S => {
      if (mine !== asked) return;
      if (!S) { // said why; a sentence still on screen is the one before
        if (door.state().s === "own") msg.textContent += " The spotlight still shows your previous sentence.";
        return;
      }
      // The model's attention alone: on the head finder's best head, on a word that shows it, unless a link names the view.
      door.setOwnSentence(S, view || Labs.code.spotlightMore.opening(S.real, Labs.data.ownRealModel.found));
      reveal();
    }, () => {});
  }

  /** A link or Back/Forward names an own sentence: the sentence, computed again (the spotlight then
      shows it), or null if it cannot be. */
  function restore(hash) {
    const p = new URLSearchParams(hash.replace(/^#/, "")), { el } = door;
    const text = p.get("t") || "", source = p.get("src") || "", causal = p.get("c") === "1";
    el.ownText.value = text;
    if (p.get("m") === "real" && !ui.ownReal.disabled) {
      ui.ownReal.checked = true;
      choose();
      const view = /^L\d+H\d+$/.test(p.get("h")) && /^\d+$/.test(p.get("q")) ? { h: p.get("h"), q: +p.get("q") } : null;
      real().then(R => R.loaded() ? submitReal(text, view) : ask(R, text, view), () => {});
      return null; // set through the door once computed
    }
    ui.ownDesigned.checked = true;
    choose();
    el.ownSource.value = source;
    el.ownCausal.checked = causal;
    syncCausal();
    try {
      const S = compute(text, source, causal);
      if (S) drawChips();
      return S;
    } catch (err) {
      say(`This sentence could not be computed (${err.message}).`);
      return null;
    }
  }

  /** The stage into view once the sentence is drawn: from the top of the spotlight if the stage then
      fits the screen, else from the stage's top (a long sentence on a phone). */
  function reveal() {
    const { stage } = door.el, root = stage.closest(".spotlight");
    requestAnimationFrame(() => {
      const r = stage.getBoundingClientRect(), from = root.getBoundingClientRect().top;
      if (r.top < 0 || r.bottom > innerHeight) (r.bottom - from <= innerHeight ? root : stage).scrollIntoView({ behavior: Labs.util.reducedMotion.matches ? "auto" : "smooth" });
    });
  }
  /** A message at the top of the stage, where the learner looks; the spotlight removes it when the sentence changes. */
  function notice(nodes) {
    door.el.stage.querySelector(".sl-notice")?.remove();
    door.el.stage.prepend(h("div", { class: "sl-notice", id: "sl-notice", role: "status" }, nodes));
  }

  /** A link to a sentence through the real model, before the model is loaded: the stage says so,
      where the learner looks, with a button that loads it (then Cancel), and the download's progress. */
  function ask(R, text, view) {
    const line = h("span"), go = h("button", { type: "button", class: "btn" }, ["Show it"]);
    const said = () => `This link shows “${text.length > 60 ? text.slice(0, 59) + "…" : text}” through the real model, ` +
      `which loads when you ask: ${R.size()} the first time.`;
    const watching = (loaded, total) => { line.textContent = `Loading the real model: ${(loaded / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB…`; };
    line.textContent = said();
    go.addEventListener("click", () => {
      if (go.textContent === "Cancel") return R.stop();
      go.textContent = "Cancel";
      R.watch(watching);
      submitReal(text, view).finally(() => {
        R.watch(watching, false);
        go.textContent = "Show it";
        if (door.state().s !== "own" || door.state().own !== new URLSearchParams({ t: text, m: "real" }).toString()) {
          line.textContent = msg.textContent || said(); // not shown: why, in the stage too
        }
      });
    });
    notice([line, " ", go]);
  }

  Labs.code.own = { start, submit, restore };
})();
