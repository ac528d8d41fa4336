/* SCORM 1.2 for a lab page packaged by `labs export scorm` (docs/lms.md), the one script the
   package adds to the page. It looks for the LMS's API object as the SCORM 1.2 run-time
   environment says (window.API in this window or a parent, then in the opener's), starts the
   session and reports the quiz as its code announces it (the "labs:quiz" event of
   js/later/quiz.js: {correct, answered, total}):
   - cmi.core.score.raw, .min, .max: the share of questions right at the first answer, 0–100;
   - cmi.core.lesson_status: "incomplete" from the launch until every question is answered, then
     "passed" or "failed" against the LMS's mastery score when it gives one, else "completed"
     (a lab without a quiz is "completed" at the launch);
   and ends the session when the page goes. Without an API the page works as it does anywhere. */
(() => {
  "use strict";
  function find(win) {
    for (let hops = 0; win && hops < 10; hops++) {
      try {
        if (win.API) return win.API;
      } catch { return null; } // a parent of another origin: no API is reachable through it
      if (win.parent === win) break;
      win = win.parent;
    }
    return null;
  }
  const api = find(window) || (window.opener ? find(window.opener) : null);
  if (!api || String(api.LMSInitialize("")) !== "true") return;
  const get = key => String(api.LMSGetValue(key) ?? ""), set = (key, value) => api.LMSSetValue(key, String(value));
  const hasQuiz = !!document.querySelector("#quick-check");
  if (!hasQuiz) set("cmi.core.lesson_status", "completed");
  else if (/^(not attempted|)$/.test(get("cmi.core.lesson_status"))) set("cmi.core.lesson_status", "incomplete");
  api.LMSCommit("");

  document.addEventListener("labs:quiz", ev => {
    const { correct, answered, total } = ev.detail;
    if (!total) return;
    const score = Math.round(100 * correct / total);
    set("cmi.core.score.min", 0);
    set("cmi.core.score.max", 100);
    set("cmi.core.score.raw", score);
    if (answered >= total) {
      const mastery = parseFloat(get("cmi.student_data.mastery_score"));
      set("cmi.core.lesson_status", isNaN(mastery) ? "completed" : score >= mastery ? "passed" : "failed");
    }
    api.LMSCommit("");
  });

  let finished = false;
  addEventListener("pagehide", () => {
    if (finished) return;
    finished = true;
    api.LMSFinish("");
  });
})();
