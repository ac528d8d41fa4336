/* Quick check (#quiz): radios check on choice, checkboxes on "Check", word questions on a click.
   Answers are kept in localStorage under the quiz's data-storage-key as {"answers": {id: [option ids]}}. */
(function () {
  "use strict";
  var quiz = document.getElementById("quiz");
  if (!quiz) return;
  var u = window.Labs.util;
  var key = quiz.getAttribute("data-storage-key");
  var saved = u.store.get(key);
  var answers = saved && saved.answers && typeof saved.answers === "object" ? saved.answers : {};
  var questions = Array.prototype.slice.call(quiz.querySelectorAll(".quiz-q"));
  var scoreEl = document.getElementById("quiz-score");
  var resetRow = quiz.querySelector(".quiz-reset-row");

  function all(root, sel) { return Array.prototype.slice.call(root.querySelectorAll(sel)); }
  function inputsOf(q) { return all(q, q.getAttribute("data-kind") === "word" ? ".quiz-words button.word" : "input"); }
  function idOf(input) { return input.getAttribute("data-option") || input.value; }
  function optionText(q, id) {
    var input = inputsOf(q).filter(function (i) { return idOf(i) === id; })[0];
    if (!input) return id;
    if (input.tagName === "BUTTON") return input.textContent.trim();
    var label = q.querySelector('label[for="' + input.id + '"]');
    return label ? label.textContent.trim() : id;
  }
  function correctIds(q) {
    return inputsOf(q).filter(function (i) { return i.getAttribute("data-correct") === "true"; }).map(idOf);
  }
  function sameSet(a, b) {
    return a.length === b.length && a.every(function (x) { return b.indexOf(x) >= 0; });
  }
  function isRight(q) {
    var a = answers[q.getAttribute("data-question")];
    return !!a && sameSet(a, correctIds(q));
  }

  /** Show the verdict on every option, the right answer after a wrong try, and the explanation. */
  function showAnswer(q, chosen) {
    var kind = q.getAttribute("data-kind"), right = correctIds(q), ok = sameSet(chosen, right);
    inputsOf(q).forEach(function (input) {
      var id = idOf(input), picked = chosen.indexOf(id) >= 0, good = right.indexOf(id) >= 0;
      var holder = kind === "word" ? input : input.closest(".quiz-option");
      var why = q.querySelector('.quiz-why[data-why-for="' + id + '"]');
      var verdict = picked ? (good ? "Right." : "Not this one.") : (good ? (kind === "multiple" ? "Missed — this one is true." : "The answer.") : "");
      holder.classList.toggle("is-right", good && (picked || !ok));
      holder.classList.toggle("is-wrong", picked && !good);
      if (kind === "word") input.setAttribute("aria-pressed", String(picked));
      else input.checked = picked;
      input.disabled = true;
      if (why) {
        why.hidden = !verdict;
        why.classList.toggle("is-right", good);
        why.classList.toggle("is-wrong", picked && !good);
        var v = why.querySelector(".quiz-verdict");
        if (v) v.textContent = verdict;
      }
    });
    var fb = q.querySelector(".quiz-feedback");
    fb.className = "quiz-feedback " + (ok ? "is-right" : "is-wrong");
    fb.textContent = ok ? "Correct!" : "Not quite. The answer: " + right.map(function (id) { return optionText(q, id); }).join("; ") + ".";
    var details = q.querySelector(".quiz-answer");
    if (details) {
      details.hidden = false;
      details.open = true;
      details.querySelector("summary").textContent = "Explanation";
      var keyLine = details.querySelector(".quiz-answer-key");
      if (keyLine) keyLine.hidden = true; // the status line and the marked options already say it
    }
    var check = q.querySelector("[data-quiz-check]");
    if (check) check.hidden = true;
    q.querySelector("[data-quiz-retry]").hidden = false;
  }

  function clearAnswer(q) {
    var kind = q.getAttribute("data-kind");
    inputsOf(q).forEach(function (input) {
      var holder = kind === "word" ? input : input.closest(".quiz-option");
      holder.classList.remove("is-right", "is-wrong");
      input.disabled = false;
      if (kind === "word") input.removeAttribute("aria-pressed"); else input.checked = false;
    });
    all(q, ".quiz-why").forEach(function (w) { w.hidden = true; });
    var fb = q.querySelector(".quiz-feedback");
    fb.className = "quiz-feedback";
    fb.textContent = "";
    var details = q.querySelector(".quiz-answer");
    if (details) { details.hidden = true; details.open = false; }
    var check = q.querySelector("[data-quiz-check]");
    if (check) check.hidden = false;
    q.querySelector("[data-quiz-retry]").hidden = true;
  }

  function score() {
    var n = questions.filter(isRight).length;
    scoreEl.querySelector("[data-quiz-correct]").textContent = String(n);
    scoreEl.hidden = false;
  }
  function save() { u.store.set(key, { answers: answers }); }

  function answer(q, chosen) {
    var kind = q.getAttribute("data-kind");
    if (!chosen.length) {
      var fb = q.querySelector(".quiz-feedback");
      fb.className = "quiz-feedback is-wrong";
      fb.textContent = kind === "multiple" ? "Tick at least one option, then Check." : "Pick an answer first.";
      return;
    }
    answers[q.getAttribute("data-question")] = chosen;
    save();
    showAnswer(q, chosen);
    score();
    q.querySelector("[data-quiz-retry]").focus();
  }

  questions.forEach(function (q) {
    var kind = q.getAttribute("data-kind"), id = q.getAttribute("data-question");
    q.querySelector(".quiz-actions").hidden = false;
    clearAnswer(q);
    if (kind === "single") {
      q.addEventListener("change", function (ev) {
        if (ev.target.matches("input[type=radio]")) answer(q, [ev.target.value]);
      });
    } else if (kind === "word") {
      q.querySelector(".quiz-words").addEventListener("click", function (ev) {
        var b = ev.target.closest("button.word");
        if (b && !b.disabled) answer(q, [b.getAttribute("data-option")]);
      });
    }
    var check = q.querySelector("[data-quiz-check]");
    if (check) {
      check.addEventListener("click", function () {
        answer(q, inputsOf(q).filter(function (i) { return i.checked; }).map(idOf));
      });
    }
    q.querySelector("[data-quiz-retry]").addEventListener("click", function () {
      delete answers[id];
      save();
      clearAnswer(q);
      score();
      inputsOf(q)[0].focus();
    });
    var known = answers[id];
    if (Array.isArray(known) && known.length) showAnswer(q, known.map(String));
  });

  if (resetRow) {
    resetRow.hidden = false;
    document.getElementById("quiz-reset").addEventListener("click", function () {
      answers = {};
      u.store.remove(key);
      questions.forEach(clearAnswer);
      score();
      var first = questions[0] && inputsOf(questions[0])[0];
      if (first) first.focus();
    });
  }
  score();
})();
