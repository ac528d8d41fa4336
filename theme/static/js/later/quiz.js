/* Quick check (#quiz), shared by every lab kind.
   Radios (single) and checkboxes (multiple) only select: the arrow keys move between radios as in
   the WAI-ARIA radio group, and nothing is graded until "Check" (or Enter on an option). A lab
   kind's own questions answer with buttons (.quiz-choices [data-option], e.g. click-the-word) on
   click, Enter or Space; an element with data-not-an-answer (the query word) explains itself.
   data-match="any" on a question: one correct option is enough; else exactly the correct ones.
   Scoring counts a question as right only when its FIRST answer was right; tries after a wrong
   answer are practice and say so. Kept in localStorage under the quiz's data-storage-key as
   {"first": {id: [option ids]}, "answers": {id: [option ids]}} (the latest answer shown). */
window.Labs.later.when("quiz", quiz => { // once the quiz is in the page (15-later.js)
  "use strict";
  const u = window.Labs.util, h = u.h, key = quiz.dataset.storageKey;
  const saved = u.store.get(key) || {};
  // Maps with no prototype: a question id such as "constructor" or "toString" is a key like any other.
  const valid = o => Object.assign(Object.create(null), o && typeof o === "object" && !Array.isArray(o) ? o : {});
  let answers = valid(saved.answers), first = valid(saved.first);
  for (const id in answers) if (!(id in first)) first[id] = answers[id]; // kept before first answers were
  const questions = u.all(".quiz-q", quiz), scoreEl = document.getElementById("quiz-score");

  const isChoice = q => !!q.querySelector(".quiz-choices");
  const inputsOf = q => u.all(isChoice(q) ? ".quiz-choices [data-option]" : "input", q);
  const idOf = input => input.dataset.option || input.value;
  const correctIds = q => inputsOf(q).filter(i => i.hasAttribute("data-correct")).map(idOf);
  const qid = q => q.id.slice(5); // fieldset#quiz-<question id>
  const sameSet = (a, b) => a.length === b.length && a.every(x => b.includes(x));
  const isRight = (q, chosen) => Array.isArray(chosen) && (q.dataset.match === "any"
    ? chosen.length === 1 && correctIds(q).includes(chosen[0]) : sameSet(chosen, correctIds(q)));
  const textOf = (q, id) => inputsOf(q).find(i => idOf(i) === id)?.closest("label, button").textContent.trim();
  const save = () => u.store.set(key, { first, answers });

  /**
   * Show a question answered with the option ids `chosen` — every option marked, the right answer
   * after a wrong try, the explanation open — or, with `chosen` null, as new.
   */
  function show(q, chosen) {
    const right = correctIds(q), ok = !!chosen && isRight(q, chosen), multiple = q.dataset.type === "multiple";
    const firstOk = isRight(q, first[qid(q)]);
    for (const input of inputsOf(q)) {
      const id = idOf(input), picked = !!chosen?.includes(id), good = right.includes(id);
      const why = q.querySelector(`.quiz-why[data-why-for="${CSS.escape(id)}"]`), holder = input.closest(".quiz-option") || input;
      const verdict = !chosen ? "" : picked ? (good ? "Right." : "Not this one.") : good && !ok ? (multiple ? "Missed — this one is true." : "The answer.") : "";
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
    const answer = right.map(id => textOf(q, id)).join(q.dataset.match === "any" ? " or " : "; ");
    feedback(q, !chosen ? "" : ok ? (firstOk ? "Correct!" : "Right on a later try — practice: the score counts first answers.")
      : `Not quite. The answer: ${answer}.`, ok);
    const details = q.querySelector(".quiz-answer");
    const said = details.querySelector(".quiz-explanation, .quiz-extra");
    details.hidden = !chosen || !said; // never an empty "Explanation"
    details.open = !!chosen && !!said;
    details.querySelector("summary").textContent = "Explanation";
    details.querySelector(".quiz-answer-key").hidden = true; // the status line and the marked options already say it
    if (q.check) q.check.hidden = !!chosen;
    q.retry.hidden = !chosen || ok; // "Try again" only after a wrong answer
  }
  function feedback(q, text, ok) {
    const fb = q.querySelector(".quiz-feedback");
    fb.className = "quiz-feedback " + (ok ? "is-right" : "is-wrong");
    fb.textContent = text;
  }

  /** The score shown, and announced to whatever listens for "labs:quiz" on the document (the
      SCORM package's script, docs/lms.md): {correct, answered, total}, first answers counted. */
  function score() {
    const correct = questions.filter(q => isRight(q, first[qid(q)])).length;
    scoreEl.querySelector("[data-quiz-correct]").textContent = correct;
    scoreEl.hidden = false;
    const answered = questions.filter(q => Array.isArray(first[qid(q)])).length;
    document.dispatchEvent(new CustomEvent("labs:quiz", { detail: { correct, answered, total: questions.length } }));
  }
  function answer(q, chosen) {
    if (chosen && !chosen.length) return feedback(q, q.dataset.type === "multiple" ? "Tick at least one option, then Check." : "Pick an answer, then Check.");
    const id = qid(q);
    if (chosen) {
      answers[id] = chosen;
      if (!(id in first)) first[id] = chosen;
    } else delete answers[id];
    save();
    show(q, chosen);
    score();
    if (!chosen) inputsOf(q)[0].focus();
    else (q.retry.hidden ? q.querySelector(".quiz-feedback") : q.retry).focus();
  }
  const checked = q => inputsOf(q).filter(i => i.checked).map(idOf);

  for (const q of questions) {
    for (const why of u.all(".quiz-why", q)) {
      const word = why.querySelector(".quiz-why-word"), verdict = h("span", { class: "quiz-verdict" });
      if (word) word.after(" ", verdict); else why.prepend(verdict, " ");
    }
    q.querySelector(".quiz-feedback").tabIndex = -1; // takes the focus after a right answer
    // Check (radios and checkboxes) and Try again exist only with JavaScript.
    q.check = isChoice(q) ? null : h("button", { type: "button", class: "btn btn-primary", "data-quiz-check": "" }, ["Check"]);
    q.retry = h("button", { type: "button", class: "btn", "data-quiz-retry": "" }, ["Try again"]);
    q.querySelector(".quiz-feedback").after(h("div", { class: "quiz-actions" }, [q.check, q.retry]));
    q.addEventListener("change", () => feedback(q, "", false)); // a new selection clears "Pick an answer"
    q.addEventListener("keydown", ev => {
      if (ev.key === "Enter" && ev.target.matches("input") && q.check && !q.check.hidden) {
        ev.preventDefault();
        q.check.click();
      }
    });
    q.addEventListener("click", ev => {
      const not = ev.target.closest("[data-not-an-answer]");
      if (not && !inputsOf(q)[0]?.disabled) return feedback(q, not.dataset.explain || "That is not one of the answers.", false);
      const b = ev.target.closest(".quiz-choices [data-option]");
      if (b && !b.disabled) answer(q, [idOf(b)]);
    });
    if (q.check) q.check.addEventListener("click", () => answer(q, checked(q)));
    q.retry.addEventListener("click", () => answer(q, null));
    const known = answers[qid(q)];
    show(q, Array.isArray(known) && known.length ? known.map(String) : null);
  }

  const reset = document.getElementById("quiz-reset");
  reset.parentNode.hidden = false;
  reset.addEventListener("click", () => {
    answers = Object.create(null);
    first = Object.create(null);
    save();
    for (const q of questions) show(q, null);
    score();
    inputsOf(questions[0])[0].focus();
  });
  score();
});
