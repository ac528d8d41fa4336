/* Quick check (#quiz): radios check on choice, checkboxes on "Check", and the buttons of a lab
   kind's own question types (.quiz-choices [data-option], e.g. click-the-word) on a click.
   A question with data-match="any" is right when one correct option is chosen; else the chosen
   options must be exactly the correct ones.
   Answers are kept in localStorage under the quiz's data-storage-key as {"answers": {id: [option ids]}}.
   Without JavaScript each question still reads, with its answer in a <details>. */
(() => {
  "use strict";
  const quiz = document.getElementById("quiz");
  if (!quiz) return;
  const u = window.Labs.util, h = u.h, key = quiz.dataset.storageKey;
  const saved = u.store.get(key)?.answers;
  let answers = saved && typeof saved === "object" ? saved : {};
  const questions = u.all(".quiz-q", quiz), scoreEl = document.getElementById("quiz-score");

  const isChoice = q => !!q.querySelector(".quiz-choices");
  const inputsOf = q => u.all(isChoice(q) ? ".quiz-choices [data-option]" : "input", q);
  const idOf = input => input.dataset.option || input.value;
  const correctIds = q => inputsOf(q).filter(i => i.hasAttribute("data-correct")).map(idOf);
  const qid = q => q.id.slice(5); // fieldset#quiz-<question id>
  const sameSet = (a, b) => a.length === b.length && a.every(x => b.includes(x));
  const isRight = (q, chosen) => q.dataset.match === "any" ? chosen.length === 1 && correctIds(q).includes(chosen[0])
    : sameSet(chosen, correctIds(q));
  const textOf = (q, id) => inputsOf(q).find(i => idOf(i) === id)?.closest("label, button").textContent.trim();

  /**
   * Show a question answered with the option ids `chosen` — every option marked, the right answer
   * after a wrong try, the explanation open — or, with `chosen` null, as new.
   */
  function show(q, chosen) {
    const right = correctIds(q), ok = !!chosen && isRight(q, chosen), multiple = q.dataset.kind === "multiple";
    for (const input of inputsOf(q)) {
      const id = idOf(input), picked = !!chosen?.includes(id), good = right.includes(id);
      const why = q.querySelector(`.quiz-why[data-why-for="${CSS.escape(id)}"]`), holder = input.closest(".quiz-option") || input;
      const verdict = !chosen ? "" : picked ? (good ? "Right." : "Not this one.") : good ? (multiple ? "Missed — this one is true." : "The answer.") : "";
      holder.classList.toggle("is-right", !!chosen && good && (picked || !ok));
      holder.classList.toggle("is-wrong", picked && !good);
      if (!isChoice(q)) input.checked = picked;
      else if (chosen) input.setAttribute("aria-pressed", picked);
      else input.removeAttribute("aria-pressed");
      input.disabled = !!chosen;
      if (why) {
        why.hidden = !verdict;
        why.className = "quiz-why" + (good ? " is-right" : picked ? " is-wrong" : "");
        why.querySelector(".quiz-verdict").textContent = verdict;
      }
    }
    feedback(q, !chosen ? "" : ok ? "Correct!" : `Not quite. The answer: ${right.map(id => textOf(q, id)).join("; ")}.`, ok);
    const details = q.querySelector(".quiz-answer");
    details.hidden = !chosen;
    details.open = !!chosen;
    details.querySelector("summary").textContent = "Explanation";
    details.querySelector(".quiz-answer-key").hidden = true; // the status line and the marked options already say it
    q.check.hidden = !!chosen;
    q.retry.hidden = !chosen;
  }
  function feedback(q, text, ok) {
    const fb = q.querySelector(".quiz-feedback");
    fb.className = "quiz-feedback " + (ok ? "is-right" : "is-wrong");
    fb.textContent = text;
  }

  function score() {
    scoreEl.querySelector("[data-quiz-correct]").textContent = questions.filter(q => isRight(q, answers[qid(q)] || [])).length;
    scoreEl.hidden = false;
  }
  function answer(q, chosen) {
    if (chosen && !chosen.length) return feedback(q, q.dataset.kind === "multiple" ? "Tick at least one option, then Check." : "Pick an answer first.");
    if (chosen) answers[qid(q)] = chosen; else delete answers[qid(q)];
    u.store.set(key, { answers });
    show(q, chosen);
    score();
    (chosen ? q.retry : inputsOf(q)[0]).focus();
  }

  for (const q of questions) {
    for (const why of u.all(".quiz-why", q)) {
      const word = why.querySelector(".quiz-why-word"), verdict = h("span", { class: "quiz-verdict" });
      if (word) word.after(" ", verdict); else why.prepend(verdict, " ");
    }
    // Check (multiple choice only) and Try again exist only with JavaScript.
    q.check = h("button", { type: "button", class: "btn btn-primary", "data-quiz-check": "" }, ["Check"]);
    q.retry = h("button", { type: "button", class: "btn", "data-quiz-retry": "" }, ["Try again"]);
    q.querySelector(".quiz-feedback").after(h("div", { class: "quiz-actions" }, [q.dataset.kind === "multiple" ? q.check : null, q.retry]));
    q.addEventListener("change", ev => { if (ev.target.type === "radio") answer(q, [ev.target.value]); });
    q.addEventListener("click", ev => {
      const b = ev.target.closest(".quiz-choices [data-option]");
      if (b && !b.disabled) answer(q, [idOf(b)]);
    });
    q.check.addEventListener("click", () => answer(q, inputsOf(q).filter(i => i.checked).map(idOf)));
    q.retry.addEventListener("click", () => answer(q, null));
    const known = answers[qid(q)];
    show(q, Array.isArray(known) && known.length ? known.map(String) : null);
  }

  const reset = document.getElementById("quiz-reset");
  reset.parentNode.hidden = false;
  reset.addEventListener("click", () => {
    answers = {};
    u.store.set(key, { answers });
    for (const q of questions) show(q, null);
    score();
    inputsOf(questions[0])[0].focus();
  });
  score();
})();
