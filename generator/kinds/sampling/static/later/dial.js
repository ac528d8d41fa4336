/* The sampling dial's acts (#sampling): a setting changed, a draw, "Start over", the arithmetic
   and a link that sets the dial. static/20-sampling.js draws the dial as it opens and loads this
   file when the learner first reaches for the dial (never on a first visit), then hands each act
   to it in the order they came: Labs.code.samplingAct(view) returns the acts by name.
   Draws are reproducible: the same context, temperature, top-k, top-p and seed give the same
   words in the same order (mulberry32(seed), Labs.code.sampling), so any change of setting starts
   the draws over. */
(() => {
  "use strict";
  const Labs = window.Labs, u = Labs.util, S = Labs.code.sampling, { h } = u;
  const MANY = 20, HISTORY = 30;

  Labs.code.samplingAct = view => {
    const { data, el, state, draws, temps, ctxOf, count, tText, pText, nameOf, rowOf } = view;
    let rng = null;

    function restart() {
      rng = S.mulberry32(state.seed);
      draws.drawn = [];
      draws.tally = view.shownWords(ctxOf()).map(() => 0);
      el.history.replaceChildren();
    }
    function sample(n) {
      if (!view.hasRow()) return;
      const v = view.current(), C = v.C, got = [], { drawn, tally } = draws;
      if (v.pending) { view.say("The other tokens' chances are still loading; draw again in a moment."); return; }
      for (let i = 0; i < n; i++) {
        const j = S.draw(v.kept, rng());  // cut words weigh 0: never drawn
        drawn.push(j);
        tally[rowOf(j)]++;
        got.push(j);
      }
      el.history.append(...got.map(j => h("li", {}, [nameOf(j)])));
      while (el.history.children.length > HISTORY) el.history.firstElementChild.remove();
      view.paint();
      if (n === 1) view.say(`Draw ${drawn.length}: ${nameOf(got[0])}.`);
      else {
        const counts = view.shownWords(C).map((w, j) => [w, got.filter(x => rowOf(x) === j).length]).filter(x => x[1]);
        view.say(`${n} more draws: ` + counts.map(([w, c]) => `${w} ${c}`).join(", ") + `. ${drawn.length} in all.`);
      }
    }

    /* ---------- the arithmetic: each word's logit, divided by T, and its chance before any cut ---------- */
    view.built = C => el.math.tBodies[0].replaceChildren(...C.words.map((w, j) => h("tr", {}, [h("th", { scope: "row" }, [w]),
      h("td", {}, [u.fmt(C.logits[j], 2)]), h("td", {}, []), h("td", {}, [])])));
    view.painted = (v, T) => {
      el.mathT.textContent = `Logit ÷ ${tText(T)}`;
      [...el.math.tBodies[0].rows].forEach((tr, j) => {
        tr.cells[2].textContent = u.fmt(v.C.logits[j] / T, 2);
        tr.cells[3].textContent = (v.fullR[j] / data.parts * 100).toFixed(2) + "%";
      });
    };

    /* ---------- announcements and the URL ---------- */
    function describe() {
      if (!view.hasRow()) return "Loading the chances for this setting…";
      const v = view.current(), C = v.C, n = view.sizeOf(C);
      const shown = C.words.map((w, j) => [w, v.after[j], v.keptR[j]]).filter(x => x[2] > 0).slice(0, 4);
      return `T = ${tText(temps[state.t])}` + (state.k ? `, top-k ${state.k}` : "") + (state.p < 100 ? `, top-p ${pText(state.p)}` : "") +
        ": " + shown.map(([w, p, parts]) => `${w} ${view.pctText(p, parts, v.total)}`).join(", ") +
        (v.left > shown.length ? `, and ${count(v.left - shown.length)} more` : "") +
        (v.left !== null && v.left < n ? `. ${count(n - v.left)} cut.` : ".") + (draws.drawn.length ? "" : " Draws start over.");
    }
    function writeHash() {
      const q = `c=${encodeURIComponent(state.context)}&t=${tText(temps[state.t])}` + (state.k ? `&k=${state.k}` : "") +
        (state.p < 100 ? `&p=${state.p}` : "") + (state.seed !== data.seed ? `&seed=${state.seed}` : "");
      try { history.replaceState(null, "", "#" + q); } catch { /* file:// in some browsers */ }
    }

    function changed(rebuild) {
      if (rebuild) { view.fillTopK(); view.build(); }
      restart();
      view.syncControls();
      view.paint();
      writeHash();
      view.say(describe(), true);
      view.listeners.forEach(fn => fn());
    }
    view.changed = changed;
    // A model context's other tokens' parts (runs of equal values, in rank order: data.tail_src)
    // load on the first cut, so top-k and top-p cut the whole vocabulary exactly. A draw needs no
    // tail: the top tokens come first in the order draws walk.
    view.loadTail = () => {
      view.tailLoad ||= u.load(data.tail_src).then(() => { view.tails = Labs.data.samplingTail; restart(); view.paint(); view.say(describe()); })
        .catch(() => { view.tailLoad = null; el.summary.textContent = "The other tokens' chances did not load, so nothing is cut."; });
    };

    restart();
    view.built(ctxOf());
    view.paint();
    return {
      // A setting's act gets the value its control had when the learner set it (20-sampling.js).
      context(value) { state.context = value; changed(true); },
      temp(value) { state.t = +value; changed(false); },
      // A k chosen before a context changed may not be on the new context's list: fillTopK keeps
      // only one that is.
      topk(value) { state.k = +value; view.fillTopK(); changed(false); },
      topp(value) { state.p = +value; changed(false); },
      seed(value) {
        const s = Number(value), ok = Number.isInteger(s) && s >= 0 && s <= view.MAX_SEED;
        if (ok) state.seed = s;
        changed(false);
        if (!ok) view.say(`A seed is a whole number from 0 to ${view.MAX_SEED}, so the seed stays ${state.seed}.`);
      },
      sampleOne: () => sample(1),
      sampleMany: () => sample(MANY),
      reset() {
        restart();
        view.paint();
        view.say(`Draws cleared. The next draw starts again from seed ${state.seed}.`);
      },
      // Show the dial the address sets and put the keyboard on it, wherever on the page the link was.
      showHash() {
        if (!view.readHash()) return;
        changed(true);
        el.temp.scrollIntoView({ block: "center", behavior: u.reducedMotion.matches ? "auto" : "smooth" });
        el.temp.focus({ preventScroll: true });
      }
    };
  };
})();
